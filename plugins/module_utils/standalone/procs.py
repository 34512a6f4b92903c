# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The binder's view of a running vLLM instance, read from ``/proc`` (the ground truth on the
Linux hosts it runs on): the process tree under the service's main process, each process's
title and role, its threads and their names, CPU affinity, and memory migration.

vLLM titles its processes through setproctitle as ``<prefix>::<name>`` (prefix
``$VLLM_PROCESS_NAME_PREFIX``, default ``VLLM``): ``APIServer_<i>``, ``EngineCore`` /
``EngineCore_DP<r>``, ``DPCoordinator`` and the workers, ``Worker`` then
``Worker[_DP<d>][_PP<p>][_PCP<c>][_TP<t>][_DCP<k>][_EP<e>]`` (each part only when that group is
larger than 1; vllm/v1/executor/multiproc_executor.py). A worker is spawned as a plain
multiprocessing child (``python3``) and keeps that title until vLLM renames it. The title is
the first word of ``/proc/<pid>/cmdline``; ``comm`` holds its first 15 bytes. Every title and
number read here has a length bound: a process can set any title it likes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import time

COMM_LEN = 15  # TASK_COMM_LEN - 1: Linux cuts thread names to 15 characters
DEFAULT_PREFIX = "VLLM"
MAX_TITLE = 128  # longer first words of cmdline are no vLLM title
MAX_RANK_DIGITS = 4  # ranks above 9999 are refused, never int()ed
_PREFIX_RE = r"^[A-Za-z0-9_.-]{1,32}\Z"
_RANK = r"(?:_%s(\d{1,4}))?"
# the parts in vLLM's order (multiproc_executor.py: DP, PP, PCP, TP, DCP, EP)
WORKER_PARTS = ("DP", "PP", "PCP", "TP", "DCP", "EP")
_WORKER_TAIL = "Worker" + "".join(_RANK % part for part in WORKER_PARTS) + r"\Z"
_ENGINE_TAIL = r"EngineCore(?:_DP(\d{1,4}))?\Z"
PR_CAPBSET_DROP = 24
CAP_SYS_NICE = 23


def read(path, limit=1 << 16):
    """Text of a /proc file (at most ``limit`` bytes), or None when it is gone."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def stat_fields(pid):
    """``(ppid, starttime)`` of a process, or None when it is gone."""
    text = read("/proc/%d/stat" % pid)
    if not text or ")" not in text:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def all_pids():
    try:
        return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return []


_SPAWNERS = {}  # pid -> its threads seen with children at the last full walk


def children(pid, full=True):
    """Child pids of a process from ``/proc/<pid>/task/<tid>/children`` (CONFIG_PROC_CHILDREN),
    in the kernel's order; None when the kernel has no such file (then the caller scans).
    ``full=False`` reads only the main thread's file and those of the threads that had
    children at the last full walk: a worker of 100 threads costs 1-2 reads, not 100."""
    out = []
    found = False
    tids = threads(pid) if full else sorted(set([pid]) | _SPAWNERS.get(pid, set()))
    spawners = set()
    for tid in tids:
        text = read("/proc/%d/task/%d/children" % (pid, tid), 1 << 20)
        if text is None:
            continue
        found = True
        kids = [int(c) for c in text.split() if c.isdigit() and len(c) < 12]
        if kids:
            spawners.add(tid)
            out.extend(kids)
    if full:
        _SPAWNERS[pid] = spawners
    return out if found or not alive(pid) else None


def tree(root, full=True):
    """``(pids, parents)``: ``root`` and every process below it, parents before children, and
    each one's parent. Walks the children files (cheap on a host of thousands of processes);
    scans all of /proc only where the kernel has none. ``full``: see ``children``."""
    out, seen, parents, queue = [], set(), {root: None}, [root]
    index = None
    while queue:
        pid = queue.pop(0)
        if pid in seen:
            continue
        seen.add(pid)
        out.append(pid)
        kids = children(pid, full)
        if kids is None:
            if index is None:
                index = {}
                for other in all_pids():
                    fields = stat_fields(other)
                    if fields is not None:
                        index.setdefault(fields[0], []).append(other)
            kids = index.get(pid, [])
        for kid in kids:
            if kid not in parents:
                parents[kid] = pid
                queue.append(kid)
    if full:
        for gone in [p for p in _SPAWNERS if p not in seen]:
            del _SPAWNERS[gone]
    return out, dict((pid, parents.get(pid)) for pid in out)


def descendants(root):
    """``root`` and every process below it, parents before children."""
    return tree(root)[0]


def start_ticks(pid):
    """When a process started (clock ticks after boot), or None when it is gone."""
    fields = stat_fields(pid)
    return fields[1] if fields else None


def age(pid):
    """Seconds since a process started, or None when it is gone."""
    ticks = start_ticks(pid)
    uptime = read("/proc/uptime", 256)
    try:
        return float(uptime.split()[0]) - float(ticks) / os.sysconf("SC_CLK_TCK")
    except (AttributeError, IndexError, TypeError, ValueError, OSError):
        return None


def parent_pid(pid):
    fields = stat_fields(pid)
    return fields[0] if fields else None


def title(pid, prefix=DEFAULT_PREFIX):
    """The process title (setproctitle's first word of cmdline, when it carries the instance's
    ``<prefix>::``), else its comm; at most MAX_TITLE characters."""
    cmdline = read("/proc/%d/cmdline" % pid, 4096) or ""
    first = cmdline.split("\x00", 1)[0].strip()
    if first.startswith(prefix + "::"):
        return _printable(first.split()[0][: MAX_TITLE + 1])
    return _printable((read("/proc/%d/comm" % pid, 64) or "").strip())


def _printable(text):
    """A title as reports show it: control characters (a ``\\r`` a process put in its own
    comm) become ``?``."""
    return "".join("?" if ord(ch) < 32 or ord(ch) == 127 else ch for ch in text)


def worker_ranks(name, prefix=DEFAULT_PREFIX):
    """``{part: rank}`` of a worker title (``{}`` for a bare ``<prefix>::Worker``), else None.
    Bounded: a title longer than MAX_TITLE or a rank of more than 4 digits is no worker's."""
    if not name or len(name) > MAX_TITLE or not name.startswith(prefix + "::"):
        return None
    match = re.match(_WORKER_TAIL, name[len(prefix) + 2 :])
    if not match:
        return None
    return dict((part, int(value)) for part, value in zip(WORKER_PARTS, match.groups()) if value is not None)


