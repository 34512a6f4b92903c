#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""What the binder itself costs on a busy host (the anchor: vllm-ascend binds
once in-process, at no ongoing cost). Goals: the bind unit's ``--follow`` loop at most 0.5 % of
one core, one reconcile pass (the reconcile unit's ``--once --no-migrate`` run, interpreter
start included) at most 100 ms of CPU.

The host: about 2,000 processes (this machine's own plus sleeping forked children of a helper,
in their own session, killed after) and the stand-in vLLM tree (scripts/vllm_stand_in.py: main
process, EngineCore, 4 workers of ~100 threads each). The binder is the zipapp the module
installs, run as a command; its CPU (user + system) is read from its rusage. Baseline in the
same process: the interpreter's own start (``python -c pass``), which every run pays.
Prints a Markdown table.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

from npuops_testing.binder import build_binder, stand_in_tree  # noqa: E402

HOST_PROCESSES = 2000
WORKERS = 4
THREADS = 97  # + acl_thread, release_thread, worker_thread = 100 per worker
FOLLOW = float(os.environ.get("BENCH_BINDER_FOLLOW", "30"))
INTERVAL = 2.0  # the binder's default polling interval (the bind unit's)
ROUNDS = 3
PLAN = {
    "mode": "topo_affinity",
    "device_type": "A2",
    "numa_nodes": {"0": "0"},
    "npus": dict(
        (str(d), {"pool": "0", "numa_nodes": [0], "irq": "0", "main": "0", "acl": "0", "release": "0"})
        for d in range(WORKERS)
    ),
    "npuops_instance": {
        "schema": 1,
        "name": "svc",
        "vendor": "ascend",
        "devices": list(range(WORKERS)),
        "main": "0",
        "pool": "0",
        "frontend": "0",
        "binding": "host",
    },
}
# forks N children that sleep in pause(); all of them die with the helper's session
FILLER = r"""
import os, signal, sys, time
signal.alarm(600)
for _ in range(int(sys.argv[1])):
    if os.fork() == 0:
        signal.alarm(600)
        signal.pause()
        os._exit(0)
print("ready", flush=True)
time.sleep(600)
"""


def cpu_of(argv, env=None):
    """(CPU seconds, wall seconds, stdout) of one command run to its end."""
    start = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
    return usage.ru_utime + usage.ru_stime, time.time() - start, out, proc.returncode


def process_count():
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


def main():
    with tempfile.TemporaryDirectory() as tmp:
        binder = build_binder(os.path.join(tmp, "b"))
        plan = os.path.join(tmp, "svc.plan.json")
        with open(plan, "w") as handle:
            json.dump(PLAN, handle)
        env = dict(os.environ, PATH=tmp)  # no npu-smi: the tree decides
        filler = subprocess.Popen(
            [sys.executable, "-c", FILLER, str(max(0, HOST_PROCESSES - process_count() - 10))],
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            filler.stdout.readline()
            tree_env = {"STAND_IN_THREADS": str(THREADS)}
            with stand_in_tree(tmp, workers=WORKERS, env=tree_env, wait=120) as tree:
                time.sleep(1.0)
                host = process_count()
                threads = sum(len(os.listdir("/proc/%d/task" % w.pid)) for w in tree.workers)
                base = [binder, "--plan", plan, "--root-pid", str(tree.main), "--no-migrate", "--json"]
                python = min(cpu_of([sys.executable, "-c", "pass"])[0] for dummy in range(ROUNDS))
                first, _wall, out, code = cpu_of(base + ["--once"], env)
                assert code == 0, out
                passes = [cpu_of(base + ["--once"], env) for dummy in range(ROUNDS)]
                reconcile = min(p[0] for p in passes)
                assert all(p[3] == 0 and not json.loads(p[2])["changed"] for p in passes)
                follow, wall, out, code = cpu_of(base + ["--follow", str(FOLLOW), "--interval", str(INTERVAL)], env)
                assert code == 0, out
        finally:
            os.killpg(filler.pid, signal.SIGKILL)
            filler.wait()
    per_second = (follow - reconcile) / max(wall - 0.5, 1.0)
    rows = [
        ("host processes / worker threads", "%d / %d" % (host, threads), "", ""),
        ("interpreter start (python -c pass), baseline", "%.1f ms" % (python * 1e3), "1.00x", ""),
        ("first pass, binding the whole tree (--once)", "%.1f ms" % (first * 1e3), "%.2fx" % (first / python), ""),
        (
            "one reconcile pass (--once --no-migrate), nothing to change",
            "%.1f ms" % (reconcile * 1e3),
            "%.2fx" % (reconcile / python),
            "goal <= 100 ms: %s" % ("met" if reconcile <= 0.1 else "NOT met"),
        ),
        (
            "--follow loop (interval %.0f s), per second of follow" % INTERVAL,
            "%.3f %% of one core" % (per_second * 100),
            "%.3fx per s" % (per_second / python),
            "goal <= 0.5 %%: %s" % ("met" if per_second <= 0.005 else "NOT met"),
        ),
    ]
    print("| measurement | CPU | vs interpreter start | goal |")
    print("|---|---:|---:|---|")
    for row in rows:
        print("| %s | %s | %s | %s |" % row)
    print(
        "\nCPU = user + system time from the binder's rusage, best of %d; %d-core machine, "
        "load %.1f." % (ROUNDS, os.cpu_count(), os.getloadavg()[0])
    )


if __name__ == "__main__":
    main()
