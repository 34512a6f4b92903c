# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The binder's view of a running vLLM instance, read from ``/proc`` (the ground truth on the
Linux hosts it runs on): the process tree under the service's main process, each process's
title and role, its threads and their names, CPU affinity, and memory migration.

vLLM renames its processes with setproctitle: ``VLLM::APIServer`` (``_<n>``), ``VLLM::EngineCore``
(``_DP<n>``), ``VLLM::Worker_TP<n>`` (``_PP``/``_DP`` variants), a DP coordinator. The title is
the first word of ``/proc/<pid>/cmdline``; ``comm`` holds its first 15 bytes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ctypes
import os
import re

try:
    from http.client import HTTPConnection, HTTPSConnection
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2, which the binder does not support
    HTTPConnection = HTTPSConnection = urlsplit = None

COMM_LEN = 15  # TASK_COMM_LEN - 1: Linux cuts thread names to 15 characters
# a plain tensor-parallel worker; with _PP/_DP parts the local index needs the sizes, so those
# workers are matched by the tools' memory tables instead
_WORKER_RE = re.compile(r"^VLLM::Worker_TP(\d+)\Z")
_FRONTEND_PREFIXES = ("VLLM::APIServer", "VLLM::EngineCore", "VLLM::DPCoordinator",
                      "VLLM::EngineCor", "VLLM::APIServ")
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
    fields = text[text.rindex(")") + 2:].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def all_pids():
    try:
        return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return []


def descendants(root):
    """``root`` and every process below it, parents before children."""
    children = {}
    for pid in all_pids():
        fields = stat_fields(pid)
        if fields is not None:
            children.setdefault(fields[0], []).append(pid)
    out, queue = [], [root]
    while queue:
        pid = queue.pop(0)
        if pid in out:
            continue
        out.append(pid)
        queue.extend(children.get(pid, []))
    return out


def parent_pid(pid):
    fields = stat_fields(pid)
    return fields[0] if fields else None


def title(pid):
    """The process title (setproctitle's first word of cmdline), else its comm."""
    cmdline = read("/proc/%d/cmdline" % pid) or ""
    first = cmdline.split("\x00", 1)[0].strip()
    if first.startswith("VLLM::"):
        return first.split()[0]
    return (read("/proc/%d/comm" % pid) or "").strip()


def worker_rank(name):
    """TP rank of a ``VLLM::Worker..._TP<n>`` title, else None."""
    match = _WORKER_RE.match(name or "")
    return int(match.group(1)) if match else None


def is_frontend_title(name):
    return (name or "").startswith(_FRONTEND_PREFIXES)


def threads(pid):
    try:
        return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid) if t.isdigit())
    except OSError:
        return []


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
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_SYS_NICE) failed")
    if gid is not None and gid != os.getgid():
        os.setgroups([])
        os.setresgid(gid, gid, gid)
    if uid is not None and uid != os.getuid():
        os.setresuid(uid, uid, uid)


def ready(url, timeout=2.0):
    """True when ``url`` (the server's http(s) health endpoint) answers 200. Plain http.client:
    the binder runs without Ansible's own URL helpers."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    connection = (HTTPSConnection if parts.scheme == "https" else HTTPConnection)(
        parts.hostname, parts.port, timeout=timeout)
    try:
        connection.request("GET", parts.path or "/")
        return connection.getresponse().status == 200
    except Exception:  # pylint: disable=broad-except
        return False
    finally:
        connection.close()


def memory_by_node(pid, limit=1 << 24):
    """``{node: bytes}`` of a process's resident pages, from ``/proc/<pid>/numa_maps`` (the
    ``N<node>=<pages>`` fields times ``kernelpagesize_kB``); None when it cannot be read."""
    text = read("/proc/%d/numa_maps" % pid, limit)
    if text is None:
        return None
    nodes = {}
    for line in text.splitlines():
        page_kb = 4
        counts = []
        for field in line.split()[2:]:
            key, _sep, value = field.partition("=")
            if key == "kernelpagesize_kB" and value.isdigit():
                page_kb = int(value)
            elif key[:1] == "N" and key[1:].isdigit() and value.isdigit():
                counts.append((int(key[1:]), int(value)))
        for node, pages in counts:
            nodes[node] = nodes.get(node, 0) + pages * page_kb * 1024
    return nodes


def remote_ratio(nodes, home):
    """Share of a process's resident memory that is not on ``home`` (0.0 when it has none)."""
    total = sum(nodes.values())
    if not total or home is None:
        return 0.0
    return round(1.0 - float(nodes.get(home, 0)) / total, 6)