def engine_rank(name, prefix=DEFAULT_PREFIX):
    """DP rank of an ``<prefix>::EngineCore[_DP<r>]`` title (0 without ``_DP``), else None."""
    if not name or len(name) > MAX_TITLE or not name.startswith(prefix + "::"):
        return None
    match = re.match(_ENGINE_TAIL, name[len(prefix) + 2 :])
    if not match:
        return None
    return int(match.group(1) or 0)


def worker_rank(name, prefix=DEFAULT_PREFIX):
    """TP rank of a worker title (0 when it has no ``_TP`` part), else None."""
    ranks = worker_ranks(name, prefix)
    return None if ranks is None else ranks.get("TP", 0)


def process_prefix(pid, limit=1 << 18):
    """``VLLM_PROCESS_NAME_PREFIX`` from a process's environment (``/proc/<pid>/environ``, at
    most ``limit`` bytes), DEFAULT_PREFIX when unset; None when it is set to something no
    title could start with (the caller says so)."""
    value = environ_value(pid, "VLLM_PROCESS_NAME_PREFIX", limit)
    if value is None:
        return DEFAULT_PREFIX
    return value if re.match(_PREFIX_RE, value) else None


def environ_value(pid, name, limit=1 << 18):
    """The value of variable ``name`` in a process's environment (``/proc/<pid>/environ``, at
    most ``limit`` bytes), None when it is unset or cannot be read."""
    text = read("/proc/%d/environ" % pid, limit)
    for item in (text or "").split("\x00"):
        if item.startswith(name + "="):
            return item.split("=", 1)[1]
    return None


def threads(pid):
    try:
        names = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []
    try:
        return sorted(map(int, names))  # the kernel lists thread ids only
    except ValueError:
        return sorted(int(t) for t in names if t.isdigit())


def thread_comm(pid, tid):
    return (read("/proc/%d/task/%d/comm" % (pid, tid)) or "").rstrip("\n")


def alive(pid):
    return os.path.isdir("/proc/%d" % pid)


def owner(pid):
    """``(uid, gid)`` of a process, or None."""
    try:
        info = os.stat("/proc/%d" % pid)
    except OSError:
        return None
    return info.st_uid, info.st_gid


def drop_sys_nice(uid=None, gid=None):
    """For a child before exec: without CAP_SYS_NICE, migrate_pages(2) moves only the pages the
    target maps alone (MPOL_MF_MOVE; the kernel's MPOL_MF_MOVE_ALL needs the capability), and
    the caller must then share the target's uid. Dropped from the bounding set, root keeps every
    other capability across exec."""
    if os.geteuid() != 0:
        return  # without root there is no CAP_SYS_NICE to drop and no uid to change
    import ctypes  # pylint: disable=import-outside-toplevel  # only here: a cheap reconcile run

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_SYS_NICE) failed")
    if gid is not None and gid != os.getgid():
        os.setgroups([])
        os.setresgid(gid, gid, gid)
    if uid is not None and uid != os.getuid():
        os.setresuid(uid, uid, uid)


MAX_RESPONSE_HEAD = 1 << 16  # status line and headers of a health answer
_NUMERIC_HOST_RE = r"^(?:[0-9.]+|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.%A-Za-z]*)\Z"
# the network modules load only where a ready URL is polled (a reconcile run has none)
socket = threading = None  # pylint: disable=invalid-name


