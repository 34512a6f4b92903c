# -*- coding: utf-8 -*-
"""Helpers of the real-vLLM tier (tests/real/vllm, run by scripts/real-vllm-tier.sh).

- ``tree(root)``: every process below ``root`` (itself included) read from /proc: pid, ppid,
  title (setproctitle's first word of cmdline), comm, and each thread's ``Cpus_allowed_list``
- ``Sampler``: a background thread that records the main thread's mask, the title and the
  parent of every process of the tree once a second while vLLM starts (the pre-title window)
- ``worker_device(proc, by_pid, sizes, devices)``: the test's own oracle of which device a real
  vLLM worker serves, from its title and its EngineCore's (independent of the binder's code)
- ``kill_session(pid)``: SIGTERM then SIGKILL to a whole process group, and to any descendant
  that left it
- ``table(rows)``: the read-back table the tier prints
"""

import os
import re
import signal
import socket
import threading
import time

# VLLM::Worker[_DP<r>][_PP<r>][_PCP<r>][_TP<r>][_DCP<r>][_EP<r>] (vllm/v1/executor/
# multiproc_executor.py), under $VLLM_PROCESS_NAME_PREFIX (default VLLM)
WORKER_TITLE = re.compile(r"^(?P<prefix>[A-Za-z0-9_.-]{1,64})::Worker(?:_DP(?P<dp>\d{1,4}))?"
                          r"(?:_PP(?P<pp>\d{1,4}))?(?:_PCP(?P<pcp>\d{1,4}))?(?:_TP(?P<tp>\d{1,4}))?"
                          r"(?:_DCP(?P<dcp>\d{1,4}))?(?:_EP(?P<ep>\d{1,4}))?\Z")
ENGINE_TITLE = re.compile(r"^[A-Za-z0-9_.-]{1,64}::EngineCore(?:_DP(?P<dp>\d{1,4}))?\Z")


def read(path, binary=False):
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 16)
    except OSError:
        return None
    return data if binary else data.decode("utf-8", "replace")


def title_of(pid):
    cmdline = read("/proc/%d/cmdline" % pid, binary=True)
    if not cmdline:
        return (read("/proc/%d/comm" % pid) or "").strip()
    first = cmdline.split(b"\0", 1)[0].decode("utf-8", "replace").strip()
    first = first.split()[0] if first.split() else first
    return os.path.basename(first) if first.startswith("/") else first


def ppid_of(pid):
    stat = read("/proc/%d/stat" % pid)
    if not stat:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def allowed(pid, tid):
    status = read("/proc/%d/task/%d/status" % (pid, tid)) or ""
    for line in status.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    return None


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = ppid_of(int(entry))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if os.path.isdir("/proc/%d" % pid):
            out.append(pid)
        todo.extend(sorted(children.get(pid, ()), reverse=True))
    return out


def tree(root):
    """Every live process below root with its threads' masks; processes that end meanwhile
    are left out."""
    procs = []
    for pid in descendants(root):
        try:
            tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
        except OSError:
            continue
        threads = []
        for tid in tids:
            mask = allowed(pid, tid)
            if mask is not None:
                threads.append((tid, (read("/proc/%d/task/%d/comm" % (pid, tid)) or "").strip(),
                                mask))
        if threads:
            procs.append({"pid": pid, "ppid": ppid_of(pid), "title": title_of(pid),
                          "comm": (read("/proc/%d/comm" % pid) or "").strip(),
                          "threads": threads})
    return procs


def worker_device(proc, by_pid, sizes, devices):
    """The device a worker process serves, or None when ``proc`` is no worker: local rank =
    dp_local x pp x tp + pp x tp + tp (vllm/utils/numa_utils.py), in the instance's device
    order. A dense model's DP worker has no _DP part: its rank is its EngineCore_DP<r>'s."""
    match = WORKER_TITLE.match(proc["title"])
    if not match:
        return None
    tp, pp = sizes.get("tp", 1), sizes.get("pp", 1)
    dp_rank = match.group("dp")
    if dp_rank is None:
        parent = by_pid.get(proc["ppid"])
        engine = ENGINE_TITLE.match(parent["title"]) if parent else None
        dp_rank = engine.group("dp") if engine and engine.group("dp") else 0
    rank = int(dp_rank) * pp * tp + int(match.group("pp") or 0) * tp + int(match.group("tp") or 0)
    return devices[rank] if rank < len(devices) else None


class Sampler(threading.Thread):
    """Records (seconds since start, pid, title, main thread's mask) for the tree once a second,
    so a worker's masks while it is still titled ``python3`` can be checked afterwards."""

    def __init__(self, root, interval=1.0):
        threading.Thread.__init__(self, daemon=True)
        self.root, self.interval = root, interval
        self.start_time = time.time()
        self.samples = []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            now = time.time() - self.start_time
            for pid in descendants(self.root):
                mask = allowed(pid, pid)
                if mask is not None:
                    self.samples.append((now, pid, title_of(pid), mask, ppid_of(pid)))
            self.halt.wait(self.interval)

    def stop(self):
        self.halt.set()
        self.join(10)

    def history(self, pid):
        return [(t, title, mask) for t, p, title, mask, _ppid in self.samples if p == pid]

    def children_before(self, parent, when):
        """{pid: title} of the processes seen under ``parent`` up to ``when``."""
        return dict((p, title) for t, p, title, _mask, ppid in self.samples
                    if ppid == parent and t <= when)


def kill_session(pid, grace=10.0):
    """Stop the whole process group led by pid (TERM, then KILL), and any descendant that left
    it; returns the pids still alive afterwards (none expected)."""
    members = set(descendants(pid))
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except OSError:
            pass
        for other in list(members):
            try:
                os.kill(other, sig)
            except OSError:
                members.discard(other)
        deadline = time.time() + wait
        while time.time() < deadline:
            members = set(p for p in members if _alive(p))
            if not members and not _group_alive(pid):
                return []
            time.sleep(0.2)
    return sorted(p for p in members if _alive(p))


def _alive(pid):
    stat = read("/proc/%d/stat" % pid)
    return bool(stat) and stat.rsplit(")", 1)[1].split()[0] != "Z"


def _group_alive(pgid):
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read("/proc/%s/stat" % entry)
            if stat:
                fields = stat.rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    return True
    return False


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def mask_counts(threads):
    """'1 x49' or '0 x45, 1 x4': how many threads are on each mask."""
    counts = {}
    for _tid, _comm, mask in threads:
        counts[mask] = counts.get(mask, 0) + 1
    return ", ".join("%s x%d" % (mask, n) for mask, n in sorted(counts.items()))


def table(rows):
    """rows: dicts with process, title, threads, read_back, planned, ok."""
    head = ("process", "title", "threads", "CPUs read back", "planned", "OK")
    cells = [head] + [(r["process"], r["title"], str(r["threads"]), r["read_back"], r["planned"],
                       "yes" if r["ok"] else "NO") for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    return "\n".join("  ".join(c[i].ljust(widths[i]) for i in range(len(head))).rstrip()
                     for c in cells)
