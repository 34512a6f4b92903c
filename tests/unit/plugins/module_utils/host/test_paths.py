# -*- coding: utf-8 -*-
"""host/paths.py: fd-based walks below a root - no symlink followed (open_dirs), symlinks
resolved as if the root were / (resolve), bounded regular-file reads, atomic no-follow writes,
and the verified directory a snapshot is saved into (open_private_dir)."""

import os
import stat

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import UnsafePathError
from ansible_collections.npuops.fleet.plugins.module_utils.host import paths


def _root(tmp_path):
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("outside\n")
    return root, outside


def _read(root, path):
    fd = paths.open_root(str(root))
    try:
        dir_fd, name, names = paths.resolve(fd, [p for p in path.split("/") if p])
    except FileNotFoundError:  # a directory on the way is missing (below the root)
        return None, None, None
    finally:
        os.close(fd)
    try:
        data, problem = paths.read_at(dir_fd, name)
    finally:
        os.close(dir_fd)
    return data, problem, names


def test_open_dirs_refuses_a_symlink_anywhere(tmp_path):
    root, outside = _root(tmp_path)
    os.symlink(str(outside), str(root / "a" / "link"))
    fd = paths.open_root(str(root))
    try:
        with pytest.raises(UnsafePathError, match="/a/link is a symlink"):
            paths.open_dirs(fd, ["a", "link"], "/a/link/x")
        with pytest.raises(UnsafePathError, match="is not a directory"):
            paths.open_dirs(fd, ["a", "b", "f"], "/a/b/f/x")
        with pytest.raises(FileNotFoundError):
            paths.open_dirs(fd, ["a", "none"], "/a/none/x")
        created = []
        sub = paths.open_dirs(fd, ["a", "new", "deeper"], "/a/new/deeper/x", create_mode=0o750, created=created)
        os.close(sub)
    finally:
        os.close(fd)
    assert created == ["/a/new", "/a/new/deeper"]
    assert stat.S_IMODE(os.stat(str(root / "a" / "new" / "deeper")).st_mode) == 0o750


@pytest.mark.parametrize("target", ["/outside/secret", "../../../../../../outside/secret", "../../outside/secret"])
def test_resolve_keeps_symlinks_below_the_root(tmp_path, target):
    """An absolute target restarts at the root, '..' stops at it: nothing outside is read."""
    root, outside = _root(tmp_path)
    os.symlink(
        target.replace("/outside", str(outside)) if target.startswith("/") else target, str(root / "a" / "b" / "l")
    )
    data, problem, dummy = _read(root, "/a/b/l")
    assert data is None and problem is None  # resolves to <root>/outside/secret: absent
    (root / "outside").mkdir()
    (root / "outside" / "secret").write_text("the sandbox's own\n")
    if target.startswith("/"):
        os.unlink(str(root / "a" / "b" / "l"))
        os.symlink("/outside/secret", str(root / "a" / "b" / "l"))
    data, problem, names = _read(root, "/a/b/l")
    assert data == b"the sandbox's own\n" and names == ["outside"]


def test_resolve_follows_relative_links_like_sysfs(tmp_path):
    root, dummy = _root(tmp_path)
    (root / "sys" / "devices" / "pci0" / "0000:c1:00.0").mkdir(parents=True)
    (root / "sys" / "devices" / "pci0" / "0000:c1:00.0" / "numa_node").write_text("3\n")
    (root / "sys" / "bus").mkdir()
    os.symlink("../devices/pci0/0000:c1:00.0", str(root / "sys" / "bus" / "dev"))
    data, problem, names = _read(root, "/sys/bus/dev/numa_node")
    assert data == b"3\n" and names == ["sys", "devices", "pci0", "0000:c1:00.0"]


def test_resolve_loop_is_an_error_not_a_hang(tmp_path):
    root, dummy = _root(tmp_path)
    os.symlink("b", str(root / "a" / "c"))
    os.symlink("c", str(root / "a" / "d"))
    os.unlink(str(root / "a" / "b" / "f"))
    os.rmdir(str(root / "a" / "b"))
    os.symlink("d", str(root / "a" / "b"))
    fd = paths.open_root(str(root))
    try:
        with pytest.raises(OSError):
            paths.resolve(fd, ["a", "b", "x"])
    finally:
        os.close(fd)


def test_read_at_refuses_fifo_link_and_oversize(tmp_path):
    root, outside = _root(tmp_path)
    os.mkfifo(str(root / "fifo"))
    os.symlink(str(outside / "secret"), str(root / "link"))
    (root / "big").write_bytes(b"x" * 2048)
    fd = paths.open_root(str(root))
    try:
        assert paths.read_at(fd, "fifo") == (None, "is not a regular file")  # never blocks
        assert paths.read_at(fd, "link") == (None, "is a symlink")
        assert paths.read_at(fd, "none") == (None, None)
        assert paths.read_at(fd, "big", limit=1024)[0] is None
        assert paths.read_at(fd, "big", limit=4096) == (b"x" * 2048, None)
    finally:
        os.close(fd)


def test_write_atomic_at_replaces_a_planted_symlink(tmp_path):
    root, outside = _root(tmp_path)
    os.symlink(str(outside / "secret"), str(root / "target"))
    fd = paths.open_root(str(root))
    try:
        paths.write_atomic_at(fd, "target", b"new\n", 0o640)
    finally:
        os.close(fd)
    assert (outside / "secret").read_text() == "outside\n"
    assert not os.path.islink(str(root / "target")) and (root / "target").read_text() == "new\n"
    assert stat.S_IMODE(os.stat(str(root / "target")).st_mode) == 0o640
    assert not [n for n in os.listdir(str(root)) if n.startswith(paths.TEMP_PREFIX)]


def test_private_dir_created_or_verified(tmp_path):
    made = tmp_path / "x" / "y"
    fd = paths.open_private_dir(str(made), 0o750)
    os.close(fd)
    assert stat.S_IMODE(os.stat(str(made)).st_mode) == 0o750
    # owned by someone else: refused
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(str(theirs), 12345, 12345)
    with pytest.raises(UnsafePathError, match="belongs to uid 12345"):
        paths.open_private_dir(str(theirs))
    # writable by others: refused
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    with pytest.raises(UnsafePathError, match="writable by others"):
        paths.open_private_dir(str(shared))


def test_private_dir_symlinks_only_when_trusted(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(str(real), str(tmp_path / "ours"))  # ours, in a directory only we write
    fd = paths.open_private_dir(str(tmp_path / "ours" / "snap"))
    os.close(fd)
    assert (real / "snap").is_dir()
    # a link planted in a world-writable (sticky) directory, like /tmp, by another user
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    os.chmod(str(sticky), 0o1777)
    os.symlink(str(real), str(sticky / "snapshots"))
    os.lchown(str(sticky / "snapshots"), 12345, 12345)
    with pytest.raises(UnsafePathError, match="symlink others could have planted"):
        paths.open_private_dir(str(sticky / "snapshots" / "node-01"))
    # ours in a sticky directory: nobody else can replace it (fs.protected_symlinks' rule)
    os.lchown(str(sticky / "snapshots"), os.geteuid(), os.getegid())
    os.close(paths.open_private_dir(str(sticky / "snapshots" / "node-01")))
    assert (real / "node-01").is_dir()
    # in a group-writable, not sticky directory: refused whoever owns it
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(str(loose), 0o775)
    os.symlink(str(real), str(loose / "snapshots"))
    with pytest.raises(UnsafePathError, match="symlink others could have planted"):
        paths.open_private_dir(str(loose / "snapshots" / "node-02"))
