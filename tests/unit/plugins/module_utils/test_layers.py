# -*- coding: utf-8 -*-
"""The house rules of plugins/, read from the source (ast), not from imports.

An import is every ``import x``/``from x import y``, absolute or relative (``from ..plan import
dispatch`` is resolved against the file's package), and every ``importlib.import_module("x")`` /
``__import__("x")`` with a literal name; a string import whose name is not a literal cannot be
checked and is refused as such.

- every module_utils file lives in a layer folder (only ``errors.py`` sits at the base), or in a
  layer folder of a feature package (``FEATURES``: ``kubelet/``, ``vllm_ascend/``), a feature
  that crosses layers kept together: ``module_utils/<feature>/<layer>/x.py`` has layer
  ``<layer>`` (a feature holds no ``errors``, ``standalone`` or deeper folders);
- a layer imports only from the layers below it (and ``errors``): cpus < host < parse < model <
  plan, softshare < render < apply; plan and softshare are one level and may not import each
  other's code. The rank is the layer's, whatever package holds it: a feature's plan file may
  import its own or the global parse/model/plan and the global cpus/host; a global plan file may
  import ``kubelet/model/``; nothing imports a higher layer, in a feature package or out of it;
- ``standalone/`` (the binder, shipped as a zipapp with the files it imports: render/binder_app)
  imports itself and the layers the zipapp ships - errors, cpus, host, parse, model - never
  plan/, softshare/, render/, apply/ or a feature package (not shipped); no other layer imports
  it;
- module_utils imports nothing from modules/, filter/, plugin_utils/ or doc_fragments/;
- ``modules/`` may import any module_utils layer, never plugin_utils/ (controller side),
  filter/ or another module;
- ``plugin_utils/`` may import module_utils and itself, never filter/ or modules/;
- ``filter/`` is a thin adapter: plugin_utils/ and module_utils, never another filter or a module;
- ``doc_fragments/`` import nothing from the collection;
- every exception class of module_utils is defined in ``errors.py`` and derives from
  ``NpuopsError`` (the binder's ``BindError`` too);
- a file under plugins/ over 800 lines is reported as a warning (split it where it has a real
  seam), and one over 1,200 lines fails: files are split at seams, not at a line count.
"""

import ast
import os
import warnings

import pytest

from npuops_testing import REPO

PLUGINS = os.path.join(REPO, "plugins")
# a long file is a hint, not a rule: split at a seam (a warning); two files in one (a failure)
LONG_FILE_WARN = 800
LONG_FILE_FAIL = 1200
MODULE_UTILS = os.path.join(PLUGINS, "module_utils")
ROOT = "ansible_collections.npuops.fleet.plugins"
RANK = {"errors": -1, "cpus": 0, "host": 1, "parse": 2, "model": 3, "plan": 4, "softshare": 4, "render": 5, "apply": 6}
LAYERS = sorted(RANK) + ["standalone"]
# feature packages: a feature that crosses layers, its layer folders inside (as amazon.aws' _elbv2/)
FEATURES = ("kubelet", "vllm_ascend")
FEATURE_LAYERS = tuple(layer for layer in sorted(RANK) if layer != "errors")
# the layers the binder zipapp ships beside standalone/ (render/binder_app.SHIPPED_LAYERS)
STANDALONE_MAY_IMPORT = ("errors", "cpus", "host", "parse", "model")
AREAS = ("module_utils", "modules", "filter", "plugin_utils", "doc_fragments")
STRING_IMPORTS = ("import_module", "__import__")


def _files(base=PLUGINS):
    out = []
    for dirpath, dirnames, files in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                out.append(os.path.relpath(os.path.join(dirpath, name), base).replace(os.sep, "/"))
    return out


def _utils_area(parts):
    """The area of a module_utils path (its parts below module_utils/, a file's or a dotted
    name's): ``module_utils/<layer>``, ``module_utils/<feature>/<layer>`` in a feature package, or
    ``module_utils/<feature>`` for a feature package's own top (which is no layer)."""
    if parts[0] in ("errors", "errors.py"):
        return "module_utils/errors"
    if parts[0] in FEATURES and len(parts) > 1 and not parts[1].endswith(".py"):
        return "module_utils/%s/%s" % (parts[0], parts[1])
    return "module_utils/" + parts[0]


