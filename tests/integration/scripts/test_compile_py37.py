# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/compile-py37.sh: host-side code compiles on Python 3.7 (the oldest target the
collection supports), and the check really rejects newer syntax."""

import os
import subprocess

import pytest

from npuops_testing import REPO

COMPILE_PY37 = os.path.join(REPO, "scripts", "compile-py37.sh")


@pytest.mark.slow
def test_host_side_code_compiles_on_python37(tmp_path):
    proc = subprocess.run(
        ["bash", COMPILE_PY37],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        check=False,
    )
    if "SKIPPED" in proc.stdout:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 0, proc.stdout
    assert " 0 failed" in proc.stdout


@pytest.mark.slow
def test_python37_compile_catches_py38_syntax(tmp_path):
    # Guard against a checker that always passes: walrus (3.8+) must be rejected.
    bad = tmp_path / "plugins" / "modules" / "walrus.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("if (n := 1):\n    pass\n")
    (tmp_path / "plugins" / "module_utils").mkdir()
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "compile-py37.sh"
    with open(COMPILE_PY37) as handle:
        script.write_text(handle.read())
    proc = subprocess.run(
        ["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False
    )
    if "SKIPPED" in proc.stdout:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 1, proc.stdout
    assert "walrus.py" in proc.stdout
