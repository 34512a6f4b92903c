# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HostIO: the one object through which every read of a host goes.

Four implementations share one interface:
- ``LiveHostIO``      reads the real host (files under ``host_root``, commands via subprocess);
- ``SnapshotHostIO``  replays a recorded host snapshot directory (``snapshot.py``);
- ``RecordingHostIO`` wraps a live one and remembers everything read, to save a snapshot;
- ``OverlayHostIO``   a sandbox root's files over a snapshot.
The first two read a directory tree through fds, written once in ``TreeHostIO``.

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
import shutil
import socket
import stat
import threading

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.host import command, paths, snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.host.command import (  # noqa: F401
    DEFAULT_TIMEOUT,
    CommandResult,
    command_key,
)
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import check_components


class HostIO(abc.ABC):
    """Interface. All paths are absolute host paths; all commands argv lists."""

    hostname = None
    arch = None

    @abc.abstractmethod
    def read_text(self, path, limit=None):
        """File contents as text, or None when the path does not exist / is unreadable; with
        ``limit``, at most the file's first ``limit`` bytes (nothing past them is read)."""

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
        """Absolute host path of an executable ``name`` (the usual system directories, through
        ``exists()``), or None when it is not installed."""
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


def _read_file(dir_fd, name, st, limit=None):
    """``paths.read_at`` of a file (its head only with ``limit``); a directory reads as absent."""
    return (
        (None, None)
        if stat.S_ISDIR(st.st_mode)
        else paths.read_at(dir_fd, name, limit or paths.MAX_FILE_BYTES, head=bool(limit))
    )


class TreeHostIO(HostIO):
    """A host whose files are a directory tree read through directory fds (a live root, a
    snapshot's ``fs/``): ``read_text``, ``listdir`` and ``exists`` are written once here; a
    subclass says where a path is (``_locate``), how a refused file (``_refused``) and an
    OSError (``_unreadable``) are reported and how on-disk names read (``_entries``)."""

    @abc.abstractmethod
    def _locate(self, path, follow=True):
        """``(dir_fd, name, lstat)`` of host path ``path``, or None when it is absent;
        ``name`` is None for ``/`` (``dir_fd`` is then the root itself). With ``follow``
        false the last component is not followed (a dangling link is found). The caller
        closes ``dir_fd``."""

    @abc.abstractmethod
    def _refused(self, path, problem):
        """A file ``paths.read_at`` refused (``problem``): raise, or return None (absent)."""

    @abc.abstractmethod
    def _unreadable(self, err):
        """An OSError while reading: raise, or return None (absent)."""

    def _entries(self, names):
        """The host names of a directory's on-disk ``names``, sorted."""
        return sorted(names)

    def _at(self, path, action):
        """``action(dir_fd, name, lstat)`` of the path located (``dir_fd`` closed after), None
        when it is absent; an OSError goes to ``_unreadable``."""
        found = self._locate(path)
        if found is None:
            return None
        try:
            return action(*found)
        except OSError as err:
            return self._unreadable(err)
        finally:
            os.close(found[0])

    def read_text(self, path, limit=None):
        data, problem = self._at(path, lambda *at: _read_file(*at, limit=limit)) or (None, None)
        if problem is not None:
            return self._refused(path, problem)
        return None if data is None else data.decode("utf-8", "replace")

    def listdir(self, path):
        return self._at(path, self._list)

    def _list(self, dir_fd, name, st):
        if not stat.S_ISDIR(st.st_mode):
            return None
        fd = os.dup(dir_fd) if name is None else os.open(name, paths.DIR_FLAGS | paths.NOFOLLOW, dir_fd=dir_fd)
        try:
            return self._entries(os.listdir(fd))
        finally:
            os.close(fd)

    def exists(self, path):
        found = self._locate(path, follow=False)
        if found is None:
            return False
        os.close(found[0])
        return True


