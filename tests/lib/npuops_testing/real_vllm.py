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
- one instance under the collection's wrapper and binder, shared by the tier and
  ``bench/bench_vllm_tpot.py``: ``gpu_plan``, ``serve_env``, ``serve_command``,
  ``render_instance`` (``vllm_launch_wrapper`` into a sandbox root), ``wrapper_env``,
  ``binder_argv`` (the bind unit's ExecStart on the sandbox), ``http``, ``wait_health``
"""

import glob
import json
import os
import re
import shlex
import signal
import socket
import threading
import time
import urllib.error
import urllib.request

# VLLM::Worker[_DP<r>][_PP<r>][_PCP<r>][_TP<r>][_DCP<r>][_EP<r>] (vllm/v1/executor/
# multiproc_executor.py), under $VLLM_PROCESS_NAME_PREFIX (default VLLM)
WORKER_TITLE = re.compile(
    r"^(?P<prefix>[A-Za-z0-9_.-]{1,64})::Worker(?:_DP(?P<dp>\d{1,4}))?"
    r"(?:_PP(?P<pp>\d{1,4}))?(?:_PCP(?P<pcp>\d{1,4}))?(?:_TP(?P<tp>\d{1,4}))?"
    r"(?:_DCP(?P<dcp>\d{1,4}))?(?:_EP(?P<ep>\d{1,4}))?\Z"
)
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
                threads.append((tid, (read("/proc/%d/task/%d/comm" % (pid, tid)) or "").strip(), mask))
        if threads:
            procs.append(
                {
                    "pid": pid,
                    "ppid": ppid_of(pid),
                    "title": title_of(pid),
                    "comm": (read("/proc/%d/comm" % pid) or "").strip(),
                    "threads": threads,
                }
            )
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
        return dict((p, title) for t, p, title, _mask, ppid in self.samples if ppid == parent and t <= when)


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
    cells = [head] + [
        (r["process"], r["title"], str(r["threads"]), r["read_back"], r["planned"], "yes" if r["ok"] else "NO")
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    return "\n".join("  ".join(c[i].ljust(widths[i]) for i in range(len(head))).rstrip() for c in cells)


def gpu_plan(name, devices, frontend, pools, hostname=None, budget=False):
    """A GPU-mode plan over this host's CPUs: device d on ``pools[d]``, the instance ``name``
    on ``devices`` with its frontend on ``frontend``. ``budget``: with the ``cpu_budget`` a
    GPU plan has (workers = the pools, frontend), which the host CPU partition reads."""
    plan = {
        "policy": "strict",
        "mode": "gpu_numa",
        "device_type": None,
        "skipped": False,
        "hostname": hostname or socket.gethostname(),
        "numa_nodes": {"0": "0-1"},
        "npus": {},
        "gpus": dict((str(d), {"pool": pools[d], "numa_node": 0}) for d in sorted(pools)),
        "instances": {name: {"npus": devices, "frontend": frontend, "env": {}}},
        "env": {},
        "log": [],
        "warnings": [],
    }
    if budget:
        plan["cpu_budget"] = {
            "workers": ",".join(pools[d] for d in sorted(pools)),
            "frontend": frontend,
            "reserved": "",
            "spare": "",
        }
    return plan


def venv_vllm_version(venv):
    """The venv's vLLM as an operator states it (the module's vllm_version): the venv lies
    outside the sandbox root the module reads, so the module cannot find it there itself."""
    pattern = os.path.join(venv, "lib", "python3*", "site-packages", "vllm*.dist-info", "METADATA")
    for meta in sorted(glob.glob(pattern)):
        with open(meta, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    return None


def serve_env(cache, omp=None):
    """vLLM's environment: offline, its caches under ``cache``, ``VLLM_CPU_OMP_THREADS_BIND``."""
    env = {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_CACHE_ROOT": cache,
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache, "inductor"),
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    if omp:
        env["VLLM_CPU_OMP_THREADS_BIND"] = omp
    return env


def serve_command(venv, model, port, args=()):
    return [
        os.path.join(venv, "bin", "vllm"),
        "serve",
        model,
        "--served-model-name",
        "tiny",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        "256",
    ] + list(args)


def render_instance(root, name, plan, command, env, venv):
    """``vllm_launch_wrapper`` (through ansible-playbook) renders the instance into ``root``."""
    from npuops_testing.runner import run_module

    result = run_module(
        "vllm_launch_wrapper",
        {
            "name": name,
            "plan": plan,
            "command": command,
            "env": env,
            "host_root": root,
            "bind_timeout": 420,
            "vllm_version": venv_vllm_version(venv),
        },
    )
    assert not result.get("failed"), result
    return result


def wrapper_env():
    """The environment the wrapper starts with (as systemd gives a unit)."""
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
    }


def binder_argv(root, name, root_pid, follow):
    """The bind unit's ExecStart, on the sandbox ``root``: --root-pid for --unit, --follow
    ``follow`` seconds, the files under the sandbox, ``--json``."""
    unit = read(os.path.join(root, "etc/systemd/system/vllm-%s-bind.service" % name)) or ""
    execs = [line[len("ExecStart=") :] for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert len(execs) == 1, unit
    argv = shlex.split(execs[0])
    out = [os.path.join(root, argv[0].lstrip("/"))]
    words = iter(argv[1:])
    for word in words:
        if word == "--unit":
            next(words)
            out += ["--root-pid", str(root_pid)]
        elif word == "--follow":
            next(words)
            out += ["--follow", str(follow)]
        elif word in ("--plan", "--irq-state", "--metrics-dir"):
            out += [word, os.path.join(root, next(words).lstrip("/"))]
        else:
            out.append(word)
    return out + ["--proc-irq", os.path.join(root, "proc/irq"), "--json"]


def http(url, body=None, timeout=5.0):
    """(status or None, body text) of a GET, or a JSON POST with ``body``."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read(1 << 20).decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read(1 << 16).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as err:
        return None, str(err)


def wait_health(server, url, seconds):
    """None once ``url`` answers 200 within ``seconds``; else why not (``server`` exited)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if server.poll() is not None:
            return "vLLM exited with %s before /health answered" % server.returncode
        status, _body = http(url, timeout=2.0)
        if status == 200:
            return None
        time.sleep(1.0)
    return "no /health 200 within %ds" % seconds