def _network():
    global socket, threading  # pylint: disable=global-statement,invalid-name
    if socket is None:
        import socket as _socket  # pylint: disable=import-outside-toplevel
        import threading as _threading  # pylint: disable=import-outside-toplevel

        socket, threading = _socket, _threading


_RESOLVING = []  # the one name lookup that may still run past its deadline


def _resolve(host, port, deadline):
    """Addresses of ``host``: numeric ones and ``localhost`` without a lookup; any other name
    through getaddrinfo in a daemon thread given what is left of the deadline (getaddrinfo
    itself has no timeout). At most one lookup runs at a time: a wedged resolver costs one
    thread, never one per poll."""
    if re.match(_NUMERIC_HOST_RE, host):
        try:
            return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
        except (socket.gaierror, UnicodeError, ValueError):
            return []
    if host == "localhost":
        return socket.getaddrinfo("127.0.0.1", port, 0, socket.SOCK_STREAM)
    if any(t.is_alive() for t in _RESOLVING):
        return []
    del _RESOLVING[:]
    box = []

    def lookup():
        try:
            box.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
        except (socket.error, UnicodeError, ValueError):
            box.append([])

    worker = threading.Thread(target=lookup, name="npuops-resolve")
    worker.daemon = True
    _RESOLVING.append(worker)
    worker.start()
    worker.join(max(0.0, deadline - time.time()))
    return box[0] if box else []


def _status(sock, deadline):
    """The status code of the answer on ``sock``, reading at most MAX_RESPONSE_HEAD bytes of
    status line and headers before ``deadline``; None when it does not come in time."""
    head = b""
    while b"\r\n\r\n" not in head and b"\n\n" not in head:
        left = deadline - time.time()
        if left <= 0 or len(head) >= MAX_RESPONSE_HEAD:
            return None
        sock.settimeout(left)
        chunk = sock.recv(min(4096, MAX_RESPONSE_HEAD - len(head)))
        if not chunk:
            break
        head += chunk
    line = head.split(b"\n", 1)[0].split()
    if len(line) >= 2 and line[0].startswith(b"HTTP/") and line[1].isdigit() and len(line[1]) == 3:
        return int(line[1])
    return None


def ready(url, timeout=2.0):
    """True when ``url`` (the server's http(s) health endpoint) answers 200. One deadline,
    ``timeout`` seconds, covers name lookup, connect, TLS, the request and the status line and
    headers (at most MAX_RESPONSE_HEAD bytes): a server trickling bytes cannot keep it."""
    _network()
    from urllib.parse import urlsplit  # pylint: disable=import-outside-toplevel  # polls only

    deadline = time.time() + timeout
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    if any(ord(ch) <= 32 or ord(ch) >= 127 for ch in path + parts.hostname):
        return False
    for family, kind, proto, _name, address in _resolve(parts.hostname, port, deadline)[:4]:
        left = deadline - time.time()
        if left <= 0:
            return False
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(left)
            sock.connect(address)
            if parts.scheme == "https":
                import ssl  # pylint: disable=import-outside-toplevel

                context = ssl.create_default_context()
                sock.settimeout(max(0.001, deadline - time.time()))
                sock = context.wrap_socket(sock, server_hostname=parts.hostname)
            host = parts.hostname if ":" not in parts.hostname else "[%s]" % parts.hostname
            request = ("GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host)).encode("ascii")
            sock.settimeout(max(0.001, deadline - time.time()))
            sock.sendall(request)
            return _status(sock, deadline) == 200
        except (OSError, ValueError):  # socket.error, ssl.SSLError, ssl.CertificateError
            continue
        finally:
            sock.close()
    return False


_NODE_PAGES = r"\sN(\d{1,4})=(\d{1,15})"
_PAGE_SIZE = r"\skernelpagesize_kB=(\d{1,9})"


def memory_by_node(pid, limit=1 << 24):
    """``{node: bytes}`` of a process's resident pages, from ``/proc/<pid>/numa_maps`` (the
    ``N<node>=<pages>`` fields times ``kernelpagesize_kB``); None when it cannot be read."""
    text = read("/proc/%d/numa_maps" % pid, limit)
    if text is None:
        return None
    nodes = {}
    pages_re, size_re = re.compile(_NODE_PAGES), re.compile(_PAGE_SIZE)
    for line in text.splitlines():
        if " N" not in line:
            continue  # nothing resident
        size = size_re.search(line)
        page = int(size.group(1)) * 1024 if size else 4096
        for node, pages in pages_re.findall(line):
            nodes[int(node)] = nodes.get(int(node), 0) + int(pages) * page
    return nodes


def remote_ratio(nodes, home):
    """Share of a process's resident memory that is not on ``home`` (0.0 when it has none)."""
    total = sum(nodes.values())
    if not total or home is None:
        return 0.0
    return round(1.0 - float(nodes.get(home, 0)) / total, 6)
