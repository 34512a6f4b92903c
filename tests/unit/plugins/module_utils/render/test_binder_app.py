# -*- coding: utf-8 -*-
"""render/binder_app: the zipapp bytes are deterministic, runnable and refuse odd names."""

import io
import subprocess
import sys
import zipfile

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app

SOURCES = {"binder.py": b"def main():\n    print('bound')\n    return 3\n", "__init__.py": b""}


def test_layout_and_determinism():
    data = binder_app.render(SOURCES)
    assert data.startswith(b"#!/usr/bin/env python3\n")
    assert data == binder_app.render(dict(reversed(list(SOURCES.items()))))
    archive = zipfile.ZipFile(io.BytesIO(data.split(b"\n", 1)[1]))
    # each module with its unchecked hash-based .pyc (zipimport cannot cache what it compiles)
    assert archive.namelist() == ["__main__.py", "npuops_bind/__init__.py",
                                  "npuops_bind/__init__.pyc", "npuops_bind/binder.py",
                                  "npuops_bind/binder.pyc"]
    plain = zipfile.ZipFile(io.BytesIO(binder_app.render(SOURCES, bytecode=False).split(b"\n", 1)[1]))
    assert plain.namelist() == ["__main__.py", "npuops_bind/__init__.py", "npuops_bind/binder.py"]
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in archive.infolist())


def test_runs_as_a_zipapp(tmp_path):
    path = tmp_path / "bind"
    path.write_bytes(binder_app.render(SOURCES, python=sys.executable))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, timeout=30, check=False)
    assert proc.stdout == b"bound\n" and proc.returncode == 3


@pytest.mark.parametrize("python", ["python3", "/usr/bin/python3 -S", "/usr/bin/py;rm", ""])
def test_interpreter_must_be_a_plain_absolute_path(python):
    with pytest.raises(WrapperError, match="interpreter"):
        binder_app.render(SOURCES, python=python)


@pytest.mark.parametrize("name", ["../x.py", "Binder.py", "x.pyc", "a/b.py"])
def test_source_names_are_module_files(name):
    with pytest.raises(WrapperError, match="not a module file name"):
        binder_app.render({name: b""})
