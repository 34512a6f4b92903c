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
import shutil
import platform
import socket
import subprocess
import threading

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import check_components

DEFAULT_TIMEOUT = 30


class CommandResult(object):
    """Outcome of one command: ``rc``, ``stdout``, ``stderr``; ``missing`` when the
    executable is not installed, ``timed_out`` when it was killed after the timeout."""

    __slots__ = ("argv", "rc", "stdout", "stderr", "missing", "timed_out", "seconds")

    def __init__(self, argv, rc=0, stdout="", stderr="", missing=False, timed_out=False,
                 seconds=0.0):
        self.argv = list(argv)
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.missing = missing
        self.timed_out = timed_out
        self.seconds = seconds

    @property
    def key(self):
        return command_key(self.argv)

    @property
    def ok(self):
        return not self.missing and not self.timed_out and self.rc == 0

    def failure(self):
        """A one-line reason this command gave nothing usable, or None when it is ok."""
        if self.missing:
            return "command not found"
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


class LiveHostIO(HostIO):
    """The real host. ``host_root`` prefixes file reads (tests point it at a sandbox);
    commands always run on the real host with LC_ALL=C and a timeout."""

    def __init__(self, host_root="/"):
        self.host_root = host_root or "/"
        self.hostname = socket.gethostname()
        self.arch = platform.machine()

    def _real(self, path):
        check_components(path)
        if self.host_root in ("/", ""):
            return path
        return os.path.join(self.host_root, path.lstrip("/"))

    def read_text(self, path):
        try:
            with open(self._real(path), "rb") as handle:
                return handle.read().decode("utf-8", "replace")
        except (IOError, OSError):
            return None

    def listdir(self, path):
        try:
            return sorted(os.listdir(self._real(path)))
        except (IOError, OSError):
            return None

    def exists(self, path):
        """True when the path exists (a dangling link counts)."""
        return os.path.lexists(self._real(path))

    def realpath(self, path):
        real = self._real(path)
        if not os.path.lexists(real):
            return None
        resolved = os.path.realpath(real)
        if self.host_root in ("/", ""):
            return resolved
        root = os.path.realpath(self.host_root)
        if resolved == root:
            return "/"
        if resolved.startswith(root + os.sep):
            return resolved[len(root):]
        return None

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
        import time
        argv = list(argv)
        start = time.time()
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, env=_c_env(), close_fds=True)
        except (OSError, IOError) as err:
            if getattr(err, "errno", None) in (2, 13):  # ENOENT, EACCES: not runnable
                return CommandResult(argv, rc=127, missing=True, stderr=str(err))
            return CommandResult(argv, rc=126, stderr=str(err))
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return CommandResult(argv, rc=-9, stdout=out.decode("utf-8", "replace"),
                                 stderr=err.decode("utf-8", "replace"), timed_out=True,
                                 seconds=time.time() - start)
        return CommandResult(argv, rc=proc.returncode, stdout=out.decode("utf-8", "replace"),
                             stderr=err.decode("utf-8", "replace"),
                             seconds=time.time() - start)


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
