# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Root-safe file effects under a ``host_root`` prefix: validate first, then act atomically.

Every function here is the only way modules touch files. Host paths are checked by
``host/paths.check_components`` (absolute, no ``.``/``..``) and then acted on through
directory file descriptors (``host/paths.open_dirs``): every component below ``host_root`` is
opened with O_NOFOLLOW relative to its parent, so a symlink anywhere on the way is refused
when the write happens, not only when it was checked - a directory swapped for a symlink
between a check and the act cannot redirect it.
- ``ensure_file`` / ``ensure_dir`` compare desired with current state, report ``changed`` the
  same way in check mode and real mode, return a diff, and only write when not in check mode;
- writes go to a temporary file in the same directory (O_EXCL, O_NOFOLLOW), are fsync'ed and
  renamed over the target, so a reader never sees a half-written file and a symlink planted
  at the target is replaced, not written through;
- mode and owner are changed through an fd of the object itself (``fchmod``/``fchown``);
- an existing file with more than one hard link is refused (a link could lead outside
  ``host_root``): it is neither read, nor changed, nor replaced;
- ``write_in_place`` (procfs files, which cannot be replaced by rename) writes only to a
  regular, single-link file;
- ``exclusive`` serialises read-merge-write cycles of one shared file (the IRQ state file every
  instance's run merges into, the irqbalance environment file) between runs on the same host,
  with a lock file beside it (``host/locks``).

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import errno
import grp
import os
import pwd
import re
import stat

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, UnsafePathError
from ansible_collections.npuops.fleet.plugins.module_utils.host import locks, paths

_ID = re.compile(r"^[0-9]{1,10}\Z")
_MAX_ID = (1 << 32) - 2  # uid/gid: 32 bits, -1 (4294967295) means "unchanged"


def read_text(real_path):
    """Contents of a regular file, or None when it does not exist (not under a host_root:
    for files the caller names itself)."""
    try:
        with open(real_path, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")
    except (IOError, OSError) as err:
        if getattr(err, "errno", None) == 2:
            return None
        raise


def _numeric_id(name, lookup):
    """A user or group as its number: None stays None, digits are taken as the id, a name is
    looked up (KeyError when unknown)."""
    if name is None:
        return None
    if isinstance(name, bool):
        raise KeyError(name)
    if isinstance(name, int):
        if not 0 <= name <= _MAX_ID:
            raise KeyError(name)
        return name
    text = str(name)
    if _ID.match(text):
        if int(text) > _MAX_ID:
            raise KeyError(name)
        return int(text)
    try:
        return lookup(text)[2]
    except ValueError:  # a NUL in the name
        raise KeyError(name)


def resolve_owner(owner, group):
    """Return (uid, gid); NpuopsError naming the unknown user or group."""
    try:
        uid = _numeric_id(owner, pwd.getpwnam)
    except KeyError:
        raise NpuopsError("owner/group: unknown user %r" % (owner,))
    try:
        gid = _numeric_id(group, grp.getgrnam)
    except KeyError:
        raise NpuopsError("owner/group: unknown group %r" % (group,))
    return uid, gid


def _attr_changes(st, mode, uid, gid):
    """Differences between the current (``st``) and desired mode/owner of an existing path."""
    changes = {}
    if mode is not None and stat.S_IMODE(st.st_mode) != mode:
        changes["mode"] = ("%04o" % stat.S_IMODE(st.st_mode), "%04o" % mode)
    if uid is not None and st.st_uid != uid:
        changes["owner"] = (st.st_uid, uid)
    if gid is not None and st.st_gid != gid:
        changes["group"] = (st.st_gid, gid)
    return changes


def _apply_attrs_fd(fd, mode, uid, gid):
    if uid is not None or gid is not None:
        os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
    if mode is not None:
        os.fchmod(fd, mode)


class _Parent(object):
    """The directory that holds host path ``path`` under ``host_root``, as an open fd
    (``with _Parent(...) as parent``); ``parent.fd`` is None when a directory on the way is
    missing and ``create`` is false. ``name`` is the last component (None for ``/``)."""

    def __init__(self, host_root, path, create=False):
        root = paths.check_host_root(host_root)
        self.host_root = root
        self.path = path
        parts = paths.check_components(path)
        self.name = parts[-1] if parts else None
        self.dirs = parts[:-1]
        self.create = create
        self.created = []
        self.fd = None
        self.prefix = os.path.normpath(root).rstrip("/") + "/"

    def __enter__(self):
        try:
            root_fd = paths.open_root(self.host_root)
        except OSError as err:
            if err.errno != errno.ENOENT or self.create:
                raise
            return self  # no host_root yet: nothing below it exists
        try:
            if self.name is None:
                self.fd = root_fd
                root_fd = None
                return self
            try:
                self.fd = paths.open_dirs(
                    root_fd,
                    self.dirs,
                    self.path,
                    create_mode=0o755 if self.create else None,
                    created=self.created,
                    prefix=self.prefix,
                )
            except OSError as err:
                if err.errno not in (errno.ENOENT,):
                    raise
                self.fd = None
            return self
        finally:
            paths.close(root_fd)

    def __exit__(self, *exc):
        paths.close(self.fd)
        self.fd = None
        return False

    def lstat(self):
        if self.fd is None:
            return None
        if self.name is None:
            return os.fstat(self.fd)
        return paths.lstat_at(self.fd, self.name)

    def real(self):
        return self.prefix + self.path.lstrip("/")


def _open_object(parent, directory):
    """fd of the existing target itself (no symlink followed, a FIFO never blocks)."""
    if parent.name is None:
        return os.dup(parent.fd)
    flags = (paths.DIR_FLAGS if directory else paths.READ_FLAGS) | paths.NOFOLLOW
    return os.open(parent.name, flags, dir_fd=parent.fd)


def _single_link(path, st):
    if st.st_nlink > 1:
        raise UnsafePathError(path, "has %d hard links (refused: a link could lead outside host_root)" % st.st_nlink)


def read_host_text(host_root, path):
    """Contents of the regular file at host path ``path`` under ``host_root`` (read through
    directory fds, no symlink followed), or None when it does not exist. UnsafePathError
    when it is not a regular single-link file."""
    with _Parent(host_root, path) as parent:
        st = parent.lstat()
        if st is None:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(path, "exists and is not a regular file")
        _single_link(path, st)
        data, problem = paths.read_at(parent.fd, parent.name)
    if problem is not None:
        raise UnsafePathError(path, problem)
    return None if data is None else data.decode("utf-8", "surrogateescape")


def write_in_place(host_root, path, text):
    """Write ``text`` into the existing file ``path`` without replacing it (procfs files such
    as ``/proc/irq/N/smp_affinity_list`` cannot be renamed over). The target must be a regular
    file with one link, reached without a symlink; OSError from the write is passed on."""
    with _Parent(host_root, path) as parent:
        if parent.fd is None or parent.name is None:
            raise OSError(errno.ENOENT, "No such file or directory", path)
        paths.write_in_place_at(parent.fd, parent.name, text.encode("utf-8"), path)


def remove_file(host_root, path, check_mode=False):
    """Remove the regular, single-link file ``path`` (reached without a symlink). Returns
    ``{"path", "changed", "diff"}``; an absent file is unchanged; anything else at ``path``
    is refused (UnsafePathError)."""
    result = {
        "path": path,
        "changed": False,
        "diff": {"before_header": path, "after_header": path, "before": "", "after": ""},
    }
    with _Parent(host_root, path) as parent:
        st = parent.lstat()
        if st is None:
            return result
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(path, "exists and is not a regular file: not removed")
        _single_link(path, st)
        data, problem = paths.read_at(parent.fd, parent.name)
        if problem is None and data is not None:
            result["diff"]["before"] = data.decode("utf-8", "surrogateescape")
        result["changed"] = True
        if not check_mode:
            os.unlink(parent.name, dir_fd=parent.fd)
    return result


def stat_host(host_root, path):
    """``lstat`` of host path ``path`` under ``host_root`` through directory fds (None when
    it or a directory on the way is missing); a symlink on the way raises UnsafePathError."""
    with _Parent(host_root, path) as parent:
        return parent.lstat()


def writable(host_root, path):
    """True when ``path`` exists as a file the caller may write (mode bits and access)."""
    with _Parent(host_root, path) as parent:
        st = parent.lstat()
        if st is None or parent.name is None or not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o222:
            return False
        # a check only (the write itself refuses links); faccessat without AT_SYMLINK_NOFOLLOW,
        # which older glibc cannot do for root
        return os.access(parent.name, os.W_OK, dir_fd=parent.fd)


def ensure_dir(host_root, path, mode=None, owner=None, group=None, check_mode=False):
    """Make ``path`` (and missing parents, mode 0755) a directory with the given attributes.

    Returns ``{"path", "changed", "created", "diff"}``; in check mode nothing is touched but
    ``changed`` is what a real run would report.
    """
    uid, gid = resolve_owner(owner, group)
    result = {
        "path": path,
        "changed": False,
        "created": False,
        "diff": {"before": {"path": path, "state": "absent"}, "after": {"path": path, "state": "directory"}},
    }
    with _Parent(host_root, path) as parent:
        st = parent.lstat()
        if st is not None:
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafePathError(path, "exists and is not a directory")
            changes = _attr_changes(st, mode, uid, gid)
            result["diff"]["before"] = {"path": path, "state": "directory"}
            for key, (old, new) in changes.items():
                result["diff"]["before"][key] = old
                result["diff"]["after"][key] = new
            if changes:
                result["changed"] = True
                if not check_mode:
                    fd = _open_object(parent, True)
                    try:
                        _apply_attrs_fd(fd, mode, uid, gid)
                    finally:
                        os.close(fd)
            return result
    result["changed"] = result["created"] = True
    if mode is not None:
        result["diff"]["after"]["mode"] = "%04o" % mode
    if check_mode:
        return result
    with _Parent(host_root, path, create=True) as parent:
        try:
            os.mkdir(parent.name, 0o700, dir_fd=parent.fd)
        except OSError as err:
            if err.errno == errno.EEXIST:
                raise UnsafePathError(path, "appeared while it was being created")
            raise
        fd = os.open(parent.name, paths.DIR_FLAGS | paths.NOFOLLOW, dir_fd=parent.fd)
        try:
            _apply_attrs_fd(fd, 0o755 if mode is None else mode, uid, gid)
        finally:
            os.close(fd)
    return result


def ensure_file(
    host_root,
    path,
    content=None,
    mode=None,
    owner=None,
    group=None,
    check_mode=False,
    create_parents=False,
    keep_content=False,
):
    """Make ``path`` a regular file with ``content`` (str, or bytes) and attributes, atomically.

    ``keep_content=True``: create the file (with ``content`` or empty) only when absent and
    never rewrite an existing one (e.g. ``/etc/vnpu.cfg``).
    Returns ``{"path", "changed", "created", "diff"}`` with a text diff of the content.
    """
    uid, gid = resolve_owner(owner, group)
    content = "" if content is None else content
    shown = "<%d bytes>\n" % len(content) if isinstance(content, bytes) else content
    data = content if isinstance(content, bytes) else content.encode("utf-8", "surrogateescape")
    result = {
        "path": path,
        "changed": False,
        "created": False,
        "diff": {"before_header": path, "after_header": path, "before": "", "after": shown},
    }
    with _Parent(host_root, path) as parent:
        st = parent.lstat()
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                raise UnsafePathError(path, "exists and is not a regular file")
            _single_link(path, st)
            current_bytes, problem = paths.read_at(parent.fd, parent.name)
            if problem is not None or current_bytes is None:
                raise UnsafePathError(path, problem or "vanished while it was read")
            current = current_bytes.decode("utf-8", "surrogateescape")
            result["diff"]["before"] = current
            if keep_content:
                result["diff"]["after"] = current
            changes = _attr_changes(st, mode, uid, gid)
            if isinstance(content, bytes):
                # binary content (the binder zipapp): compared as bytes, shown in a diff by size
                content_differs = (not keep_content) and current_bytes != content
                result["diff"]["before"] = "<%d bytes>\n" % len(current_bytes)
                result["diff"]["after"] = "<%d bytes>\n" % len(content)
            else:
                content_differs = (not keep_content) and current != content
            if content_differs or changes:
                result["changed"] = True
                if not check_mode:
                    if content_differs:
                        paths.write_atomic_at(
                            parent.fd, parent.name, data, stat.S_IMODE(st.st_mode) if mode is None else mode, uid, gid
                        )
                    else:
                        fd = _open_object(parent, False)
                        try:
                            now = os.fstat(fd)
                            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                                raise UnsafePathError(path, "was replaced while it was checked")
                            _single_link(path, now)
                            _apply_attrs_fd(fd, mode, uid, gid)
                        finally:
                            os.close(fd)
            return result
        missing_parent = parent.fd is None
    result["changed"] = result["created"] = True
    if check_mode:
        return result
    if missing_parent and not create_parents:
        raise UnsafePathError(path, "parent directory does not exist")
    with _Parent(host_root, path, create=create_parents) as parent:
        if parent.fd is None:
            raise UnsafePathError(path, "parent directory does not exist")
        paths.write_atomic_at(parent.fd, parent.name, data, 0o644 if mode is None else mode, uid, gid)
    return result


@contextlib.contextmanager
def exclusive(host_root, path, timeout=60.0):
    """Hold an exclusive ``flock`` on ``<dir>/.<name>.lock`` beside host path ``path`` for the
    ``with`` block (``host/locks``: the one lock of a shared file, which the binder's IRQ
    reconcile pass takes too), so two runs that read, merge and rewrite ``path`` at once (two
    playbooks, two instances' tasks) cannot lose each other's rows. The directory is created
    when missing (as ``ensure_file(create_parents=True)`` would); the lock file is opened
    through directory fds without following a symlink and must be a regular single-link file.
    A lock held longer than ``timeout`` seconds is an error naming the lock file, never a wait
    without end."""
    parts = paths.check_components(path)
    lock_path = "/" + "/".join(parts[:-1] + [locks.lock_name(parts[-1])])
    with _Parent(host_root, lock_path, create=True) as parent:
        if parent.fd is None:
            raise UnsafePathError(lock_path, "parent directory does not exist")
        fd = locks.open_lock_at(parent.fd, parent.name, lock_path)
    try:
        locks.hold(fd, lock_path, path, timeout)
        yield
    finally:
        os.close(fd)  # closing the last fd releases the flock


def prune_empty_dirs(host_root, path, keep, check_mode=False):
    """Remove the empty directories directly below ``path`` whose names are decimal and not in
    ``keep`` (a set of ints); symlinks and non-directories are left alone. Returns
    ``(removed, kept)`` host paths (``kept``: such directories that are not empty)."""
    removed, kept = [], []
    with _Parent(host_root, path) as parent:
        st = parent.lstat()
        if st is None or not stat.S_ISDIR(st.st_mode):
            return removed, kept
        top = _open_object(parent, True)
    try:
        for name in sorted(os.listdir(top)):
            if not re.match(r"^[0-9]{1,9}\Z", name) or int(name) in keep:
                continue
            entry = paths.lstat_at(top, name)
            if entry is None or not stat.S_ISDIR(entry.st_mode):
                continue
            sub = os.open(name, paths.DIR_FLAGS | paths.NOFOLLOW, dir_fd=top)
            try:
                empty = not os.listdir(sub)
            finally:
                os.close(sub)
            shown = path.rstrip("/") + "/" + name
            if not empty:
                kept.append(shown)
                continue
            removed.append(shown)
            if not check_mode:
                os.rmdir(name, dir_fd=top)
    finally:
        os.close(top)
    return removed, kept
