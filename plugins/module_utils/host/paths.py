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
import re
import stat
import time

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError, UnsafePathError


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


HOST_ROOT_RULE = (
    "an absolute path without '.' or '..' components, of an existing directory; the real machine only as '/' itself"
)


def check_host_root(host_root, must_exist=False):
    """``host_root`` as given when it names a root (``HOST_ROOT_RULE``); InputError otherwise.
    Never normalised: ``/srv/sandbox/../../..`` is refused, not read as ``/``, and an empty
    value (an unset variable, a lookup that found nothing) is refused rather than taken for the
    real machine. ``must_exist``: the directory must exist (the module runner checks it before
    a module runs)."""
    if not isinstance(host_root, str) or not host_root:
        raise InputError(
            "host_root",
            "%r is not a root: it must be %s (write '/' for the real machine)" % (host_root, HOST_ROOT_RULE),
        )
    if host_root == "/":
        return host_root
    try:
        parts = check_components(host_root)
    except UnsafePathError as err:
        raise InputError("host_root", "%s: %s; it must be %s" % (host_root, err.msg, HOST_ROOT_RULE))
    if not parts:
        raise InputError("host_root", "%r: write '/' for the real machine" % host_root)
    if must_exist and not os.path.isdir(host_root):
        raise InputError("host_root", "%s is not an existing directory" % host_root)
    return host_root


def host_path(host_root, path):
    """The real location of host path ``path`` under ``host_root`` (``/`` = the real host).

    Refuses ``..``, relative paths and any existing symlink between ``host_root`` and the
    target (the target itself included). ``host_root`` itself may be a symlink only if it is
    given explicitly by the caller (a sandbox); it must be absolute.
    """
    root = check_host_root(host_root)
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
    # O_NOFOLLOW on a symlink: ELOOP (Linux; with O_DIRECTORY too it may be ENOTDIR)
    return err.errno == errno.ELOOP


def _dir_refusal(err, dir_fd, name):
    """Why ``os.open(name, O_DIRECTORY | O_NOFOLLOW)`` failed: "symlink", "notdir" or None
    (another error, to be raised as it is)."""
    if err.errno not in (errno.ELOOP, errno.ENOTDIR):
        return None
    st = lstat_at(dir_fd, name)
    if st is not None and stat.S_ISLNK(st.st_mode):
        return "symlink"
    return "notdir"


