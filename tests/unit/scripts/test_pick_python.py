# -*- coding: utf-8 -*-
"""scripts/lib/python.sh: the one rule ensure-venv.sh and real-vllm-setup.sh pick a Python with
(a version range each). Stand-in interpreters on PATH are links to this Python, so their names
say one version and their answer another: the version check, not the name, decides."""

import os
import subprocess
import sys

from npuops_testing import REPO

LIB = os.path.join(REPO, "scripts", "lib", "python.sh")
HERE = "%d.%d" % sys.version_info[:2]


def _pick(tmp_path, low, high, names, python=None):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        os.symlink(sys.executable, str(bin_dir / name))
    env = {"PATH": str(bin_dir), "PYTHON": python or ""}
    proc = subprocess.run(
        ["/bin/bash", "-c", '. "$0"; pick_python "$1" "$2"', LIB, low, high],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    return proc.returncode, proc.stdout.strip()


def test_the_first_name_in_range_whose_python_answers_in_range_wins(tmp_path):
    minor = sys.version_info[1]
    # python3.<minor-1> is a link to this Python: its name is in range, its version too
    rc, found = _pick(tmp_path, "3.%d" % (minor - 1), HERE, ["python3.%d" % (minor - 1), "python3"])
    assert (rc, found) == (0, str(tmp_path / "bin" / ("python3.%d" % (minor - 1))))


def test_a_python_outside_the_range_is_refused_whatever_its_name(tmp_path):
    minor = sys.version_info[1]
    names = ["python3.%d" % (minor + 1), "python3"]
    assert _pick(tmp_path, "3.%d" % (minor + 1), "3.%d" % (minor + 2), names) == (1, "")


def test_python_from_the_environment_comes_first(tmp_path):
    rc, found = _pick(tmp_path, HERE, HERE, ["python3"], python=sys.executable)
    assert (rc, found) == (0, sys.executable)
