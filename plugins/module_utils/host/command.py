# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running one command on the live host, bounded: ``run(argv, timeout)`` -> ``CommandResult``.

The command runs with LC_ALL=C, no shell, stdin from /dev/null, in its own session (so its
own process group). ``collect`` reads its output until both pipes close, and no longer than
the timeout: on a timeout, on output over ``MAX_OUTPUT`` bytes, or when the command exited
but a child it left behind still holds its pipes (``tool; sleep 600 &``), the whole process
group is killed and reading stops, and with it every process of the command seen while it ran
(``track_family``: a child that called ``setsid`` left the group but not the tree) and every
process that still holds its output pipes (``pipe_holders``). A call returns within ``timeout`` plus a fraction of a
second whatever the command does (hangs, floods, forks, closes its pipes and runs on).

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import selectors
import signal
import subprocess
import time

DEFAULT_TIMEOUT = 30


class CommandResult(object):
    """Outcome of one command: ``rc``, ``stdout``, ``stderr``; ``missing`` when the
    executable is not installed, ``timed_out`` when it was killed after the timeout, ``error``
    when it was killed for another reason of ours (output over the cap)."""

    __slots__ = ("argv", "rc", "stdout", "stderr", "missing", "timed_out", "seconds", "error")

    def __init__(self, argv, rc=0, stdout="", stderr="", missing=False, timed_out=False, seconds=0.0, error=None):
        self.argv = list(argv)
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.missing = missing
        self.timed_out = timed_out
        self.seconds = seconds
        self.error = error

    @property
    def key(self):
        return command_key(self.argv)

    @property
    def ok(self):
        return not self.missing and not self.timed_out and self.rc == 0 and not self.error

    def failure(self):
        """A one-line reason this command gave nothing usable, or None when it is ok."""
        if self.missing:
            return "command not found"
        if self.error:
            return self.error
        if self.timed_out:
            return "timed out after %.1fs" % self.seconds
        if self.rc != 0:
            err = (self.stderr or self.stdout or "").strip().splitlines()
            return "exit code %s%s" % (self.rc, (": " + err[-1][:200]) if err else "")
        return None


def command_key(argv):
    return " ".join(argv)


def _c_env():
    env = dict(os.environ)
    env.update({"LC_ALL": "C", "LANG": "C", "LC_MESSAGES": "C"})
    return env


# Largest output (per stream) a command may print before it is killed: npu-smi, lscpu and
# nvidia-smi print kilobytes; a tool that floods the pipe must not fill the module's memory.
MAX_OUTPUT = 8 * 1024 * 1024
# After the command itself exited, how long a child that inherited its output pipe may keep
# it open (``tool; sleep 600 &``) before the process group is killed and reading stops.
LINGER = 0.5
# How often the command's processes are looked up in /proc while it runs (track_family).
SCAN_EVERY = 0.1
# How long to wait for the killed process group's leader to be reaped.
REAP_WAIT = 2.0


def _exited(proc):
    """True when ``proc`` has exited, without reaping it: its pid (= the process group id)
    stays reserved, so killing the group afterwards cannot hit a recycled pid."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
    except (AttributeError, OSError):  # no waitid: poll (reaps; the group kill is best effort)
        return proc.poll() is not None


def _proc_table():
    """``{pid: (ppid, pgrp, session, starttime)}`` of every process in /proc ({} without it)."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as handle:
                text = handle.read(4096).decode("ascii", "replace")
        except (IOError, OSError):
            continue
        fields = text[text.rfind(")") + 2 :].split()  # after "pid (comm) ": comm may hold spaces
        if len(fields) > 19:
            table[int(name)] = (int(fields[1]), int(fields[2]), int(fields[3]), fields[19])
    return table


def track_family(leader, family):
    """Add to ``family`` ({pid: starttime}) every process of ``leader``'s session or process
    group and every descendant of one of them: a child that called ``setsid`` leaves the
    group, not the tree; seen once, it is killed with the group even after its parent exited."""
    table = _proc_table()
    for pid, (dummy_ppid, pgrp, session, start) in table.items():
        if leader in (pgrp, session) and pid not in family:
            family[pid] = start
    grown = True
    while grown:
        grown = False
        for pid, (ppid, dummy_pgrp, dummy_session, start) in table.items():
            if ppid in family and pid not in family and table.get(ppid, (0, 0, 0, None))[3] == family[ppid]:
                family[pid] = start
                grown = True
    return family


def pipe_holders(inodes):
    """``{pid: starttime}`` of the processes holding a pipe of ``inodes`` open: whoever holds
    the command's output pipes came from the command (setsid or not, parent gone or not)."""
    wanted = set("pipe:[%d]" % inode for inode in inodes)
    table = _proc_table()
    found = {}
    for pid in table:
        try:
            names = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, name)) in wanted:
                    found[pid] = table[pid][3]
                    break
            except OSError:
                continue
    found.pop(os.getpid(), None)
    return found


