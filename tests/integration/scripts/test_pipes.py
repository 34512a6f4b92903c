# -*- coding: utf-8 -*-
"""The first output of `make demo` is not a traceback (scripts/ensure-venv.sh), and no script
pipes a command into a reader that stops early.

`ansible --version | head -1` let head close the pipe before ansible had written everything:
ansible-core then printed "Unexpected Exception, this is probably a bug: Broken pipe" as the
first thing a new user saw. Under `set -o pipefail` the same shape (`| head`, `| grep -q`,
`| grep -m N`) also turns a match into a failure whenever the writer is still writing."""

import os
import re
import shutil
import stat
import subprocess
import sys

from npuops_testing import REPO

SCRIPTS = os.path.join(REPO, "scripts")
EARLY_READERS = re.compile(r"(?<!\|)\|(?!\|)\s*(head\b|grep\s+(-\w*[qm]\w*|--quiet|--max-count))")

# A stand-in `ansible` that writes far more than a pipe holds and, like ansible-core, prints
# a traceback when its reader goes away.
FAKE_ANSIBLE = """#!%s
import sys
try:
    for i in range(200000):
        sys.stdout.write("ansible [core 2.19.0] line %%d\\n" %% i)
    sys.stdout.flush()
except BrokenPipeError:
    sys.stderr.write("ERROR! Unexpected Exception, this is probably a bug: Broken pipe\\n")
    sys.exit(250)
"""
# A stand-in venv python: `-m pip install` does nothing, everything else is the real Python.
FAKE_PYTHON = """#!/bin/bash
[[ $1 == -m ]] && exit 0
exec %s "$@"
"""


def _exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_ensure_venv_reports_the_version_without_a_broken_pipe(tmp_path):
    repo = tmp_path / "repo"
    (repo / "scripts" / "lib").mkdir(parents=True)
    shutil.copy(os.path.join(SCRIPTS, "ensure-venv.sh"), str(repo / "scripts"))
    shutil.copy(os.path.join(SCRIPTS, "lib", "python.sh"), str(repo / "scripts" / "lib"))
    (repo / "requirements-demo.txt").write_text("ansible-core\n")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    _exe(venv / "bin" / "python", FAKE_PYTHON % sys.executable)
    _exe(venv / "bin" / "ansible", FAKE_ANSIBLE % sys.executable)
    env = dict(os.environ, VENV=str(venv), REQUIREMENTS="requirements-demo.txt")
    for run in range(3):  # the race went wrong 3 runs in 4
        proc = subprocess.run(
            ["bash", str(repo / "scripts" / "ensure-venv.sh")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "", proc.stderr
        assert "Broken pipe" not in proc.stdout
        ready = [line for line in proc.stdout.splitlines() if line.startswith("venv: ready:")]
        assert re.match(r"venv: ready: ansible-core \d+\.\d+\.\d+", ready[0]), proc.stdout
        (venv / ".requirements.sha256").unlink()  # installs (and reports) again


def test_no_script_pipes_into_a_reader_that_stops_early():
    found = []
    for dirpath, dummy, files in os.walk(SCRIPTS):
        for name in files:
            path = os.path.join(dirpath, name)
            if not name.endswith(".sh") and name != "Makefile":
                continue
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if not line.lstrip().startswith("#") and EARLY_READERS.search(line):
                        found.append("%s:%d: %s" % (os.path.relpath(path, REPO), number, line.strip()))
    with open(os.path.join(REPO, "Makefile"), encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if EARLY_READERS.search(line):
                found.append("Makefile:%d: %s" % (number, line.strip()))
    assert found == []
