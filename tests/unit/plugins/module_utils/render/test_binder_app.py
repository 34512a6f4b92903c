# -*- coding: utf-8 -*-
"""render/binder_app: the zipapp bytes are deterministic, runnable and refuse odd names; its
files are the closure of the binder's imports, shipped layers and the standard library only."""

import io
import subprocess
import sys
import zipfile

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app
from npuops_testing.binder import read_module

U = binder_app.UTILS
P = U.replace(".", "/")
SOURCES = {binder_app.ENTRY: b"def main():\n    print('bound')\n    return 3\n"}


def test_layout_and_determinism():
    data = binder_app.render(SOURCES)
    assert data.startswith(b"#!/usr/bin/env python3\n")
    two = dict(SOURCES, **{U + ".errors": b"X = 1\n"})
    assert binder_app.render(two) == binder_app.render(dict(reversed(list(two.items()))))
    archive = zipfile.ZipFile(io.BytesIO(data.split(b"\n", 1)[1]))
    packages = [
        "ansible_collections",
        "ansible_collections/npuops",
        "ansible_collections/npuops/fleet",
        "ansible_collections/npuops/fleet/plugins",
        P,
        P + "/standalone",
    ]
    # each module with its unchecked hash-based .pyc (zipimport cannot cache what it compiles)
    expected = ["__main__.py"] + sorted(
        [
            name + suffix
            for name in [p + "/__init__.py" for p in packages] + [P + "/standalone/binder.py"]
            for suffix in ("", "c")
        ]
    )
    assert archive.namelist() == expected
    plain = zipfile.ZipFile(io.BytesIO(binder_app.render(SOURCES, bytecode=False).split(b"\n", 1)[1]))
    assert plain.namelist() == [n for n in expected if not n.endswith(".pyc")]
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in archive.infolist())
    assert archive.read(P + "/__init__.py") == b""


_COMPILE_ALL = """
import glob, hashlib, sys
sys.path[:0] = %r
from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app
for path in sorted(glob.glob(%r)):
    with open(path, "rb") as handle:
        print(path, hashlib.sha1(binder_app.compiled(path, handle.read())).hexdigest())
"""


def test_bytecode_does_not_depend_on_the_rendering_process():
    """The same sources give the same .pyc bytes in a bare interpreter and in this one (which
    holds the collection, ansible and pytest): marshal's back-references, which follow refcounts,
    once made the module and the test render different binders."""
    import glob
    import hashlib
    import os
    import pathlib
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology  # noqa: F401
    from ansible_collections.npuops.fleet.plugins.modules import vllm_launch_wrapper  # noqa: F401

    here = os.path.dirname(os.path.dirname(os.path.abspath(binder_app.__file__)))
    pattern = os.path.join(here, "*", "*.py")
    collections = here
    for dummy in range(5):  # module_utils, plugins, fleet, npuops, ansible_collections
        collections = os.path.dirname(collections)
    bare = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _COMPILE_ALL % ([collections], pattern)],
        check=True,
        stdout=subprocess.PIPE,
        universal_newlines=True,
    ).stdout
    ours = "".join(
        "%s %s\n" % (path, hashlib.sha1(binder_app.compiled(path, pathlib.Path(path).read_bytes())).hexdigest())
        for path in sorted(glob.glob(pattern))
    )
    assert len(ours.splitlines()) > 50 and bare == ours


def test_runs_as_a_zipapp(tmp_path):
    path = tmp_path / "bind"
    path.write_bytes(binder_app.render(SOURCES, python=sys.executable))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, timeout=30, check=False)
    assert proc.stdout == b"bound\n" and proc.returncode == 3


@pytest.mark.parametrize("python", ["python3", "/usr/bin/python3 -S", "/usr/bin/py;rm", ""])
def test_interpreter_must_be_a_plain_absolute_path(python):
    with pytest.raises(WrapperError, match="interpreter"):
        binder_app.render(SOURCES, python=python)


@pytest.mark.parametrize("name", ["..x", "Binder", "a.b", U + ".Cpus.x", U + ".a.b.c"])
def test_source_names_are_module_utils_modules(name):
    with pytest.raises(WrapperError, match="not a module_utils module file"):
        binder_app.render(dict(SOURCES, **{name: b""}))


def test_closure_of_the_real_binder():
    """The binder's closure: all of standalone/ and exactly the lower-layer files it imports."""
    names = set(binder_app.closure(read_module))
    lower = set(n[len(U) + 1 :] for n in names if not n.startswith(U + ".standalone."))
    assert lower == {
        "errors",
        "cpus.cpulist",
        "cpus.cpuset",
        "cpus.nodemap",
        "host.command",
        "host.locks",
        "host.paths",
        "model.cpu_intruders",
        "model.vendors",
        "model.vllm_flags",
        "model.worker_start",
        "parse.npu_smi",
        "parse.pci",
        "parse.rocm_smi",
    }
    assert all(n.split(".")[0] in binder_app.SHIPPED_LAYERS for n in lower)


def _reader(extra):
    def read(name):
        return extra[name] if name in extra else read_module(name)

    return read


@pytest.mark.parametrize(
    "source,message",
    [
        # a layer above the binder's: plan/, render/, apply/ and the modules are never shipped
        ("from %s.plan import dispatch\n" % U, "does not ship"),
        ("from ..apply import fileops\n", "does not ship"),
        ("from %s.render.launch import check_name\n" % U, "does not ship"),
        ("from ansible_collections.npuops.fleet.plugins.modules import vllm_launch_wrapper\n", "does not ship"),
        ("from ansible.module_utils.basic import AnsibleModule\n", "not in the standard library"),
        ("import yaml\n", "not in the standard library"),
        ("def f():\n    import requests\n", "not in the standard library"),
        ("import importlib\nimportlib.import_module('json')\n", "computed import"),
    ],
)
def test_closure_refuses_what_cannot_ship(source, message):
    entry = {binder_app.ENTRY: b"from . import extra\n", U + ".standalone.extra": source.encode()}
    with pytest.raises(WrapperError, match=message):
        binder_app.closure(_reader(entry))


@pytest.mark.parametrize(
    "source,reached",
    [
        ("from %s.cpus import cpulist\n" % U, U + ".cpus.cpulist"),
        ("from ..parse.pci import normalise_bus_id\n", U + ".parse.pci"),
        ("from .. import errors\n", U + ".errors"),
        ("def f():\n    import json\n    from %s.model import vendors\n" % U, U + ".model.vendors"),
    ],
)
def test_closure_follows_every_legal_form(source, reached):
    entry = {binder_app.ENTRY: b"from . import extra\n", U + ".standalone.extra": source.encode()}
    assert reached in binder_app.closure(_reader(entry))