def open_dirs(root_fd, parts, label, create_mode=None, created=None, error=None, prefix="/"):
    """Directory fd of ``root/<parts>``, each component opened with O_NOFOLLOW from its parent.

    A symlink on the way raises ``error(label, "<prefix><components> is a symlink")``
    (UnsafePathError by default), a non-directory ``error(label, "... is not a directory")``.
    A missing component raises FileNotFoundError, unless ``create_mode`` is given: it is then
    created with that mode (exactly: umask undone) and its host path appended to ``created``.
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
                        if _dir_refusal(op_err, fd, part) == "symlink":
                            raise error(label, "%s%s is a symlink" % (prefix, "/".join(walked)))
                        raise
                    if made:
                        os.fchmod(nxt, create_mode)
                        if created is not None:
                            created.append("/" + "/".join(walked))
                else:
                    refusal = _dir_refusal(err, fd, part)
                    if refusal is None:
                        raise
                    what = "a symlink" if refusal == "symlink" else "not a directory"
                    raise error(label, "%s%s is %s" % (prefix, "/".join(walked), what))
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
    stack = []  # fds of the directories above ``fd``, root first
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
                raise OSError(errno.ELOOP, "too many levels of symbolic links", "/" + "/".join(names + [part]))
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


def read_at(dir_fd, name, limit=MAX_FILE_BYTES, head=False):
    """Bytes of regular file ``name`` in ``dir_fd`` (a symlink is not followed).

    Returns ``(data, problem)``: ``(bytes, None)``, ``(None, None)`` when it does not exist, or
    ``(None, reason)`` when it is a symlink, not a regular file (a FIFO, a device: never
    opened in a way that could block) or larger than ``limit`` bytes. With ``head`` a larger
    file gives its first ``limit`` bytes: the size is what is read, never ``st_size`` (a
    sparse file's size says nothing of what reading it costs).
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
                if head:
                    return b"".join(chunks)[:limit], None
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


# what temp_name makes, and how old such a file must be before a later write takes it for the
# leftover of a killed one (a write in progress lasts seconds)
_TEMP_RE = re.compile(r"^%s[0-9a-f]{16}\.tmp\Z" % re.escape(TEMP_PREFIX))
STALE_TEMP_SECONDS = 3600
_swept = set()  # (st_dev, st_ino) of the directories swept by this process


def remove_stale_temps(dir_fd, max_age=STALE_TEMP_SECONDS, now=None):
    """Remove from ``dir_fd`` the temporaries killed writes left (``write_atomic_at``): names
    of ``temp_name``'s pattern only, each a regular single-link file of this user older than
    ``max_age`` seconds, looked at with lstat (a symlink is never followed nor removed).
    Returns the names removed."""
    now = time.time() if now is None else now
    removed = []
    for name in os.listdir(dir_fd):
        if not _TEMP_RE.match(name):
            continue
        st = lstat_at(dir_fd, name)
        if (
            st is None
            or not stat.S_ISREG(st.st_mode)
            or st.st_nlink != 1
            or st.st_uid != os.geteuid()
            or now - st.st_mtime < max_age
        ):
            continue
        try:
            os.unlink(name, dir_fd=dir_fd)  # the name itself: never through a link
        except OSError:
            continue
        removed.append(name)
    return removed


def _sweep_once(dir_fd):
    st = os.fstat(dir_fd)
    if (st.st_dev, st.st_ino) not in _swept:
        _swept.add((st.st_dev, st.st_ino))
        try:
            remove_stale_temps(dir_fd)
        except OSError:
            pass  # a directory that cannot be listed: the write itself says what is wrong


def write_atomic_at(dir_fd, name, data, mode=0o644, uid=None, gid=None, fsync=True):
    """Write ``data`` (bytes) as ``name`` in ``dir_fd``: a new temporary file (O_EXCL,
    O_NOFOLLOW) is written, fsync'ed (unless ``fsync=False``), given ``mode``/owner and renamed
    over ``name``. ``rename`` replaces a symlink planted at ``name`` instead of writing
    through it; a reader sees the old file or the new one, never a part (a process killed
    midway leaves at most a ``.npuops-*.tmp`` file, which readers skip, and which the first
    write into that directory by a later run removes once it is old: ``remove_stale_temps``)."""
    _sweep_once(dir_fd)
    tmp = temp_name()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
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


def write_in_place_at(dir_fd, name, data, path=None):
    """Write ``data`` (bytes) into the existing file ``name`` of ``dir_fd`` without replacing
    it (procfs files such as ``/proc/irq/N/smp_affinity_list`` cannot be renamed over): opened
    without following a link, it must be a regular file with one link (else UnsafePathError
    naming ``path``); truncated after the write where the file allows it (a plain file in a
    sandbox; procfs refuses: fine). OSError from the open or the write is passed on."""
    path = path or name
    fd = os.open(name, os.O_WRONLY | NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(path, "is not a regular file")
        if st.st_nlink > 1:
            raise UnsafePathError(
                path, "has %d hard links (refused: a link could lead outside host_root)" % st.st_nlink
            )
        os.write(fd, data)
        try:
            os.ftruncate(fd, len(data))
        except OSError:
            pass
    finally:
        os.close(fd)


def _ours(st):
    return st.st_uid in (0, os.geteuid())


def open_private_dir(path, mode=0o755, error=None, label=None):
    """fd of directory ``path`` to write files into that nobody else can change: created
    (``mode``, missing parents too) or verified.

    The path is walked from ``/`` one component at a time. A symlink on the way is followed
    only when it and the directory holding it belong to root or to this user and that
    directory is not writable by group or others, or is sticky (nobody else could have planted
    or replaced it); an
    existing last directory must belong to root or this user and not be writable by group or
    others. Refusals raise ``error(label, msg)`` (UnsafePathError by default).
    """
    error = error or UnsafePathError
    label = label or path
    if not isinstance(path, str) or not path or "\x00" in path:
        raise error(repr(path), "a directory path must be a non-empty string")
    parts = [p for p in os.path.normpath(os.path.abspath(path)).split("/") if p]
    fd = os.open("/", DIR_FLAGS)
    done = []
    links = 0
    try:
        while parts:
            part = parts.pop(0)
            try:
                nxt = os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
            except OSError as err:
                shown = "/" + "/".join(done + [part])
                if err.errno == errno.ENOENT:
                    try:
                        os.mkdir(part, 0o700, dir_fd=fd)
                    except OSError as mk_err:
                        if mk_err.errno != errno.EEXIST:
                            raise
                        parts.insert(0, part)  # someone else made it: look again
                        continue
                    nxt = os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
                    os.fchmod(nxt, mode)
                elif _dir_refusal(err, fd, part) == "symlink":
                    parent = os.fstat(fd)
                    link = lstat_at(fd, part)
                    # like fs.protected_symlinks: ours, in a directory only we can change (or a
                    # sticky one, where nobody else can replace our link)
                    shared = parent.st_mode & 0o022 and not parent.st_mode & stat.S_ISVTX
                    if link is None or not _ours(parent) or shared or not _ours(link):
                        raise error(label, "%s is a symlink others could have planted" % shown)
                    links += 1
                    if links > MAX_LINKS:
                        raise error(label, "too many symlinks resolving %s" % shown)
                    target = os.readlink(part, dir_fd=fd)
                    new = os.path.normpath(os.path.join("/" + "/".join(done), target))
                    parts = [p for p in new.split("/") if p] + parts
                    os.close(fd)
                    fd = os.open("/", DIR_FLAGS)
                    done = []
                    continue
                elif _dir_refusal(err, fd, part) == "notdir":
                    raise error(label, "%s is not a directory" % shown)
                else:
                    raise
            os.close(fd)
            fd = nxt
            done.append(part)
        st = os.fstat(fd)
        if not _ours(st) or st.st_mode & 0o022:
            raise error(
                label,
                "%s belongs to uid %d or is writable by others (mode %04o): "
                "not a safe place to write" % ("/" + "/".join(done), st.st_uid, stat.S_IMODE(st.st_mode)),
            )
        return fd
    except BaseException:
        os.close(fd)
        raise
