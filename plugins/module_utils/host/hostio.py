# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HostIO: the one object through which every read of a host goes.

Three implementations share one interface:
- ``LiveHostIO``      reads the real host (files under ``host_root``, commands via subprocess);
- ``SnapshotHostIO``  replays a recorded host snapshot directory (``snapshot.py``);
- ``RecordingHostIO`` wraps a live one and remembers everything read, to save a snapshot.

Parsers never see a HostIO: they take text. ``topology.gather(io)`` is the only consumer
that walks a host.

Paths are absolute host paths (``/proc/self/status``); commands are argv lists, never a
shell string. A command's key in a snapshot is ``" ".join(argv)``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import abc
import os
import platform
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.host import paths, snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import check_components

DEFAULT_TIMEOUT = 30


class CommandResult(object):
    """Outcome of one command: ``rc``, ``stdout``, ``stderr``; ``missing`` when the
    executable is not installed, ``timed_out`` when it was killed after the timeout, ``error``
    when it was killed for another reason of ours (output over the cap)."""

    __slots__ = ("argv", "rc", "stdout", "stderr", "missing", "timed_out", "seconds", "error")

    def __init__(self, argv, rc=0, stdout="", stderr="", missing=False, timed_out=False,
                 seconds=0.0, error=None):
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


class HostIO(abc.ABC):
    """Interface. All paths are absolute host paths; all commands argv lists."""

    hostname = None
    arch = None

    @abc.abstractmethod
    def read_text(self, path):
        """File contents as text, or None when the path does not exist / is unreadable."""

    @abc.abstractmethod
    def listdir(self, path):
        """Sorted entry names of a directory, or None when it does not exist."""

    @abc.abstractmethod
    def exists(self, path):
        """True when the path exists (a dangling link counts)."""

    @abc.abstractmethod
    def realpath(self, path):
        """Resolved absolute host path (sysfs class links -> device dirs), or None."""

    @abc.abstractmethod
    def getenv(self, name):
        """An environment variable of the host (the module's environment), or None."""

    @abc.abstractmethod
    def run(self, argv, timeout=DEFAULT_TIMEOUT):
        """Run one command (LC_ALL=C, no shell); returns a CommandResult, never raises."""

    # Where tools live on Ascend/NVIDIA hosts even when the module's PATH is minimal.
    TOOL_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

    def which(self, name):
        """Absolute host path of an executable ``name``, or None when it is not installed.

        The default looks in the usual system directories through ``exists()``.
        """
        for directory in self.TOOL_DIRS:
            path = directory + "/" + name
            if self.exists(path):
                return path
        return None

    def run_many(self, argvs, timeout=DEFAULT_TIMEOUT):
        """Run several commands concurrently, each under ``timeout``; results in order.

        The wall time is that of the slowest command, not the sum: npu-smi calls take
        0.5-2 s each on real hosts.
        """
        argvs = [list(a) for a in argvs]
        results = [None] * len(argvs)
        if len(argvs) <= 1:
            return [self.run(a, timeout) for a in argvs]

        def worker(index, argv):
            results[index] = self.run(argv, timeout)

        threads = [threading.Thread(target=worker, args=(i, a)) for i, a in enumerate(argvs)]
        for thread in threads:
            thread.daemon = True
            thread.start()
        for thread in threads:
            thread.join()
        return results


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


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # already gone
        pass