class LiveHostIO(TreeHostIO):
    """The real host. ``host_root`` prefixes file reads (tests point it at a sandbox): every
    path is resolved below it as if it were ``/`` (symlinks included), a FIFO or device is
    never opened for reading and no file is read past ``paths.MAX_FILE_BYTES``. Commands
    always run on the real host with LC_ALL=C, in their own process group, under a timeout
    that bounds the whole call, output capped (``command.run``)."""

    def __init__(self, host_root="/"):
        self.host_root = paths.check_host_root(host_root)
        self.hostname = socket.gethostname()
        self.arch = platform.machine()

    def _resolve(self, path):
        """``(dir_fd, name, names)`` of host path ``path`` below host_root (see
        ``paths.resolve``), or None when a directory on the way does not resolve."""
        parts = check_components(path)
        top = self.host_root
        if top == "/" and len(parts) > 2 and parts[0] == "proc" and parts[1].isdigit() and parts[2] == "root":
            # a process's root (a container's): the kernel follows the link, its readlink text
            # would name this host's "/"; below it, paths resolve as chroot would see them
            top, parts = "/proc/%s/root" % parts[1], parts[3:]
        try:
            root = paths.open_root(top)
        except OSError:
            return None
        try:
            return paths.resolve(root, parts)
        except OSError:
            return None
        finally:
            os.close(root)

    def _locate(self, path, follow=True):
        parts = check_components(path)
        if follow or not parts:
            dir_fd, name = (self._resolve(path) or (None, None))[:2]
        else:
            dir_fd, name = self._parent_fd(parts[:-1]), parts[-1]
        if dir_fd is None:
            return None
        try:
            st = os.fstat(dir_fd) if name is None else paths.lstat_at(dir_fd, name)
        except OSError:
            st = None
        if st is None:
            os.close(dir_fd)
            return None
        return dir_fd, name, st

    def _parent_fd(self, parts):
        """fd of the directory ``parts`` resolves to, or None."""
        found = self._resolve("/" + "/".join(parts))
        if found is None:
            return None
        dir_fd, name, _names = found
        if name is None:
            return dir_fd
        try:
            return os.open(name, paths.DIR_FLAGS | paths.NOFOLLOW, dir_fd=dir_fd)
        except OSError:
            return None
        finally:
            os.close(dir_fd)

    def _refused(self, path, problem):
        if problem.startswith("is larger"):
            raise InputError(path, problem)
        return None  # a symlink, FIFO or device under the root reads as absent

    def _unreadable(self, err):
        return None

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
        return command.run(argv, timeout)


def _normalise(path):
    """A safe absolute host path (no '.', '..', duplicate slashes); raises UnsafePathError."""
    return "/" + "/".join(check_components(path))