def _kill_group(proc, family=None, pipes=()):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # already gone
        pass
    if family is not None:
        track_family(proc.pid, family)
        family.update(pipe_holders(pipes))
        table = _proc_table()
        for pid, start in family.items():
            if pid != proc.pid and table.get(pid, (0, 0, 0, None))[3] == start:  # not a reused pid
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def _inodes(proc):
    inodes = []
    for stream in (proc.stdout, proc.stderr):
        try:
            inodes.append(os.fstat(stream.fileno()).st_ino)
        except (OSError, ValueError):
            pass
    return inodes


def collect(proc, timeout, limit=MAX_OUTPUT, track=True):
    """Read ``proc``'s stdout and stderr until both close, the deadline passes or one
    exceeds ``limit`` bytes. ``proc`` leads its own process group (``start_new_session``);
    on a timeout, an overflow, or when the leader exited but a child still holds the pipes
    after ``LINGER`` seconds, the whole group is killed and reading stops there, so the call
    returns within ``timeout`` plus a fraction of a second whatever the command does.

    ``track=False`` skips the /proc scans (``track_family``, ``pipe_holders``): the group is
    still killed and reading still stops at the deadline, but a child that left the group
    lives on (the binder: a scan of a busy host's /proc every 0.1 s would cost a reconcile
    pass more CPU than the pass itself).

    Returns ``(stdout bytes, stderr bytes, rc or None, timed_out, overflow)``.
    """
    start = time.monotonic()
    deadline = start + timeout
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    streams = {out_fd: [], err_fd: []}
    sizes = dict((fd, 0) for fd in streams)
    selector = selectors.DefaultSelector()
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    open_fds = set(streams)
    family = {} if track else None  # the command's processes seen so far: setsid children too
    timed_out = overflow = False
    exited_at = None
    kill = False
    try:
        scanned = None
        while open_fds:
            now = time.monotonic()
            if track and (scanned is None or now - scanned >= SCAN_EVERY):
                track_family(proc.pid, family)
                scanned = now
            if exited_at is None and _exited(proc):
                exited_at = now
            if now >= deadline:
                # the command itself finished in time: only a leftover child still writes
                timed_out = exited_at is None
                kill = True
                break
            wait = deadline - now
            if exited_at is not None:
                if now - exited_at >= LINGER:
                    kill = True  # the command is done; a leftover child holds its pipes
                    break
                wait = min(wait, exited_at + LINGER - now)
            else:
                wait = min(wait, 0.2)
            for key, _events in selector.select(wait):
                fd = key.fd
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    selector.unregister(fd)
                    open_fds.discard(fd)
                    continue
                sizes[fd] += len(chunk)
                if sizes[fd] > limit:
                    overflow = kill = True
                    break
                streams[fd].append(chunk)
            if overflow:
                break
    finally:
        selector.close()
        if kill:
            _kill_group(proc, family, _inodes(proc) if track else ())
        proc.stdout.close()
        proc.stderr.close()
    rc = None
    try:
        rc = proc.wait(timeout=max(0.0, deadline - time.monotonic()) if not kill else REAP_WAIT)
    except subprocess.TimeoutExpired:
        # the pipes closed but the command runs on: same as a timeout
        _kill_group(proc, track_family(proc.pid, family) if track else None)
        timed_out = True
        try:
            proc.wait(timeout=REAP_WAIT)
        except subprocess.TimeoutExpired:
            pass  # unkillable (uninterruptible sleep in a wedged driver): leave it
    return b"".join(streams[out_fd]), b"".join(streams[err_fd]), rc, timed_out, overflow


def run(argv, timeout=DEFAULT_TIMEOUT, track=True):
    """Run ``argv`` bounded by ``timeout`` seconds; a CommandResult, never an exception
    (``track``: see ``collect``)."""
    argv = list(argv)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=_c_env(),
            close_fds=True,
            start_new_session=True,
        )
    except (OSError, IOError, ValueError) as err:  # ValueError: a NUL in an argument
        if getattr(err, "errno", None) in (2, 13):  # ENOENT, EACCES: not runnable
            return CommandResult(argv, rc=127, missing=True, stderr=str(err))
        return CommandResult(argv, rc=126, stderr=str(err))
    out, err, rc, timed_out, overflow = collect(proc, timeout, track=track)
    seconds = time.monotonic() - start
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    if overflow:
        return CommandResult(
            argv,
            rc=-9,
            stdout="",
            stderr=stderr,
            seconds=seconds,
            error="output larger than %d MiB: killed" % (MAX_OUTPUT // (1024 * 1024)),
        )
    if timed_out:
        return CommandResult(argv, rc=-9, stdout=stdout, stderr=stderr, timed_out=True, seconds=seconds)
    return CommandResult(argv, rc=rc, stdout=stdout, stderr=stderr, seconds=seconds)
