# -*- coding: utf-8 -*-
"""The collection as a user gets it (ansible-galaxy collection build / install).

- The artifact of ``ansible-galaxy collection build`` holds what a user runs or reads and
  nothing for development (galaxy.yml ``build_ignore``), with the license text.
- The README section "Install from a collection artifact" works as written: its shell blocks
  run verbatim (with ``HOME`` a temporary directory, so ``~`` is one): the artifact is built
  from this checkout, installed into an empty collections path, and ``npuops.fleet.site`` and
  ``npuops.fleet.audit`` run by FQCN against recorded hosts of the installed artifact. Nothing
  is written into the installed collection (``ansible-galaxy collection verify --offline``).
- ``execution-environment.yml``: ``ansible-builder create`` makes the build context (no image,
  no container engine), and ansible-builder's own introspection finds the collection's Python
  and system requirements in the installed artifact.
"""

import json
import os
import re
import subprocess
import sys
import tarfile

import pytest
import yaml

from npuops_testing import REPO, SNAPSHOTS

BIN = os.path.dirname(sys.executable)
GALAXY = yaml.safe_load(open(os.path.join(REPO, "galaxy.yml"), encoding="utf-8"))
ARTIFACT = "npuops-fleet-%s.tar.gz" % GALAXY["version"]

# What the artifact holds at the top level: nothing else.
SHIPPED = {
    "MANIFEST.json",
    "FILES.json",
    "README.md",
    "LICENSE",
    "CHANGELOG.rst",
    "changelogs",
    "docs",
    "meta",
    "playbooks",
    "plugins",
    "roles",
    "tests",
    "execution-environment.yml",
    "requirements.txt",
    "bindep.txt",
}
DEVELOPER = [
    "Makefile",
    ".ci",
    "scripts",
    "bench",
    "extensions",
    "requirements-dev.txt",
    "requirements-demo.txt",
    "pytest.ini",
    ".ansible-lint",
    "ruff.toml",
    ".pre-commit-config.yaml",
    "CONTRIBUTING.md",
    ".gitignore",
    "inventories",
    ".venv-demo",
    "changelogs/fragments",
    "tests/unit",
    "tests/integration",
    "tests/lib",
    "tests/fixtures",
    "tests/real",
    "tests/conftest.py",
    "tests/config.yml",
    ".venv",
    ".cache",
    ".demo",
    ".hypothesis",
    ".pytest_cache",
    ".mypy_cache",
    "nohup.out",
]

pytestmark = pytest.mark.slow


def _env(home, **extra):
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("ANSIBLE_"):
            del env[key]
    env.update(
        {
            "HOME": str(home),
            "PATH": BIN + os.pathsep + env.get("PATH", ""),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "False",
        }
    )
    env.update(extra)
    return env