def collect(proc, timeout, limit=MAX_OUTPUT):
    """Read ``proc``'s stdout and stderr until both close, the deadline passes or one
    exceeds ``limit`` bytes. ``proc`` leads its own process group (``start_new_session``);
    on a timeout, an overflow, or when the leader exited but a child still holds the pipes
    after ``LINGER`` seconds, the whole group is killed and reading stops there, so the call
    returns within ``timeout`` plus a fraction of a second whatever the command does.

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
    timed_out = overflow = False
    exited_at = None
    kill = False
    try:
        while open_fds:
            now = time.monotonic()
            if now >= deadline:
                timed_out = kill = True
                break
            if exited_at is None and _exited(proc):
                exited_at = now
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
            _kill_group(proc)
        proc.stdout.close()
        proc.stderr.close()
    rc = None
    try:
        rc = proc.wait(timeout=max(0.0, deadline - time.monotonic()) if not kill else REAP_WAIT)
    except subprocess.TimeoutExpired:
        # the pipes closed but the command runs on: same as a timeout
        _kill_group(proc)
        timed_out = True
        try:
            proc.wait(timeout=REAP_WAIT)
        except subprocess.TimeoutExpired:
            pass  # unkillable (uninterruptible sleep in a wedged driver): leave it
    return b"".join(streams[out_fd]), b"".join(streams[err_fd]), rc, timed_out, overflow


class LiveHostIO(HostIO):
    """The real host. ``host_root`` prefixes file reads (tests point it at a sandbox): every
    path is resolved below it as if it were ``/`` (symlinks included), a FIFO or device is
    never opened for reading and no file is read past ``paths.MAX_FILE_BYTES``. Commands
    always run on the real host with LC_ALL=C, in their own process group, under a timeout
    that bounds the whole call (see ``collect``), output capped at ``MAX_OUTPUT`` bytes."""

    def __init__(self, host_root="/"):
        self.host_root = host_root or "/"
        self.hostname = socket.gethostname()
        self.arch = platform.machine()

    def _resolve(self, path):
        """``(dir_fd, name, names)`` of host path ``path`` below host_root (see
        ``paths.resolve``), or None when a directory on the way does not resolve."""
        parts = check_components(path)
        try:
            root = paths.open_root(self.host_root)
        except OSError:
            return None
        try:
            return paths.resolve(root, parts)
        except OSError:
            return None
        finally:
            os.close(root)

    def read_text(self, path):
        found = self._resolve(path)
        if found is None:
            return None
        dir_fd, name, _names = found
        try:
            if name is None:
                return None
            data, problem = paths.read_at(dir_fd, name)
        except OSError:
            return None
        finally:
            os.close(dir_fd)
        if problem is not None and problem.startswith("is larger"):
            raise InputError(path, problem)
        return None if data is None else data.decode("utf-8", "replace")

    def listdir(self, path):
        found = self._resolve(path)
        if found is None:
            return None
        dir_fd, name, _names = found
        try:
            if name is None:
                return sorted(os.listdir(dir_fd))
            fd = os.open(name, paths.DIR_FLAGS | paths.NOFOLLOW, dir_fd=dir_fd)
            try:
                return sorted(os.listdir(fd))
            finally:
                os.close(fd)
        except OSError:
            return None
        finally:
            os.close(dir_fd)

    def exists(self, path):
        """True when the path exists (a dangling link counts)."""
        parts = check_components(path)
        if not parts:
            return os.path.isdir(self.host_root)
        parent = self._resolve("/" + "/".join(parts[:-1]))
        if parent is None:
            return False
        dir_fd, name, _names = parent
        try:
            if name is not None:
                try:
                    fd = os.open(name, paths.DIR_FLAGS | paths.NOFOLLOW, dir_fd=dir_fd)
                except OSError:
                    return False
                os.close(dir_fd)
                dir_fd = fd
            return paths.lstat_at(dir_fd, parts[-1]) is not None
        finally:
            os.close(dir_fd)

    def realpath(self, path):
        found = self._resolve(path)
        if found is None:
            return None
        dir_fd, name, names = found
        try:
            if name is None:
                return "/"
            if paths.lstat_at(dir_fd, name) is None:
                return None
        finally:
            os.close(dir_fd)
        return "/" + "/".join(names + [name])

    def getenv(self, name):
        return os.environ.get(name)

    def which(self, name):
        """PATH lookup on the real host, then the usual system directories."""
        found = shutil.which(name)
        if found:
            return found
        for directory in self.TOOL_DIRS:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
        return None

    def run(self, argv, timeout=DEFAULT_TIMEOUT):
        argv = list(argv)
        start = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, env=_c_env(), close_fds=True,
                                    start_new_session=True)
        except (OSError, IOError) as err:
            if getattr(err, "errno", None) in (2, 13):  # ENOENT, EACCES: not runnable
                return CommandResult(argv, rc=127, missing=True, stderr=str(err))
            return CommandResult(argv, rc=126, stderr=str(err))
        out, err, rc, timed_out, overflow = collect(proc, timeout)
        seconds = time.monotonic() - start
        stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        if overflow:
            return CommandResult(argv, rc=-9, stdout="", stderr=stderr, seconds=seconds,
                                 error="output larger than %d MiB: killed"
                                 % (MAX_OUTPUT // (1024 * 1024)))
        if timed_out:
            return CommandResult(argv, rc=-9, stdout=stdout, stderr=stderr, timed_out=True,
                                 seconds=seconds)
        return CommandResult(argv, rc=rc, stdout=stdout, stderr=stderr, seconds=seconds)


def _normalise(path):
    """A safe absolute host path (no '.', '..', duplicate slashes); raises UnsafePathError."""
    return "/" + "/".join(check_components(path))


class SnapshotHostIO(HostIO):
    """Replays a recorded host snapshot directory (format: ``snapshot.py``).

    Files come from ``<dir>/fs/<host path>`` (absent = absent on that host); commands from
    ``snapshot.yml`` ``commands`` (absent or ``missing: true`` = not installed); ``realpath``
    from ``links``; ``which`` from ``tools``; ``getenv`` from ``env``.
    """

    def __init__(self, directory):
        self.directory = directory
        self.data = snapshot.load(directory)
        self.fs_root = os.path.join(directory, snapshot.FS_DIR)
        self.hostname = self.data["hostname"]
        self.arch = self.data["arch"]

    def _real(self, path):
        path = _normalise(path)
        if path == "/":
            return self.fs_root
        real = snapshot.inside(self.fs_root, path.lstrip("/"), "snapshot path")
        # A symlink inside the snapshot could point outside it: refuse to follow any.
        cur = self.fs_root
        for part in path.lstrip("/").split("/"):
            cur = os.path.join(cur, part)
            if os.path.islink(cur):
                raise snapshot.SnapshotError("%s: symlink in snapshot refused" % cur)
        return real

    def read_text(self, path):
        real = self._real(path)
        if not os.path.isfile(real):
            return None
        with open(real, "rb") as handle:
            return handle.read().decode("utf-8", "replace")

    def listdir(self, path):
        real = self._real(path)
        if not os.path.isdir(real):
            return None
        return sorted(n for n in os.listdir(real) if n != snapshot.KEEP)

    def exists(self, path):
        return os.path.lexists(self._real(path))

    def realpath(self, path):
        path = _normalise(path)
        links = self.data["links"]
        # Resolve the longest recorded link that is a prefix of the path (component-wise).
        parts = path.split("/")
        for cut in range(len(parts), 1, -1):
            prefix = "/".join(parts[:cut])
            if prefix in links:
                rest = "/".join(parts[cut:])
                target = links[prefix]
                return target + ("/" + rest if rest else "")
        return path if self.exists(path) else None

    def getenv(self, name):
        return self.data["env"].get(name)

    def which(self, name):
        return self.data["tools"].get(name)

    def run(self, argv, timeout=DEFAULT_TIMEOUT):
        argv = list(argv)
        entry = self.data["commands"].get(command_key(argv))
        if entry is None or entry["missing"]:
            return CommandResult(argv, rc=127, missing=True)
        return CommandResult(argv, rc=entry["rc"], stdout=entry["stdout"], stderr=entry["stderr"],
                             timed_out=entry["timed_out"], seconds=entry["seconds"])


class RecordingHostIO(HostIO):
    """Wraps another HostIO and remembers every answer, so ``save(dir)`` writes a snapshot
    that replays exactly what was read."""

    def __init__(self, inner):
        self.inner = inner
        self.hostname = inner.hostname
        self.arch = inner.arch
        self._lock = threading.Lock()
        self.files = {}
        self.dirs = {}
        self.exist = {}
        self.links = {}
        self.env = {}
        self.tools = {}
        self.commands = {}

    def _note(self, table, key, value):
        with self._lock:
            table[key] = value
        return value

    def read_text(self, path):
        return self._note(self.files, _normalise(path), self.inner.read_text(path))

    def listdir(self, path):
        return self._note(self.dirs, _normalise(path), self.inner.listdir(path))

    def exists(self, path):
        return self._note(self.exist, _normalise(path), self.inner.exists(path))

    def realpath(self, path):
        return self._note(self.links, _normalise(path), self.inner.realpath(path))

    def getenv(self, name):
        return self._note(self.env, name, self.inner.getenv(name))

    def which(self, name):
        return self._note(self.tools, name, self.inner.which(name))

    def run(self, argv, timeout=DEFAULT_TIMEOUT):
        result = self.inner.run(argv, timeout)
        self._note(self.commands, command_key(argv), result)
        return result

    def save(self, directory, captured_at=None):
        """Write everything recorded so far as a snapshot directory."""
        import time
        files = dict((p, t) for p, t in self.files.items() if t is not None)
        dirs = set(p for p, names in self.dirs.items() if names is not None)
        known = set(files) | dirs

        def has_children(path):
            prefix = path.rstrip("/") + "/"
            return any(k.startswith(prefix) for k in known)

        # Entries listed or seen to exist but never read: empty placeholders.
        extra = []
        for path, names in self.dirs.items():
            for name in names or ():
                extra.append(path.rstrip("/") + "/" + name)
        extra.extend(p for p, found in self.exist.items() if found)
        extra.extend(p for p, resolved in self.links.items() if resolved == p)
        for path in extra:
            if path not in known and not has_children(path):
                files[path] = ""
        links = dict((p, r) for p, r in self.links.items() if r is not None and r != p)
        commands = {}
        for key, res in self.commands.items():
            commands[key] = {"rc": res.rc, "stdout": res.stdout, "stderr": res.stderr,
                             "missing": res.missing, "timed_out": res.timed_out,
                             "seconds": res.seconds}
        tools = dict(self.tools)
        snapshot.save(directory, hostname=self.hostname, arch=self.arch,
                      captured_at=captured_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      env=dict((k, v) for k, v in self.env.items() if v is not None),
                      commands=commands, links=links, tools=tools, files=files, dirs=dirs)