def _area(rel):
    """The rule area of a file under plugins/: a module_utils area or the plugin folder."""
    parts = rel.split("/")
    if parts[0] == "module_utils" and len(parts) > 1:
        return _utils_area(parts[1:])
    return parts[0]


def layer_of(area):
    """The layer of a module_utils area (``module_utils/kubelet/plan`` -> ``plan``); a feature
    package's own top has none (None)."""
    parts = area.split("/")[1:]
    if parts[0] in FEATURES:
        return parts[1] if len(parts) > 1 else None
    return parts[0]


def misplaced(utils):
    """The module_utils files (paths below module_utils/) that sit in no layer folder."""
    stray = []
    for rel in utils:
        parts = rel.split("/")
        if len(parts) == 1:
            ok = rel in ("errors.py", "__init__.py")
        elif parts[0] in FEATURES:
            ok = (len(parts) == 2 and parts[1] == "__init__.py") or (len(parts) == 3 and parts[1] in FEATURE_LAYERS)
        else:
            ok = parts[0] in LAYERS and len(parts) == 2
        if not ok:
            stray.append(rel)
    return stray


def _package(rel):
    """The dotted package of a file under plugins/ (``x/__init__.py`` is package ``x``)."""
    parts = [ROOT] + rel[:-3].split("/")
    return ".".join(parts[:-1])


