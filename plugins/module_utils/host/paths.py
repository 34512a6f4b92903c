# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safe host paths: absolute, no ``.``/``..`` components, no NUL, and (under a ``host_root``
prefix) no symlink between the root and the target. Every layer that names a host path checks
it here: the host I/O readers and the file effects of ``apply/``.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import errno
import os
import stat

from ansible_collections.npuops.fleet.plugins.module_utils.errors import UnsafePathError


def check_components(path):
    """Reject a host path that is relative or has ``.``/``..`` components or NUL bytes."""
    if not isinstance(path, str) or not path:
        raise UnsafePathError(repr(path), "a path must be a non-empty string")
    if "\x00" in path:
        raise UnsafePathError(repr(path), "NUL byte in path")
    if not path.startswith("/"):
        raise UnsafePathError(path, "must be absolute")
    parts = [p for p in path.split("/") if p]
    for part in parts:
        if part in (".", ".."):
            raise UnsafePathError(path, "'.' and '..' components are not allowed")
    return parts


def host_path(host_root, path):
    """The real location of host path ``path`` under ``host_root`` (``/`` = the real host).

    Refuses ``..``, relative paths and any existing symlink between ``host_root`` and the
    target (the target itself included). ``host_root`` itself may be a symlink only if it is
    given explicitly by the caller (a sandbox); it must be absolute.
    """
    root = host_root or "/"
    if not root.startswith("/"):
        raise UnsafePathError(root, "host_root must be absolute")
    parts = check_components(path)
    real = os.path.normpath(root)
    for part in parts:
        real = os.path.join(real, part)
        if os.path.islink(real):
            raise UnsafePathError(path, "%s is a symlink" % real)
    return real if parts else os.path.normpath(root)


# -- directory file descriptors: every component opened relative to its parent ----------
# Acting on a path through fds (``os.open(name, ..., dir_fd=parent)`` with O_NOFOLLOW) means a
# component swapped for a symlink after a check cannot redirect the read or write: the kernel
# refuses the symlink at the moment of use, not at the moment of the check.

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
NOFOLLOW = os.O_NOFOLLOW
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_LINKS = 40  # symlinks followed while resolving one path (the kernel's limit)
# Largest file any reader takes (a /proc/interrupts of a 640-CPU host is a few MB).
MAX_FILE_BYTES = 64 * 1024 * 1024
TEMP_PREFIX = ".npuops-"


def open_root(root):
    """Directory fd of a root the caller chose (``host_root``, a snapshot directory). The root
    itself may be a symlink (a sandbox); everything below it is opened without following."""
    return os.open(root, DIR_FLAGS)


def close(fd):
    """Close ``fd`` when it is one (None is ignored)."""
    if fd is not None:
        os.close(fd)


def _is_link_errno(err):
    # O_NOFOLLOW on a symlink: ELOOP (Linux); O_DIRECTORY on anything else: ENOTDIR.
    return err.errno == errno.ELOOP


