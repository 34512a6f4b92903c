# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one lock of a shared host file: ``.<name>.lock`` beside it, held with ``flock``.

Every read-merge-write of a file several runs share (the IRQ state file every instance's
``npu_irq_affinity`` run merges into, the irqbalance environment file they all add bans to)
and every reader that must see a write and its record as one step (the binder's IRQ reconcile
pass) takes this lock: ``apply/fileops.exclusive`` under a ``host_root`` for the modules,
``standalone/irqs`` on the live host for the binder.

- the lock file is opened relative to its directory's fd, never through a symlink, and must
  be a regular single-link file;
- ``hold`` polls a non-blocking ``flock`` until ``timeout``: a lock held longer is an error
  naming the lock file, never a wait without end; ``shared`` takes a reader's lock (several
  readers at once, never while a writer holds it).

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import os
import stat
import time

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, UnsafePathError

POLL_SECONDS = 0.05


class LockTimeout(NpuopsError):
    """The lock was held by another run for longer than the caller waits."""


def lock_name(name):
    """The lock file's name for the shared file ``name`` (in the same directory)."""
    return ".%s.lock" % name


def open_lock_at(dir_fd, name, label, create=True):
    """fd of the lock file ``name`` in ``dir_fd`` (``label``: its path, for errors). A writer
    (``create``) makes it (mode 0600); a reader takes it as it is, and gets None when there is
    none or it may not open it (no writer has used this file yet, or the reader is not root).
    A symlink, a file that is not regular or has more than one link is refused
    (UnsafePathError)."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags | (os.O_RDWR | os.O_CREAT if create else os.O_RDONLY), 0o600, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafePathError(label, "is a symlink (refused)")
        if create or err.errno not in (errno.ENOENT, errno.EACCES, errno.EPERM):
            raise
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(label, "is not a regular file")
        if st.st_nlink > 1:
            raise UnsafePathError(
                label, "has %d hard links (refused: a link could lead outside host_root)" % st.st_nlink
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def hold(fd, label, path, timeout, shared=False):
    """Take the ``flock`` of lock fd ``fd`` (exclusive, or ``shared``) within ``timeout``
    seconds; LockTimeout naming ``label`` (the lock file) and ``path`` (the file it guards)
    otherwise. Closing the last fd of the lock releases it."""
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            raise LockTimeout(
                "%s: another run has held this lock for over %g s (a run still "
                "writing %s, or a hung one: find it with fuser)" % (label, timeout, path)
            )
        time.sleep(POLL_SECONDS)
