# -*- coding: utf-8 -*-
"""Lost data: ``save_snapshot`` refuses an existing non-empty directory unless
asked and never writes into the snapshot being replayed; saved snapshots are private (0700 /
0600); the ``.npuops-*.tmp`` a killed write leaves is removed by a later run's write into that
directory (old enough, of this user, of the pattern, never through a symlink)."""

import os
import pwd
import shutil
import stat
import subprocess
import sys
import time

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, paths
from ansible_collections.npuops.fleet.plugins.modules import npu_topology_facts
from npuops_testing import SNAPSHOTS

HOST = os.path.join(SNAPSHOTS, "x86-none")


class FakeModule(object):
    def __init__(self, check_mode=False, **params):
        self.params = dict(
            snapshot=None, snapshot_overlay=None, save_snapshot=None, overwrite_snapshot=False, timeout=30
        )
        self.params.update(params)
        self.check_mode = check_mode


def _tree(directory):
    out = {}
    for dirpath, dirnames, names in os.walk(directory):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, directory)] = handle.read()
    return out


def test_save_refuses_a_non_empty_directory_unless_asked(tmp_path):
    dest = tmp_path / "snap"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine\n")
    for check_mode in (True, False):
        with pytest.raises(SnapshotError, match="exists and is not empty"):
            npu_topology_facts.gather(FakeModule(check_mode, snapshot=HOST, save_snapshot=str(dest)))
    assert sorted(os.listdir(str(dest))) == ["notes.txt"]
    result = npu_topology_facts.gather(FakeModule(snapshot=HOST, save_snapshot=str(dest), overwrite_snapshot=True))
    assert result["snapshot_saved"] == str(dest) and (dest / "snapshot.yml").is_file()
    # an empty directory or a new one needs no permission
    (tmp_path / "empty").mkdir()
    npu_topology_facts.gather(FakeModule(snapshot=HOST, save_snapshot=str(tmp_path / "empty")))
    npu_topology_facts.gather(FakeModule(snapshot=HOST, save_snapshot=str(tmp_path / "new" / "x")))


def test_the_replayed_snapshot_is_never_written(tmp_path):
    replayed = tmp_path / "replayed"
    shutil.copytree(HOST, str(replayed))
    before = _tree(str(replayed))
    os.symlink(str(replayed), str(tmp_path / "alias"))
    for target in (replayed, replayed / "fs", tmp_path, tmp_path / "alias"):
        with pytest.raises(SnapshotError, match="being replayed"):
            npu_topology_facts.gather(
                FakeModule(snapshot=str(replayed), save_snapshot=str(target), overwrite_snapshot=True)
            )
    assert _tree(str(replayed)) == before  # provenance comments and all


def test_saved_snapshots_are_private(tmp_path):
    old = os.umask(0)
    try:
        recorder = hostio.RecordingHostIO(hostio.SnapshotHostIO(HOST))
        from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

        topology.gather(recorder)
        recorder.save(str(tmp_path / "a" / "snap"))
    finally:
        os.umask(old)
    top = str(tmp_path / "a" / "snap")
    assert stat.S_IMODE(os.stat(top).st_mode) == 0o700
    modes = set()
    for dirpath, dirnames, names in os.walk(top):
        modes.update(stat.S_IMODE(os.lstat(os.path.join(dirpath, d)).st_mode) | 0o40000 for d in dirnames)
        modes.update(stat.S_IMODE(os.lstat(os.path.join(dirpath, n)).st_mode) for n in names)
    assert modes == {0o40700, 0o600}


KILLED_WRITE = r"""
import os, signal, sys
from ansible_collections.npuops.fleet.plugins.module_utils.host import paths
os.rename = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # killed before the rename
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
paths.write_atomic_at(fd, "vllm-a.service", b"[Unit]\n" * 1000)
"""


def _killed_write(directory):
    before = set(os.listdir(directory))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITE, directory], env=env, timeout=60, check=False)
    assert proc.returncode == -9
    (left,) = [n for n in set(os.listdir(directory)) - before if n.startswith(".npuops-")]
    return left


def test_a_rerun_removes_the_temporary_a_killed_write_left(tmp_path):
    root = tmp_path / "root"
    unit_dir = root / "etc" / "systemd" / "system"
    unit_dir.mkdir(parents=True)
    old = _killed_write(str(unit_dir))
    fresh = _killed_write(str(unit_dir))  # a write that may still be going on: kept
    hour_ago = time.time() - paths.STALE_TEMP_SECONDS - 60
    os.utime(str(unit_dir / old), (hour_ago, hour_ago))
    # look-alikes that are not ours to remove
    outside = tmp_path / "precious"
    outside.write_text("keep\n")
    link = ".npuops-%s.tmp" % ("ab" * 8)
    os.symlink(str(outside), str(unit_dir / link))
    foreign = ".npuops-%s.tmp" % ("cd" * 8)
    (unit_dir / foreign).write_text("x")
    nobody = pwd.getpwnam("nobody")
    if os.geteuid() == 0:
        os.chown(str(unit_dir / foreign), nobody.pw_uid, nobody.pw_gid)
    other_name = ".npuops-notours.tmp"
    (unit_dir / other_name).write_text("x")
    for name in (link, foreign, other_name):
        os.utime(str(unit_dir / name), (hour_ago, hour_ago), follow_symlinks=False)
    paths._swept.clear()
    fileops.ensure_file(str(root), "/etc/systemd/system/vllm-a.service", "[Unit]\n")
    left = sorted(n for n in os.listdir(str(unit_dir)) if n.startswith(".npuops-"))
    expected = {fresh, link, other_name} | ({foreign} if os.geteuid() == 0 else set())
    assert set(left) == expected and old not in left
    assert outside.read_text() == "keep\n"


def test_remove_stale_temps_only_takes_old_files_of_the_pattern(tmp_path):
    for name in (".npuops-0123456789abcdef.tmp", ".npuops-0123456789abcdef.tmp.x", "a.tmp"):
        (tmp_path / name).write_text("x")
    fd = os.open(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert paths.remove_stale_temps(fd) == []  # all fresh
        assert paths.remove_stale_temps(fd, now=time.time() + 7200) == [".npuops-0123456789abcdef.tmp"]
    finally:
        os.close(fd)
    assert sorted(os.listdir(str(tmp_path))) == [".npuops-0123456789abcdef.tmp.x", "a.tmp"]