class SnapshotHostIO(TreeHostIO):
    """Replays a recorded host snapshot directory (format: ``snapshot.py``).

    Files come from ``<dir>/fs/<host path>`` (absent = absent on that host; names escaped as
    ``snapshot.fs_name`` says, an unescaped old-style name still found); commands from
    ``snapshot.yml`` ``commands`` (absent or ``missing: true`` = not installed); ``realpath``
    from ``links``; ``which`` from ``tools``; ``getenv`` from ``env``. Nothing outside the
    directory is ever read: a symlink, FIFO or device below it raises SnapshotError.
    """

    def __init__(self, directory):
        self.directory = directory
        self.data = snapshot.load(directory)
        self.fs_root = os.path.join(directory, snapshot.FS_DIR)
        self.hostname = self.data["hostname"]
        self.arch = self.data["arch"]

    def _locate(self, path, follow=True):
        """See ``TreeHostIO._locate``; ``dir_fd`` of ``/`` is ``fs/``. Nothing is followed: a
        symlink in the snapshot raises SnapshotError."""
        parts = check_components(path)
        escaped = [snapshot.fs_name(p) for p in parts]
        candidates = [escaped] if escaped == parts else [escaped, parts]
        try:
            fs_fd = snapshot._open_under(self.directory, [snapshot.FS_DIR], "snapshot path")
        except OSError:
            return None
        try:
            if not parts:
                found, fs_fd = (fs_fd, None, os.fstat(fs_fd)), None
                return found
            for cand in candidates:
                try:
                    dir_fd = paths.open_dirs(fs_fd, cand[:-1], path, error=snapshot._error, prefix=self.fs_root + "/")
                except (OSError, IOError):
                    continue
                st = paths.lstat_at(dir_fd, cand[-1])
                if st is None:
                    os.close(dir_fd)
                    continue
                if stat.S_ISLNK(st.st_mode):
                    os.close(dir_fd)
                    raise snapshot.SnapshotError("%s/%s: symlink in snapshot refused" % (self.fs_root, "/".join(cand)))
                return dir_fd, cand[-1], st
            return None
        finally:
            paths.close(fs_fd)

    def _refused(self, path, problem):
        raise snapshot.SnapshotError("%s%s: %s (refused)" % (self.fs_root, path, problem))

    def _unreadable(self, err):
        raise err

    def _entries(self, names):
        return sorted(set(snapshot.host_name(n) for n in names if not snapshot.hidden(n)))

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
        return CommandResult(
            argv,
            rc=entry["rc"],
            stdout=entry["stdout"],
            stderr=entry["stderr"],
            timed_out=entry["timed_out"],
            seconds=entry["seconds"],
        )


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

    def read_text(self, path, limit=None):
        return self._note(self.files, _normalise(path), self.inner.read_text(path, limit))

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

    def replayed(self):
        """The snapshot directory this recording reads from, or None (a live host)."""
        inner = self.inner
        while inner is not None and not isinstance(inner, SnapshotHostIO):
            inner = getattr(inner, "base", None)
        return inner.directory if inner is not None else None

    def save(self, directory, captured_at=None, overwrite=True):
        """Write everything recorded so far as a snapshot directory (never into the snapshot
        being replayed; into a non-empty one only with ``overwrite``:
        ``snapshot.check_destination``)."""
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
            # killed for its output size: replayed as a failure that says so
            stderr = res.stderr if not res.error else (res.stderr + "\nnpuops: " + res.error).strip()
            commands[key] = {
                "rc": res.rc,
                "stdout": res.stdout,
                "stderr": stderr,
                "missing": res.missing,
                "timed_out": res.timed_out,
                "seconds": res.seconds,
            }
        tools = dict(self.tools)
        snapshot.save(
            directory,
            hostname=self.hostname,
            arch=self.arch,
            captured_at=captured_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            env=dict((k, v) for k, v in self.env.items() if v is not None),
            commands=commands,
            links=links,
            tools=tools,
            files=files,
            dirs=dirs,
            overwrite=overwrite,
            replayed=self.replayed(),
        )


class OverlayHostIO(HostIO):
    """A recorded snapshot seen through a sandbox root: a file or directory present under
    ``root`` (one a play wrote there, such as the irqbalance bans) wins over the snapshot's;
    commands, links, environment and tools come from the snapshot. The demo and the tests read
    back what ``site.yml`` changed in a sandbox this way."""

    def __init__(self, base, root):
        self.base = base
        self.top = LiveHostIO(root)
        self.hostname = base.hostname
        self.arch = base.arch

    def read_text(self, path, limit=None):
        text = self.top.read_text(path, limit)
        return text if text is not None else self.base.read_text(path, limit)

    def listdir(self, path):
        top, base = self.top.listdir(path), self.base.listdir(path)
        if top is None and base is None:
            return None
        return sorted(set(top or []) | set(base or []))

    def exists(self, path):
        return self.top.exists(path) or self.base.exists(path)

    def realpath(self, path):
        return self.base.realpath(path)

    def getenv(self, name):
        return self.base.getenv(name)

    def which(self, name):
        return self.base.which(name)

    def run(self, argv, timeout=DEFAULT_TIMEOUT):
        return self.base.run(argv, timeout)
