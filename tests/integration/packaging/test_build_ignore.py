# -*- coding: utf-8 -*-
"""The artifact holds nothing but the collection, whatever the checkout holds beside it.

Built in the README's order (`make demo`, then `ansible-galaxy collection build`), the tarball
was 12 MB and carried `.venv-demo/`: build_ignore named `.venv` only, and ansible-galaxy
matches a pattern against the whole relative path. Here a copy of the tracked tree gets what a
developer's and a demo user's checkout has beside it (both venvs, the demo sandboxes, caches,
test and bench output, a report, every folder .gitignore names) and the artifact built from it
must list exactly what the artifact of the clean copy lists.

The installed README and docs point only at files the artifact ships: every relative link of
every Markdown file in the artifact resolves inside it."""

import os
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from npuops_testing import REPO

BIN = os.path.dirname(sys.executable)
LINK = re.compile(r"\]\(([^)\s]+)\)")

# what `make venv`, `make venv-demo`, `make demo`, the tests and a report leave in a checkout
CLUTTER = [
    ".venv/bin/python",
    ".venv/lib/python3.11/site-packages/ansible/__init__.py",
    ".venv-demo/bin/python",
    ".venv-demo/lib/python3.11/site-packages/ansible/__init__.py",
    ".venv-demo/.requirements.sha256",
    ".demo/a2-910b3x8/root/etc/vnpu.cfg",
    ".demo/facts/a2-910b3x8",
    ".demo/site.log",
    ".demo-old/a2/root/etc/vnpu.cfg",
    ".cache/ee/context/Containerfile",
    ".cache/sanity/x.py",
    ".ansible/tmp/x",
    "collections/ansible_collections/x/y/galaxy.yml",
    "tests/output/junit.xml",
    "bench/results/report.md",
    "fleet-report/fleet-report.html",
    ".pytest_cache/v/cache/nodeids",
    ".hypothesis/examples/x",
    ".coverage",
    ".coverage.host.1234",
    "htmlcov/index.html",
    "nohup.out",
    "plugins/filter/__pycache__/host_config.cpython-311.pyc",
    "npuops-fleet-0.1.0.tar.gz",
    "venv/bin/python",
    ".tox/py311/x",
    "build/lib/x",
    "dist/x.whl",
]


def _copy_tracked(dest):
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=REPO, stdout=subprocess.PIPE, check=True)
        .stdout.decode()
        .split("\0")
    )
    for rel in files:
        if not rel or not os.path.lexists(os.path.join(REPO, rel)):
            continue
        target = os.path.join(str(dest), rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(REPO, rel), target, follow_symlinks=False)


def _gitignored_roots():
    """The folders the root .gitignore names (``/name/``): local state by definition."""
    with open(os.path.join(REPO, ".gitignore"), encoding="utf-8") as handle:
        return [line.strip().strip("/") for line in handle if line.startswith("/") and line.strip().endswith("/")]


def _build(src, out):
    out.mkdir()
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(src)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout
    (artifact,) = list(out.iterdir())
    with tarfile.open(str(artifact)) as tar:
        members = sorted(m.name.rstrip("/") for m in tar.getmembers())
    return artifact, members


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    clean = tmp_path_factory.mktemp("clean")
    _copy_tracked(clean)
    clean_artifact, clean_members = _build(clean, tmp_path_factory.mktemp("o") / "out")
    dirty = tmp_path_factory.mktemp("dirty")
    _copy_tracked(dirty)
    clutter = list(CLUTTER) + ["%s/left-here" % root for root in _gitignored_roots()]
    for rel in clutter:
        path = dirty / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 4096)
    # the collection link of `make venv` / ensure-venv.sh
    link = dirty / ".cache" / "collections" / "ansible_collections" / "npuops" / "fleet"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to("../../../..")
    artifact, members = _build(dirty, tmp_path_factory.mktemp("o") / "out")
    return {
        "clean": clean_members,
        "members": members,
        "artifact": artifact,
        "clean_artifact": clean_artifact,
        "clutter": clutter,
    }


def test_the_artifact_built_after_make_demo_holds_only_the_collection(built):
    members = built["members"]
    for rel in built["clutter"]:
        top = rel.split("/")[0]
        assert not any(
            n == top or n.startswith(top + "/") for n in members if top not in ("plugins", "tests", "bench")
        ), rel
        assert rel not in members, rel
    assert members == built["clean"]
    assert not any(n.startswith(".") for n in members)
    # the same size as the clean copy's, within the tarball's own noise
    clean_size = os.path.getsize(str(built["clean_artifact"]))
    assert abs(os.path.getsize(str(built["artifact"])) - clean_size) < 64 * 1024


def test_every_link_in_the_shipped_docs_resolves_inside_the_artifact(built):
    names = set(built["members"])
    broken = []
    with tarfile.open(str(built["artifact"])) as tar:
        for name in sorted(n for n in names if n.endswith(".md")):
            text = tar.extractfile(name).read().decode("utf-8")
            for match in LINK.finditer(text):
                target = match.group(1).split("#", 1)[0]
                if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                path = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
                if path not in names:
                    broken.append("%s -> %s" % (name, match.group(1)))
    assert broken == []
    # the facts and plan schemas the modules' RETURN docs point at are shipped
    assert {"docs/dev/facts-schema.md", "docs/dev/plan.md"} <= names