def _resolve(rel, module, level):
    if not level:
        return module or ""
    base = _package(rel).split(".")
    if level - 1 >= len(base):
        return "<beyond the top>"
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _string_import(node):
    """The name a call ``import_module(...)`` / ``__import__(...)`` imports; "" for another call,
    None when the name is not a literal."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name not in STRING_IMPORTS:
        return ""
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        target = node.args[0].value
        if not target.startswith("."):
            return target
        package = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else None
        if not isinstance(package, str):
            return None
        level = len(target) - len(target.lstrip("."))
        base = package.split(".")[: len(package.split(".")) - (level - 1)]
        return ".".join(base + ([target.lstrip(".")] if target.lstrip(".") else []))
    return None


def imports_of(rel, source):
    """(dotted name, line) of every import in ``source`` (a file at ``rel`` under plugins/)."""
    tree = ast.parse(source, rel)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _resolve(rel, node.module, node.level)
            found.extend((module + "." + alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Call):
            target = _string_import(node)
            if target is None:
                found.append(("<not a literal>", node.lineno))
            elif target:
                found.append((target, node.lineno))
    return found


def _target_area(name):
    """The area an imported name points at; None outside this collection."""
    if name.startswith("<"):
        return name
    if name == "ansible_collections" or name.startswith("ansible_collections."):
        if not (name + ".").startswith(ROOT + "."):
            return "<another collection>" if name.count(".") >= 2 else "<outside>"
        rest = name[len(ROOT) + 1 :].split(".")
        if not rest[0]:
            return "<outside>"
        if rest[0] == "module_utils":
            return _utils_area(rest[1:]) if len(rest) > 1 else "<outside>"
        return rest[0]
    return None


def _allowed(mine, target):
    if target.startswith("<"):
        return False
    if mine.startswith("module_utils/"):
        if not target.startswith("module_utils/"):
            return False
        layer, other = layer_of(mine), layer_of(target)
        if mine == "module_utils/standalone":
            # the zipapp ships the global lower layers only, no feature package
            return target == mine or target in ["module_utils/" + name for name in STANDALONE_MAY_IMPORT]
        if other == "standalone":
            return False
        if layer is None or other is None:
            return False
        if other == layer:
            return True
        return RANK.get(other, 99) < RANK.get(layer, -99)
    if mine == "modules":
        return target.startswith("module_utils/")
    if mine == "plugin_utils":
        return target.startswith("module_utils/") and target != "module_utils/standalone" or target == "plugin_utils"
    if mine == "filter":
        return (target.startswith("module_utils/") and target != "module_utils/standalone") or target == "plugin_utils"
    return False


def violations(rel, source):
    """The imports of the file at ``rel`` (under plugins/) that break the rules."""
    mine = _area(rel)
    bad = []
    for name, line in imports_of(rel, source):
        target = _target_area(name)
        if target is not None and not _allowed(mine, target):
            bad.append((name, line))
    return bad


def _read(rel):
    with open(os.path.join(PLUGINS, rel)) as handle:
        return handle.read()


def test_every_file_is_in_a_layer_folder():
    utils = [rel[len("module_utils/") :] for rel in _files() if rel.startswith("module_utils/")]
    assert misplaced(utils) == []
    unknown = sorted(set(rel.split("/")[0] for rel in utils if "/" in rel) - set(LAYERS) - set(FEATURES))
    assert unknown == []
    # every feature package is a package, with its layer folders (no empty name in FEATURES)
    for feature in FEATURES:
        assert "%s/__init__.py" % feature in utils
        layers = set(rel.split("/")[1] for rel in utils if rel.startswith(feature + "/") and rel.count("/") == 2)
        assert layers and all("%s/%s/__init__.py" % (feature, layer) in utils for layer in layers)


def test_feature_files_are_placed_and_classified():
    assert misplaced(["errors.py", "plan/x.py", "kubelet/__init__.py", "kubelet/plan/x.py"]) == []
    assert misplaced(
        ["x.py", "plan/deep/x.py", "kubelet/x.py", "kubelet/errors/x.py", "kubelet/standalone/x.py"]
        + ["kubelet/plan/deep/x.py", "other/plan/x.py"]
    ) == [
        "x.py",
        "plan/deep/x.py",
        "kubelet/x.py",
        "kubelet/errors/x.py",
        "kubelet/standalone/x.py",
        "kubelet/plan/deep/x.py",
        "other/plan/x.py",
    ]
    assert _area("module_utils/kubelet/plan/profile.py") == "module_utils/kubelet/plan"
    assert _area("module_utils/kubelet/__init__.py") == "module_utils/kubelet"
    assert _area("module_utils/plan/dispatch.py") == "module_utils/plan"
    assert _target_area(U + ".vllm_ascend.model.version") == "module_utils/vllm_ascend/model"
    assert _target_area(U + ".kubelet") == "module_utils/kubelet"
    assert layer_of("module_utils/kubelet/plan") == "plan"
    assert layer_of("module_utils/plan") == "plan"
    assert layer_of("module_utils/kubelet") is None
    assert sorted(set(rel.split("/")[0] for rel in _files() if "/" in rel)) == sorted(AREAS)


@pytest.mark.parametrize("rel", _files())
def test_every_plugin_file_imports_by_the_rules(rel):
    bad = violations(rel, _read(rel))
    assert bad == [], "%s (%s) imports against the rules: %s" % (rel, _area(rel), bad)


# The self-test: each rule flags a synthetic file that breaks it, and lets the legal form pass.
U = ROOT + ".module_utils"
SELF_TEST = [
    # (file under plugins/, source, flagged?)
    ("module_utils/model/x.py", "from ..plan import dispatch\n", True),
    ("module_utils/model/x.py", "from ...module_utils.plan import dispatch\n", True),
    ("module_utils/model/x.py", "from . import rules\n", False),
    ("module_utils/model/x.py", "from ..cpus import cpulist\n", False),
    ("module_utils/model/x.py", "from .. import errors\n", False),
    ("module_utils/model/x.py", "from %s.plan import dispatch\n" % U, True),
    ("module_utils/model/x.py", "import %s.render.launch\n" % U, True),
    ("module_utils/model/x.py", "import importlib\nimportlib.import_module('%s.plan.dispatch')\n" % U, True),
    ("module_utils/model/x.py", "from importlib import import_module\nimport_module('%s.apply.irq')\n" % U, True),
    ("module_utils/model/x.py", "import_module('..plan.dispatch', '%s.model')\n" % U, True),
    ("module_utils/model/x.py", "__import__('%s.softshare.scheduler')\n" % U, True),
    ("module_utils/model/x.py", "import importlib\nimportlib.import_module(NAME)\n", True),
    ("module_utils/model/x.py", "importlib.import_module('%s.parse.pci')\n" % U, False),
    ("module_utils/model/x.py", "import ansible_collections.other.coll.plugins.module_utils.x\n", True),
    ("module_utils/parse/x.py", "from %s.plan import dispatch\n" % U, True),
    ("module_utils/plan/x.py", "from %s.softshare import scheduler\n" % U, True),
    ("module_utils/softshare/x.py", "from %s.plan import gpu\n" % U, True),
    ("module_utils/host/x.py", "from %s.apply import fileops\n" % U, True),
    ("module_utils/render/x.py", "from %s.standalone import rules\n" % U, True),
    ("module_utils/plan/x.py", "from %s.model import rules\n" % U, False),
    ("module_utils/apply/x.py", "from %s.host import paths\n" % U, False),
    ("module_utils/cpus/x.py", "from %s import errors\n" % U, False),
    ("module_utils/standalone/x.py", "from . import rules\n", False),
    ("module_utils/standalone/x.py", "from ..cpus import cpulist\n", False),
    ("module_utils/standalone/x.py", "from %s.cpus import cpulist\n" % U, False),
    ("module_utils/standalone/x.py", "from %s.parse.pci import normalise_bus_id\n" % U, False),
    ("module_utils/standalone/x.py", "from %s.host import command, paths\n" % U, False),
    ("module_utils/standalone/x.py", "from %s.model import vendors\n" % U, False),
    ("module_utils/standalone/x.py", "from %s import errors\n" % U, False),
    ("module_utils/standalone/x.py", "def f():\n    from ..model import vendors\n", False),
    ("module_utils/standalone/x.py", "from %s.plan import dispatch\n" % U, True),
    ("module_utils/standalone/x.py", "from ..softshare import scheduler\n", True),
    ("module_utils/standalone/x.py", "from %s.render import binder_app\n" % U, True),
    ("module_utils/standalone/x.py", "from ..apply.irq import apply_targets\n", True),
    ("module_utils/standalone/x.py", "def f():\n    from ..apply import fileops\n", True),
    ("module_utils/standalone/x.py", "from %s.modules import vllm_launch_wrapper\n" % ROOT, True),
    ("module_utils/standalone/x.py", "from %s.plugin_utils import rails\n" % ROOT, True),
    ("module_utils/model/x.py", "from %s.standalone import rules\n" % U, True),
    ("module_utils/apply/x.py", "from ..standalone import irqs\n", True),
    ("module_utils/apply/x.py", "from %s.plugin_utils.report import analysis\n" % ROOT, True),
    ("module_utils/render/x.py", "from ...filter import report\n", True),
    ("module_utils/apply/x.py", "from %s.modules import npu_cpu_plan\n" % ROOT, True),
    ("modules/x.py", "from %s.apply import module_runner\n" % U, False),
    ("modules/x.py", "from %s.standalone import binder\n" % U, False),
    ("modules/x.py", "from %s.plugin_utils.report import analysis\n" % ROOT, True),
    ("modules/x.py", "from %s.modules import npu_cpu_plan\n" % ROOT, True),
    ("modules/x.py", "from ..filter import report\n", True),
    ("modules/x.py", "from ansible.module_utils.basic import AnsibleModule\n", False),
    ("plugin_utils/report/x.py", "from .schema import as_dict\n", False),
    ("plugin_utils/report/x.py", "from %s.model import rules\n" % U, False),
    ("plugin_utils/report/x.py", "from %s.filter import report\n" % ROOT, True),
    ("plugin_utils/report/x.py", "from ...modules import npu_cpu_plan\n", True),
    ("plugin_utils/x.py", "importlib.import_module('%s.filter.rails')\n" % ROOT, True),
    ("filter/x.py", "from %s.plugin_utils import rails\n" % ROOT, False),
    ("filter/x.py", "from %s.filter import rails\n" % ROOT, True),
    ("filter/x.py", "from . import softshare\n", True),
    ("filter/x.py", "from %s.modules import npu_cpu_plan\n" % ROOT, True),
    ("filter/x.py", "from %s.softshare import scheduler\n" % U, False),
    ("doc_fragments/x.py", "from %s import errors\n" % U, True),
    ("module_utils/model/x.py", "from ...... import x\n", True),
    # feature packages: the rank is the layer's, inside a package and across packages
    ("module_utils/kubelet/plan/x.py", "from ..model import options\n", False),
    ("module_utils/kubelet/plan/x.py", "from . import checks\n", False),
    ("module_utils/kubelet/plan/x.py", "from ...model import rules\n", False),
    ("module_utils/kubelet/plan/x.py", "from %s.kubelet.parse import files\n" % U, False),
    ("module_utils/kubelet/plan/x.py", "from %s.cpus import cpulist\n" % U, False),
    ("module_utils/kubelet/plan/x.py", "from %s.plan import roles\n" % U, False),
    ("module_utils/kubelet/plan/x.py", "from %s import errors\n" % U, False),
    ("module_utils/kubelet/plan/x.py", "from ..apply import config\n", True),
    ("module_utils/kubelet/plan/x.py", "from %s.kubelet.apply import config\n" % U, True),
    ("module_utils/kubelet/plan/x.py", "from %s.render import launch\n" % U, True),
    ("module_utils/kubelet/plan/x.py", "from %s.softshare import scheduler\n" % U, True),
    ("module_utils/kubelet/plan/x.py", "from %s.standalone import irqs\n" % U, True),
    ("module_utils/kubelet/plan/x.py", "from %s import kubelet\n" % U, True),
    ("module_utils/kubelet/model/x.py", "from ..plan import profile\n", True),
    ("module_utils/kubelet/model/x.py", "from %s.plan import dispatch\n" % U, True),
    ("module_utils/kubelet/parse/x.py", "from %s.vllm_ascend.model import version\n" % U, True),
    ("module_utils/vllm_ascend/plan/x.py", "from %s.kubelet.model import options\n" % U, False),
    ("module_utils/plan/x.py", "from %s.kubelet.model import options\n" % U, False),
    ("module_utils/plan/x.py", "from %s.vllm_ascend.plan import predict\n" % U, False),
    ("module_utils/model/x.py", "from %s.kubelet.plan import profile\n" % U, True),
    ("module_utils/parse/x.py", "import %s.kubelet.model.facts\n" % U, True),
    ("module_utils/apply/x.py", "from %s.kubelet.plan import state\n" % U, False),
    ("module_utils/softshare/x.py", "from %s.vllm_ascend.plan import allocator\n" % U, True),
    ("module_utils/standalone/x.py", "from %s.kubelet.model import facts\n" % U, True),
    ("module_utils/standalone/x.py", "from %s.vllm_ascend.model import version\n" % U, True),
    ("modules/x.py", "from %s.kubelet.plan import profile\n" % U, False),
    ("plugin_utils/report/x.py", "from %s.kubelet.plan import whatif\n" % U, False),
    ("filter/x.py", "from %s.vllm_ascend.plan import releases\n" % U, False),
]


@pytest.mark.parametrize("rel,source,flagged", SELF_TEST)
def test_the_rule_check_itself(rel, source, flagged):
    assert bool(violations(rel, source)) is flagged, (rel, source, violations(rel, source))


def test_relative_imports_resolve_against_the_package():
    assert imports_of("module_utils/model/x.py", "from ..plan import dispatch\n") == [(U + ".plan.dispatch", 1)]
    assert imports_of("module_utils/model/__init__.py", "from . import rules\n") == [(U + ".model.rules", 1)]
    assert imports_of("filter/x.py", "from ..plugin_utils.report import analysis\n") == [
        (ROOT + ".plugin_utils.report.analysis", 1)
    ]
    assert imports_of("module_utils/model/x.py", "import_module('..plan.gpu', '%s.model')\n" % U) == [
        (U + ".plan.gpu", 1)
    ]
    assert imports_of("module_utils/model/x.py", "import_module('.x')\n") == [("<not a literal>", 1)]


def test_exceptions_live_in_errors_and_share_one_base():
    from ansible_collections.npuops.fleet.plugins.module_utils import errors

    outside = []
    for rel in _files(MODULE_UTILS):
        tree = ast.parse(_read("module_utils/" + rel), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error") and rel != "errors.py":
                outside.append("%s:%s" % (rel, node.name))
    assert outside == []
    classes = [
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, Exception) and obj.__module__ == errors.__name__
    ]
    assert len(classes) >= 9
    assert all(issubclass(cls, errors.NpuopsError) for cls in classes)


def test_plugin_file_lengths():
    lengths = [(rel, _read(rel).count("\n")) for rel in _files()]
    long_files = [(rel, n) for rel, n in lengths if n > LONG_FILE_WARN]
    if long_files:
        warnings.warn(
            "plugins/ files over %d lines (look for a seam): %s"
            % (LONG_FILE_WARN, ", ".join("%s (%d)" % item for item in long_files))
        )
    assert [(rel, n) for rel, n in lengths if n > LONG_FILE_FAIL] == []
