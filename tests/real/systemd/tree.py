# -*- coding: utf-8 -*-
"""Run inside the container: the stand-in tree's CPUs (every process and thread, read from
/proc) against a plan file. Prints one line per task and ``BOUND`` when every one is on the CPUs
the plan gives it, else ``OFF <n>``; exit 0 bound, 1 not (or the tree is not complete).

    python3 tree.py PREFIX PLAN_JSON INSTANCE [MAIN_PID]
"""

import json
import os
import sys


def cpus(pid, tid):
    with open("/proc/%d/task/%d/status" % (pid, tid)) as handle:
        for line in handle:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return "?"


def main(prefix, plan_path, name, main_pid=0):
    with open(plan_path) as handle:
        plan = json.load(handle)
    instance = plan["npuops_instance"]  # the installed plan JSON (docs/plan-json.md)
    assert instance["name"] == name, (instance["name"], name)
    rows = []  # (who, pid, tid, comm, got, want)
    for rank, npu in enumerate(instance["devices"]):
        with open("%s.%d" % (prefix, rank)) as handle:
            worker = json.load(handle)
        dev = plan["npus"][str(npu)]
        pid = worker["pid"]
        rows.append(("NPU%d" % npu, pid, pid, "main", cpus(pid, pid), dev["main"]))
        roles = {"acl_thread": dev["acl"], "release_thread": dev["release"], "worker_thread": dev["main"]}
        for comm, tid in sorted(worker["threads"].items()):
            rows.append(("NPU%d" % npu, pid, tid, comm, cpus(pid, tid), roles[comm]))
    with open(prefix + ".engine") as handle:
        engine = int(handle.read())
    rows.append(("frontend", engine, engine, "EngineCore", cpus(engine, engine), instance["frontend"]))
    if main_pid:  # the service's main process (the API server): every thread on the frontend
        for tid in sorted(int(t) for t in os.listdir("/proc/%d/task" % main_pid)):
            rows.append(("frontend", main_pid, tid, "APIServer", cpus(main_pid, tid), instance["frontend"]))
    off = 0
    for who, pid, tid, comm, got, want in rows:
        mark = "ok" if got == want else "OFF"
        off += got != want
        print("%-8s pid=%-6d tid=%-6d %-14s cpus=%-4s plan=%-4s %s" % (who, pid, tid, comm, got, want, mark))
    print("BOUND" if not off else "OFF %d" % off)
    return 0 if not off else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0))
    except (OSError, ValueError, KeyError) as err:
        print("INCOMPLETE %s" % err)
        sys.exit(1)
