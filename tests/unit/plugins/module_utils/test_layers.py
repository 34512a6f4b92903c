# -*- coding: utf-8 -*-
"""The house rules of plugins/module_utils, read from the source (ast), not from imports.

- every file lives in a layer folder (only ``errors.py`` sits at the base);
- a layer imports only from the layers below it (and ``errors``): cpus < host < parse < model <
  plan, softshare < render < apply; plan and softshare are one level and may not import each
  other's code except where a rule below allows it;
- ``standalone/`` imports nothing from the collection (it runs on hosts without it);
- every exception class of module_utils is defined in ``errors.py`` and derives from
  ``NpuopsError`` (the binder's ``BindError`` in standalone/rules.py is the one exception);
- no file under plugins/ is over 500 lines.
"""

import ast
import os

import pytest

from npuops_testing import REPO

MODULE_UTILS = os.path.join(REPO, "plugins", "module_utils")
PREFIX = "ansible_collections.npuops.fleet.plugins.module_utils"
RANK = {"errors": -1, "cpus": 0, "host": 1, "parse": 2, "model": 3, "plan": 4, "softshare": 4,
        "render": 5, "apply": 6}
LAYERS = sorted(RANK) + ["standalone"]


def _files():
    out = []
    for dirpath, dirnames, files in os.walk(MODULE_UTILS):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                out.append(os.path.relpath(os.path.join(dirpath, name), MODULE_UTILS))
    return out


def _layer(rel):
    head = rel.split(os.sep)[0]
    return "errors" if head == "errors.py" else head


def _imported_layers(rel, base=MODULE_UTILS):
    """(layer, line) of every collection import in a file (``<outside>``: not module_utils)."""
    with open(os.path.join(base, rel)) as handle:
        tree = ast.parse(handle.read(), rel)
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module + "." + alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith("ansible_collections.npuops.fleet.plugins."):
                rest = name[len(PREFIX) + 1:] if name.startswith(PREFIX + ".") else "<outside>"
                found.append((rest.split(".")[0], node.lineno))
    return found


def test_every_file_is_in_a_layer_folder():
    stray = [rel for rel in _files() if os.sep not in rel and rel not in ("errors.py", "__init__.py")]
    assert stray == []
    unknown = sorted(set(_layer(rel) for rel in _files()) - set(LAYERS) - {"__init__.py"})
    assert unknown == []


def _violations(mine, imports):
    """The imports of a file in layer ``mine`` that do not point downwards."""
    bad = []
    for layer, line in imports:
        if layer == mine:
            continue
        if layer in ("<outside>", "standalone") or RANK.get(layer, 99) >= RANK[mine]:
            bad.append((layer, line))
    return bad


@pytest.mark.parametrize("rel", [r for r in _files() if _layer(r) in RANK])
def test_layers_import_only_downwards(rel):
    bad = _violations(_layer(rel), _imported_layers(rel))
    assert bad == [], "%s (layer %s) imports upward or sideways: %s" % (rel, _layer(rel), bad)


@pytest.mark.parametrize("rel", [r for r in _files() if _layer(r) == "standalone"])
def test_standalone_imports_nothing_from_the_collection(rel):
    assert _imported_layers(rel) == []


@pytest.mark.parametrize("layer,target,allowed", [
    ("parse", "plan", False), ("model", "softshare", False), ("plan", "softshare", False),
    ("softshare", "plan", False), ("host", "apply", False), ("render", "standalone", False),
    ("plan", "model", True), ("apply", "host", True), ("parse", "cpus", True),
])
def test_the_direction_check_itself(tmp_path, layer, target, allowed):
    folder = tmp_path / layer
    folder.mkdir()
    (folder / "probe.py").write_text("from %s.%s import something\n" % (PREFIX, target))
    bad = _violations(layer, _imported_layers(os.path.join(layer, "probe.py"), str(tmp_path)))
    assert (bad == []) is allowed


def test_exceptions_live_in_errors_and_share_one_base():
    from ansible_collections.npuops.fleet.plugins.module_utils import errors
    outside = []
    for rel in _files():
        with open(os.path.join(MODULE_UTILS, rel)) as handle:
            tree = ast.parse(handle.read(), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error") and rel != "errors.py":
                outside.append("%s:%s" % (rel, node.name))
    assert outside == ["standalone%srules.py:BindError" % os.sep]
    classes = [obj for obj in vars(errors).values()
               if isinstance(obj, type) and issubclass(obj, Exception) and obj.__module__ == errors.__name__]
    assert len(classes) >= 9
    assert all(issubclass(cls, errors.NpuopsError) for cls in classes)


def test_no_plugin_file_over_500_lines():
    long_files = []
    for dirpath, dirnames, files in os.walk(os.path.join(REPO, "plugins")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                with open(path) as handle:
                    count = sum(1 for _line in handle)
                if count > 500:
                    long_files.append((os.path.relpath(path, REPO), count))
    assert long_files == []
