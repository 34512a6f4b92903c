# -*- coding: utf-8 -*-
"""apply/fileops.py under a host_root: symlinks, hard links and paths swapped for symlinks
while a write is under way never lead a read or a write outside the sandbox."""

import os
import stat
import threading

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, UnsafePathError
from ansible_collections.npuops.fleet.plugins.module_utils.host import paths

WRAPPER = "/usr/local/lib/npuops/svc-launch"


def _sandbox(tmp_path):
    root = tmp_path / "sandbox"
    (root / "usr" / "local" / "lib" / "npuops").mkdir(parents=True)
    (root / "etc").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("victim\n")
    os.chmod(str(outside / "victim"), 0o600)
    return str(root), outside


def _outside_untouched(outside):
    assert sorted(os.listdir(str(outside))) == ["victim"]
    assert (outside / "victim").read_text() == "victim\n"
    assert stat.S_IMODE(os.stat(str(outside / "victim")).st_mode) == 0o600


def test_write_creates_and_is_idempotent(tmp_path):
    root, outside = _sandbox(tmp_path)
    first = fileops.ensure_file(root, WRAPPER, "#!/bin/sh\n", mode=0o755)
    again = fileops.ensure_file(root, WRAPPER, "#!/bin/sh\n", mode=0o755)
    assert first["changed"] and first["created"] and not again["changed"]
    real = os.path.join(root, WRAPPER.lstrip("/"))
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o755
    assert not [n for n in os.listdir(os.path.dirname(real)) if n.startswith(paths.TEMP_PREFIX)]
    _outside_untouched(outside)


@pytest.mark.parametrize("where", ["usr/local/lib/npuops", "usr/local", "usr/local/lib/npuops/svc-launch"])
def test_symlink_on_the_way_is_refused(tmp_path, where):
    root, outside = _sandbox(tmp_path)
    real = os.path.join(root, where)
    if os.path.isdir(real):
        os.rename(real, real + ".moved")
    os.symlink(str(outside) if where != WRAPPER.lstrip("/") else str(outside / "victim"), real)
    if where.endswith("svc-launch"):
        # the target itself is a symlink: refused as "not a regular file", never written through
        with pytest.raises(UnsafePathError, match="not a regular file"):
            fileops.ensure_file(root, WRAPPER, "x", create_parents=True)
    else:
        with pytest.raises(UnsafePathError, match="is a symlink"):
            fileops.ensure_file(root, WRAPPER, "x", create_parents=True)
    _outside_untouched(outside)


def test_hard_link_is_neither_read_nor_changed(tmp_path):
    root, outside = _sandbox(tmp_path)
    os.link(str(outside / "victim"), os.path.join(root, "etc", "vnpu.cfg"))
    for kwargs in ({"content": "", "mode": 0o644, "keep_content": True}, {"content": "new\n", "mode": 0o644}):
        with pytest.raises(UnsafePathError, match="hard links"):
            fileops.ensure_file(root, "/etc/vnpu.cfg", **kwargs)
    with pytest.raises(UnsafePathError, match="hard links"):
        fileops.read_host_text(root, "/etc/vnpu.cfg")
    with pytest.raises(UnsafePathError, match="hard links"):
        fileops.write_in_place(root, "/etc/vnpu.cfg", "0-3\n")
    _outside_untouched(outside)


def test_fifo_target_refused_without_blocking(tmp_path):
    root, outside = _sandbox(tmp_path)
    os.mkfifo(os.path.join(root, "etc", "fifo"))
    with pytest.raises(UnsafePathError, match="not a regular file"):
        fileops.ensure_file(root, "/etc/fifo", "x")
    with pytest.raises(UnsafePathError, match="not a regular file"):
        fileops.read_host_text(root, "/etc/fifo")
    with pytest.raises((UnsafePathError, OSError)):
        fileops.write_in_place(root, "/etc/fifo", "x")  # ENXIO: no reader; never blocks