def open_dirs(root_fd, parts, label, create_mode=None, created=None, error=None, prefix="/"):
    """Directory fd of ``root/<parts>``, each component opened with O_NOFOLLOW from its parent.

    A symlink on the way raises ``error(label, "<prefix><components> is a symlink")``
    (UnsafePathError by default), a non-directory ``error(label, "... is not a directory")``. A missing
    component raises FileNotFoundError, unless ``create_mode`` is given: it is then created
    with that mode (exactly: umask undone) and its host path appended to ``created``.
    The caller closes the returned fd; ``root_fd`` stays open.
    """
    error = error or UnsafePathError
    fd = os.dup(root_fd)
    walked = []
    try:
        for part in parts:
            walked.append(part)
            try:
                nxt = os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
            except OSError as err:
                if err.errno == errno.ENOENT and create_mode is not None:
                    made = True
                    try:
                        # 0700 until its mode is set through the fd: never more open than asked
                        os.mkdir(part, 0o700, dir_fd=fd)
                    except OSError as mk_err:
                        if mk_err.errno != errno.EEXIST:
                            raise
                        made = False
                    try:
                        nxt = os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
                    except OSError as op_err:
                        if _is_link_errno(op_err):
                            raise error(label, "%s%s is a symlink" % (prefix, "/".join(walked)))
                        raise
                    if made:
                        os.fchmod(nxt, create_mode)
                        if created is not None:
                            created.append("/" + "/".join(walked))
                elif _is_link_errno(err):
                    raise error(label, "%s%s is a symlink" % (prefix, "/".join(walked)))
                elif err.errno == errno.ENOTDIR:
                    raise error(label, "%s%s is not a directory" % (prefix, "/".join(walked)))
                else:
                    raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def resolve(root_fd, parts, max_links=MAX_LINKS):
    """Resolve ``parts`` below ``root_fd`` following symlinks as if the root were ``/``
    (absolute targets restart at the root, ``..`` stops there): what ``chroot`` would see.

    Returns ``(dir_fd, name, names)``: an open fd of the directory that holds the last
    component, its entry name (None when the path is the root itself) and the resolved
    components of that directory. The last component is followed too and may not exist.
    Raises OSError (ENOENT, ENOTDIR, ELOOP) when a directory on the way cannot be resolved.
    The caller closes ``dir_fd``.
    """
    stack = []          # fds of the directories above ``fd``, root first
    names = []
    fd = os.dup(root_fd)
    todo = [p for p in parts if p not in ("", ".")]
    links = 0
    try:
        while todo:
            part = todo.pop(0)
            if part == "..":
                if stack:
                    os.close(fd)
                    fd = stack.pop()
                    names.pop()
                continue
            try:
                target = os.readlink(part, dir_fd=fd)
            except OSError as err:
                if err.errno not in (errno.EINVAL, errno.ENOENT):
                    raise
                if not todo:
                    result = (fd, part, names)
                    fd = None
                    return result
                nxt = os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
                stack.append(fd)
                fd = nxt
                names.append(part)
                continue
            links += 1
            if links > max_links:
                raise OSError(errno.ELOOP, "too many levels of symbolic links",
                              "/" + "/".join(names + [part]))
            if target.startswith("/"):
                while stack:
                    os.close(stack.pop())
                os.close(fd)
                fd = None
                names = []
                fd = os.dup(root_fd)
            todo = [p for p in target.split("/") if p not in ("", ".")] + todo
        if not stack:
            result = (fd, None, names)
            fd = None
            return result
        # the path resolved to a directory: hand back its parent and its name
        name = names.pop()
        os.close(fd)
        fd = None
        result = (stack.pop(), name, names)
        return result
    finally:
        while stack:
            os.close(stack.pop())
        if fd is not None:
            os.close(fd)


def read_at(dir_fd, name, limit=MAX_FILE_BYTES):
    """Bytes of regular file ``name`` in ``dir_fd`` (a symlink is not followed).

    Returns ``(data, problem)``: ``(bytes, None)``, ``(None, None)`` when it does not exist, or
    ``(None, reason)`` when it is a symlink, not a regular file (a FIFO, a device: never
    opened in a way that could block) or larger than ``limit`` bytes.
    """
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ENOTDIR):
            return None, None
        if _is_link_errno(err):
            return None, "is a symlink"
        if err.errno in (errno.ENXIO, errno.EOPNOTSUPP, errno.EWOULDBLOCK):
            return None, "is not a regular file"
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "is not a regular file"
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                return None, "is larger than %d MiB" % (limit // (1024 * 1024))
        return b"".join(chunks), None
    finally:
        os.close(fd)


def lstat_at(dir_fd, name):
    """``os.lstat`` of ``name`` in ``dir_fd``, or None when it does not exist."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise


def temp_name():
    """A fresh name for a temporary file beside a target (short: any target name fits)."""
    return "%s%s.tmp" % (TEMP_PREFIX, binascii.hexlify(os.urandom(8)).decode("ascii"))


def write_atomic_at(dir_fd, name, data, mode=0o644, uid=None, gid=None):
    """Write ``data`` (bytes) as ``name`` in ``dir_fd``: a new temporary file (O_EXCL,
    O_NOFOLLOW) is written, fsync'ed, given ``mode``/owner and renamed over ``name``, then the
    directory is fsync'ed. ``rename`` replaces a symlink planted at ``name`` instead of
    writing through it; a reader sees the old file or the new one, never a part."""
    tmp = temp_name()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | os.O_CLOEXEC, 0o600,
                 dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if uid is not None or gid is not None:
                os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
