# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The binder as one executable file: a Python zipapp (``#!<python>`` + a zip holding a
``__main__.py`` and the collection's own module files the binder runs, each at its package
path: ``ansible_collections/npuops/fleet/plugins/module_utils/standalone/binder.py``,
``.../cpus/cpulist.py``, ...; every package on the way an empty ``__init__.py``), so the
several files of the binder ship and run as one program on a host without the collection.

Which files: ``closure`` follows the imports of ``standalone/binder.py`` through every file it
reaches (relative and absolute, module level and inside functions), so one source ships and
nothing is forgotten or extra. A file may import the standard library and the layers the
binder may use (``SHIPPED_LAYERS``: errors, cpus, host, parse, model, standalone); anything
else (plan/, render/, apply/, ansible, a third-party package, a computed import) is refused.

The zip is built byte-for-byte the same from the same sources (stored, fixed timestamps and
modes, sorted names), so installing it twice changes nothing.

Beside each module it holds that module compiled by the interpreter rendering it, as an
unchecked hash-based ``.pyc`` (PEP 552): zipimport cannot cache what it compiles, so without
them every run of the binder compiles its own source again, the largest part of what a
reconcile run costs. A binder run by another Python version finds a foreign magic number and
falls back to the source.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import importlib.util
import io
import marshal
import re
import sys
import zipfile

from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError

UTILS = "ansible_collections.npuops.fleet.plugins.module_utils"
ENTRY = UTILS + ".standalone.binder"
# what the binder may import of the collection: the layers below plan/ and itself
SHIPPED_LAYERS = ("errors", "cpus", "host", "parse", "model", "standalone")
MAIN = ("from %s import main\n\nraise SystemExit(main())\n" % ENTRY).encode("ascii")
_PYTHON_RE = re.compile(r"^/[A-Za-z0-9_./+-]+\Z")
_PATH_RE = re.compile(r"^%s/(?:[a-z_][a-z0-9_]*/)?[a-z_][a-z0-9_]*\.py\Z" % re.escape(UTILS.replace(".", "/")))
_STRING_IMPORTS = ("import_module", "__import__")
MARSHAL_VERSION = 2


def _entry(name, data):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_STORED
    return info, data


def compiled(name, data):
    """An unchecked hash-based .pyc of ``data`` (the bytes of the file at archive path
    ``name``)."""
    code = compile(data, name, "exec", dont_inherit=True)
    # marshal format 2: formats 3 and later mark an object for back-reference when its
    # refcount is above 1, which depends on what else the rendering process holds (interned
    # names other modules use), so the same source gave different bytes in two processes and
    # a re-run would rewrite the binder; format 2 writes no references
    return (
        importlib.util.MAGIC_NUMBER
        + b"\x01\x00\x00\x00"
        + importlib.util.source_hash(data)
        + marshal.dumps(code, MARSHAL_VERSION)
    )


def is_package(name):
    """module_utils and its layer folders are packages; every other name is a module."""
    return name == UTILS or (
        name.startswith(UTILS + ".") and name.count(".") == UTILS.count(".") + 1 and name.rsplit(".", 1)[1] != "errors"
    )


def _resolve(module, node):
    if not node.level:
        return node.module or ""
    package = module if is_package(module) else module.rsplit(".", 1)[0]
    base = package.split(".")
    if node.level - 1 >= len(base):
        raise WrapperError("binder source %s: relative import beyond the top" % module)
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module, data):
    """The dotted names of the modules ``data`` (the source of ``module``) imports: for ``from
    P import x``, ``P.x`` when P is a package, else ``P``."""
    try:
        tree = ast.parse(data, module)
    except (SyntaxError, ValueError) as err:
        raise WrapperError("binder source %s does not compile: %s" % (module, err))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            if base == "__future__":
                continue
            if is_package(base):
                found.extend(base + "." + alias.name for alias in node.names)
            else:
                found.append(base)
        elif isinstance(node, ast.Call):
            func = node.func
            if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in _STRING_IMPORTS:
                raise WrapperError("binder source %s: a computed import cannot be shipped" % module)
    return found


def _stdlib(name):
    top = name.split(".", 1)[0]
    names = getattr(sys, "stdlib_module_names", None)  # Python 3.10+; older: not checked
    return top in sys.builtin_module_names or names is None or top in names


def check_import(module, name):
    """WrapperError unless ``module`` may import ``name`` in the zipapp: the standard library
    or a shipped layer of module_utils."""
    if name == "ansible_collections" or name.startswith("ansible_collections."):
        layer = name[len(UTILS) + 1 :].split(".", 1)[0] if name.startswith(UTILS + ".") else None
        if layer not in SHIPPED_LAYERS:
            raise WrapperError(
                "binder source %s imports %s, which the binder does not ship "
                "(it may import %s)" % (module, name, ", ".join(SHIPPED_LAYERS))
            )
        return True
    if not _stdlib(name):
        raise WrapperError("binder source %s imports %s, which is not in the standard library" % (module, name))
    return False


def closure(read, entry=ENTRY):
    """{dotted module name: source bytes} of ``entry`` and every collection module it reaches
    through its imports; ``read(name)`` gives the source of one module."""
    found = {}
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found[name] = read(name)
        for target in imports(name, found[name]):
            if check_import(name, target) and not is_package(target):
                todo.append(target)
    return found


def reader(modules):
    """``read(name)`` for ``closure``: the source bytes of module ``name`` as its loader holds
    it (a file, or AnsiballZ's zip), only for one of ``modules`` (what a module imports is
    what AnsiballZ ships; another would be missing on the host)."""
    by_name = dict((module.__name__, module) for module in modules)

    def read(name):
        spec = getattr(by_name.get(name), "__spec__", None)
        if spec is None or not hasattr(spec.loader, "get_data"):
            raise WrapperError(
                "binder source %s is not among the modules the module imports: it would be missing on the host" % name
            )
        return spec.loader.get_data(spec.origin)

    return read


def archive_sources(modules):
    """{archive path: bytes} of ``modules`` ({dotted name: source}) and an empty
    ``__init__.py`` for every package on their way."""
    sources = {}
    for name, data in modules.items():
        parts = name.split(".")
        sources["/".join(parts) + ".py"] = data
        for depth in range(1, len(parts)):
            sources.setdefault("/".join(parts[:depth]) + "/__init__.py", b"")
    return sources


def render(sources, python="/usr/bin/env python3", bytecode=True):
    """Bytes of the zipapp from ``sources`` ({dotted module name: bytes}, ``closure``'s
    result), with their ``.pyc`` unless ``bytecode`` is False."""
    if python != "/usr/bin/env python3" and not _PYTHON_RE.match(python or ""):
        raise WrapperError("binder interpreter %r is not a plain absolute path" % (python,))
    if ENTRY not in sources:
        raise WrapperError("binder sources lack %s" % ENTRY)
    entries = [_entry("__main__.py", MAIN)]
    files = archive_sources(sources)
    for path in sorted(files):
        if not _PATH_RE.match(path) and not (
            path.endswith("/__init__.py") and (UTILS.replace(".", "/") + "/").startswith(path[:-11])
        ):
            raise WrapperError("binder source %r is not a module_utils module file" % (path,))
        entries.append(_entry(path, files[path]))
        if bytecode:
            try:
                entries.append(_entry(path + "c", compiled(path, files[path])))
            except (SyntaxError, ValueError) as err:
                raise WrapperError("binder source %s does not compile: %s" % (path, err))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return ("#!%s\n" % python).encode("utf-8") + buffer.getvalue()