def test_swap_between_components_is_refused(tmp_path, monkeypatch):
    """The directory is swapped for a symlink after the walk started (what a check-then-act
    implementation missed): the O_NOFOLLOW open of that component refuses it."""
    root, outside = _sandbox(tmp_path)
    real_open = os.open
    target_dir = os.path.join(root, "usr", "local", "lib", "npuops")

    def swapping_open(path, flags, *args, **kwargs):
        if path == "npuops" and not os.path.islink(target_dir):
            os.rename(target_dir, target_dir + ".real")
            os.symlink(str(outside), target_dir)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", swapping_open)
    with pytest.raises(UnsafePathError, match="is a symlink"):
        fileops.ensure_file(root, WRAPPER, "x", create_parents=True)
    monkeypatch.undo()
    _outside_untouched(outside)


def test_swap_after_the_directory_was_opened_writes_inside(tmp_path, monkeypatch):
    """Swapped once the directory fd is held: the file lands in the real directory (moved,
    still inside the sandbox), nothing outside."""
    root, outside = _sandbox(tmp_path)
    real_open = os.open
    target_dir = os.path.join(root, "usr", "local", "lib", "npuops")

    def swapping_open(path, flags, *args, **kwargs):
        if isinstance(path, str) and path.startswith(paths.TEMP_PREFIX) and not os.path.islink(target_dir):
            os.rename(target_dir, target_dir + ".real")
            os.symlink(str(outside), target_dir)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", swapping_open)
    fileops.ensure_file(root, WRAPPER, "x", create_parents=True)
    monkeypatch.undo()
    assert open(target_dir + ".real/svc-launch").read() == "x"
    _outside_untouched(outside)


def test_swap_race_against_a_thread(tmp_path):
    """A thread keeps swapping the destination directory for a symlink to a directory outside
    while files are written 100 times: nothing is ever written outside; a refused or failed
    write is an error message (NpuopsError / OSError), never a write elsewhere."""
    root, outside = _sandbox(tmp_path)
    target_dir = os.path.join(root, "usr", "local", "lib", "npuops")
    stop = threading.Event()

    def swapper():
        while not stop.is_set():
            try:
                os.rename(target_dir, target_dir + ".real")
                os.symlink(str(outside), target_dir)
                os.unlink(target_dir)
                os.rename(target_dir + ".real", target_dir)
            except OSError:
                pass

    thread = threading.Thread(target=swapper)
    thread.start()
    outcomes = {"written": 0, "refused": 0}
    try:
        for index in range(100):
            try:
                fileops.ensure_file(root, "/usr/local/lib/npuops/f%d" % index, "x", create_parents=True)
                outcomes["written"] += 1
            except (NpuopsError, OSError):
                outcomes["refused"] += 1
    finally:
        stop.set()
        thread.join()
    assert sum(outcomes.values()) == 100
    _outside_untouched(outside)


def test_ensure_dir_modes_through_fds_and_symlinked_parent(tmp_path):
    root, outside = _sandbox(tmp_path)
    res = fileops.ensure_dir(root, "/share/0", mode=0o1777)
    assert res["created"] and stat.S_IMODE(os.stat(os.path.join(root, "share/0")).st_mode) == 0o1777
    assert not fileops.ensure_dir(root, "/share/0", mode=0o1777)["changed"]
    os.symlink(str(outside), os.path.join(root, "data"))
    with pytest.raises(UnsafePathError, match="is a symlink"):
        fileops.ensure_dir(root, "/data/share", mode=0o750)
    _outside_untouched(outside)


def test_prune_never_follows_links(tmp_path):
    root, outside = _sandbox(tmp_path)
    for name in ("0", "1", "7"):
        os.makedirs(os.path.join(root, "share", name))
    (outside / "3").mkdir()
    os.symlink(str(outside / "3"), os.path.join(root, "share", "3"))
    open(os.path.join(root, "share", "7", "busy"), "w").close()
    removed, kept = fileops.prune_empty_dirs(root, "/share", {0})
    assert removed == ["/share/1"] and kept == ["/share/7"]
    assert (outside / "3").is_dir()
