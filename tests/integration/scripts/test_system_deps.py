# -*- coding: utf-8 -*-
"""System packages per make target (scripts/install-system-deps.sh, Makefile): `make demo`
installs none (python3-venv aside, where the system Python lacks ensurepip); `make test` and
`make molecule` install what they use. apt-get and dpkg-query are stand-ins on PATH that say
nothing is installed and record what would be installed: nothing on this machine changes."""

import os
import shutil
import stat
import subprocess

import pytest

from npuops_testing import REPO

SCRIPT = os.path.join(REPO, "scripts", "install-system-deps.sh")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _dry_run(target):
    proc = subprocess.run(
        ["make", "-n", target], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout
    return [
        line.split("install-system-deps.sh", 1)[1].split()
        for line in proc.stdout.splitlines()
        if "install-system-deps.sh" in line
    ]


def test_make_demo_asks_for_no_system_package_but_python3_venv():
    assert _dry_run("demo") == [["venv"]]
    assert _dry_run("venv") == [["venv"]]
    assert ["test"] in _dry_run("test")
    assert ["molecule"] in _dry_run("molecule")


@pytest.fixture()
def fake_apt(tmp_path):
    """apt-get / dpkg-query stand-ins: nothing installed; apt-get logs its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "apt.log"
    scripts = {
        "apt-get": '#!/bin/sh\necho "$*" >> "%s"\n' % log,
        "dpkg-query": "#!/bin/sh\necho 'unknown ok not-installed'\n",
    }
    for name, text in scripts.items():
        path = bindir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=str(bindir) + os.pathsep + os.environ["PATH"])
    return env, log


def _deps(env, *groups):
    return subprocess.run(
        ["bash", SCRIPT] + list(groups),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )


def test_the_venv_group_installs_nothing_when_python_has_ensurepip(fake_apt):
    env, log = fake_apt
    proc = _deps(env, "venv")
    assert proc.returncode == 0, proc.stdout
    needs_venv = subprocess.run(["python3", "-c", "import ensurepip"], env=env, check=False).returncode != 0
    if needs_venv and shutil.which("python3").startswith("/usr/bin/"):
        pytest.skip("this machine's python3 lacks ensurepip: python3-venv is needed here")
    assert not log.exists(), log.read_text()
    assert "nothing to install for venv" in proc.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="the script installs only as root")
def test_test_and_molecule_groups_install_their_packages(fake_apt):
    env, log = fake_apt
    proc = _deps(env, "molecule")
    assert proc.returncode == 0, proc.stdout
    installs = [line for line in log.read_text().splitlines() if " install " in line]
    assert installs and installs[-1].endswith("install -y --no-install-recommends debootstrap procps")
    proc = _deps(env, "test")
    assert proc.returncode == 0, proc.stdout
    last = [line for line in log.read_text().splitlines() if " install " in line][-1]
    for package in ("chromium", "shellcheck", "openssh-server", "debootstrap", "rsync"):
        assert package in last.split()
    assert _deps(env, "nonsense").returncode == 2