def _run(cmd, cwd, env, timeout=900):
    return subprocess.run(
        cmd,
        cwd=str(cwd),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def _readme_blocks():
    """The bash blocks of the README's "Install from a collection artifact" section."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("\n## Install from a collection artifact\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)```", section, re.S)


def _colon_paths(root):
    found = []
    for dirpath, dirs, files in os.walk(root):
        found.extend(os.path.join(dirpath, n) for n in dirs + files if ":" in n)
    return found


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """The README section run as written; returns the paths it made and the output."""
    home = tmp_path_factory.mktemp("home")
    blocks = _readme_blocks()
    assert len(blocks) == 2, blocks
    script = "set -euo pipefail\n" + blocks[0] + "\n" + blocks[1]
    proc = _run(["bash", "-c", script], REPO, _env(home), timeout=1800)
    try_dir = home / "npuops-try"
    return {
        "proc": proc,
        "home": home,
        "try": try_dir,
        "artifact": home / "npuops-dist" / ARTIFACT,
        "collections": try_dir / "collections",
        "installed": try_dir / "collections" / "ansible_collections" / "npuops" / "fleet",
    }


def test_the_readme_install_section_works_as_written(readme_run):
    proc = readme_run["proc"]
    assert proc.returncode == 0, proc.stdout[-8000:]
    out = proc.stdout
    # both playbooks ran by FQCN on both hosts, from the installed artifact
    recaps = re.findall(r"^(a2|dgx)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=0", out, re.M)
    assert sorted(set(h for h, dummy, dummy in recaps)) == ["a2", "dgx"]
    assert len(recaps) == 4  # site and audit
    assert sum(int(c) for h, dummy, c in recaps[:2]) > 0  # site.yml wrote into the sandboxes
    assert "fleet-report.html" in out and "fleet-report.json" in out
    # the page came from the installed copy's templates
    page = (readme_run["try"] / "report" / "fleet-report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") >= 2 and "Content-Security-Policy" in page
    report = json.loads((readme_run["try"] / "report" / "fleet-report.json").read_text())
    assert [h["name"] for h in report["hosts"]] == ["a2", "dgx"]
    assert all(h["has_facts"] for h in report["hosts"])
    a2 = report["hosts"][0]
    assert a2["device_type"] == "A2" and a2["npus"] == 8
    assert a2["plans"]["strict"]["status"] == "ok"
    # the sandbox roots got the effects (a wrapper, soft-share paths, IRQ affinity)
    root = readme_run["try"] / "roots" / "a2"
    assert any(p.name.startswith("vllm-qwen-a") for p in (root / "etc" / "systemd" / "system").iterdir())
    assert (root / "etc" / "vnpu.cfg").is_file()


def test_it_ran_the_installed_copy_and_wrote_nothing_into_it(readme_run):
    assert readme_run["proc"].returncode == 0, readme_run["proc"].stdout[-3000:]
    env = _env(readme_run["home"], ANSIBLE_COLLECTIONS_PATH=str(readme_run["collections"]))
    listed = _run(
        [os.path.join(BIN, "ansible-galaxy"), "collection", "list", "npuops.fleet", "--format", "json"],
        readme_run["try"],
        env,
    )
    assert listed.returncode == 0, listed.stdout
    paths = json.loads(listed.stdout[listed.stdout.index("{") :])
    assert list(paths) == [str(readme_run["collections"] / "ansible_collections")]
    verify = _run(
        [
            os.path.join(BIN, "ansible-galaxy"),
            "collection",
            "verify",
            "--offline",
            "-p",
            str(readme_run["collections"]),
            "npuops.fleet",
        ],
        readme_run["try"],
        env,
    )
    assert verify.returncode == 0, verify.stdout
    assert "Successfully verified that checksums for 'npuops.fleet:" in verify.stdout


def test_the_artifact_holds_what_users_need_and_nothing_for_development(readme_run):
    assert readme_run["artifact"].is_file(), readme_run["proc"].stdout[-3000:]
    with tarfile.open(str(readme_run["artifact"])) as tar:
        names = [m.name.rstrip("/") for m in tar.getmembers()]
        manifest = json.load(tar.extractfile("MANIFEST.json"))
        license_text = tar.extractfile("LICENSE").read().decode()
    assert set(n.split("/")[0] for n in names) == SHIPPED
    for path in DEVELOPER:
        assert not any(n == path or n.startswith(path + "/") for n in names), path
    assert not any("/__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "GNU GENERAL PUBLIC LICENSE" in license_text and "Version 3" in license_text
    info = manifest["collection_info"]
    assert info["license"] == ["GPL-3.0-or-later"]
    assert info["repository"] and info["documentation"] and info["issues"]
    # the recorded demo hosts, every module, role and playbook, the filter docs
    snaps = sorted(n for n in os.listdir(SNAPSHOTS) if os.path.isfile(os.path.join(SNAPSHOTS, n, "snapshot.yml")))
    for snap in snaps:
        assert "tests/snapshots/%s/snapshot.yml" % snap in names
    for folder in ("plugins/modules", "plugins/filter", "roles", "playbooks"):
        for entry in os.listdir(os.path.join(REPO, folder)):
            if entry != "__pycache__":
                assert "%s/%s" % (folder, entry) in names, entry
    assert "meta/execution-environment.yml" in names
    # the report page's templates and static files, read beside report/html.py at run time
    templates = os.path.join(REPO, "plugins", "plugin_utils", "report", "templates")
    for entry in os.listdir(templates):
        assert "plugins/plugin_utils/report/templates/" + entry in names, entry


def test_no_shipped_path_holds_a_colon(readme_run):
    """Paths with ':' (recorded sysfs such as .../0000:c1:00.0) cannot be extracted on Windows.
    The snapshot format escapes them (0000%3Ac1%3A00.0); scripts/escape_snapshot_paths.py renames
    a recorded snapshot that still holds one."""
    left = _colon_paths(SNAPSHOTS)
    assert left == [], "tests/snapshots holds paths with ':' (run scripts/escape_snapshot_paths.py)"
    with tarfile.open(str(readme_run["artifact"])) as tar:
        assert [m.name for m in tar.getmembers() if ":" in m.name] == []


def test_the_execution_environment_context_and_its_requirements(readme_run, tmp_path):
    stage = tmp_path / "ee"
    proc = _run(
        ["bash", os.path.join(REPO, "scripts", "ee-create.sh"), str(stage)],
        REPO,
        _env(readme_run["home"], VENV=os.path.dirname(BIN)),
    )
    assert proc.returncode == 0, proc.stdout[-4000:]
    context = stage / "context"
    containerfile = (context / "Containerfile").read_text()
    definition = yaml.safe_load((stage / "execution-environment.yml").read_text())
    assert definition["version"] == 3
    assert 'ARG EE_BASE_IMAGE="%s"' % definition["images"]["base_image"]["name"] in containerfile
    assert "ansible-core==2.19.14 ansible-runner==2.4.3" in containerfile
    assert "ansible-galaxy collection install" in containerfile
    assert (context / "_build" / "collections" / "npuops-fleet.tar.gz").is_file()
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert {"name": "/build/collections/npuops-fleet.tar.gz", "type": "file"} in galaxy["collections"]
    assert (context / "_build" / "requirements.txt").read_text() == open(
        os.path.join(REPO, "requirements.txt"), encoding="utf-8"
    ).read()
    # what the image build's introspection step finds in the installed collection
    introspect = context / "_build" / "scripts" / "introspect.py"
    found = _run(
        [sys.executable, str(introspect), "introspect", str(readme_run["collections"])],
        tmp_path,
        _env(readme_run["home"]),
    )
    assert found.returncode == 0, found.stdout
    data = yaml.safe_load(found.stdout)
    assert "jmespath>=1.0.1  # from collection npuops.fleet" in data["python"]
    assert "openssh-clients [platform:rpm]  # from collection npuops.fleet" in data["system"]
