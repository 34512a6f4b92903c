#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""What the drift check costs per host, against the facts module's own gathering in the same
process (issue: it must stay well under it).

- baseline: live ``topology.gather`` of the A3 host (16 dies) against bench_facts' stand-in
  ``npu-smi`` that answers after 0.5 s (what the facts module costs on a real host);
- the binder's check pass (``--once --check``) on a stand-in vLLM tree of this machine
  (main process, EngineCore, 4 workers with their threads): the live part of
  ``vllm_binding_facts``, run in-process, and as the command the module runs;
- ``binding.drift`` over a realistic report (16 workers of 64 threads, 2 instances).
Prints a Markdown table.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio  # noqa: E402
from ansible_collections.npuops.fleet.plugins.module_utils.model import binding, topology  # noqa: E402
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import binder as bind  # noqa: E402
from npuops_testing.binder import build_binder, stand_in_tree  # noqa: E402
import bench_facts  # noqa: E402

ROUNDS = 5
PLAN = {
    "mode": "topo_affinity",
    "device_type": "A2",
    "numa_nodes": {"0": "0"},
    "npus": dict(
        (str(d), {"pool": "0", "numa_nodes": [0], "irq": "0", "main": "0", "acl": "0", "release": "0"})
        for d in range(4)
    ),
    "npuops_instance": {
        "schema": 1,
        "name": "svc",
        "vendor": "ascend",
        "devices": [0, 1, 2, 3],
        "main": "0",
        "pool": "0",
        "frontend": "0",
        "binding": "host",
    },
}


def best(func, rounds=ROUNDS):
    times = []
    for dummy in range(rounds):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def report(workers=16, threads=64):
    rows = []
    for device in range(workers):
        rows.append(
            {
                "role": "worker",
                "device": device,
                "pid": 1000 + device,
                "title": "VLLM::Worker",
                "threads": threads,
                "remote_memory_ratio": 0.01 * device,
                "changed": [
                    {"tid": 5000 + i, "role": "main", "before": "0-639", "after": "4-35"} for i in range(device % 3)
                ],
            }
        )
    return {
        "changed": True,
        "workers": rows,
        "frontend": [],
        "missing": [],
        "failed": None,
        "irqs": [
            {"irq": 300 + d, "device": d, "role": "sq", "drift": d == 3, "before": "1", "after": "2"}
            for d in range(workers)
        ],
    }


def main():
    with tempfile.TemporaryDirectory() as stub:
        bench_facts.make_stub(stub)
        path = os.environ.get("PATH", "")
        os.environ["PATH"] = stub + os.pathsep + path
        try:
            live = hostio.LiveHostIO()
            facts = best(lambda: topology.gather(live), 3)
        finally:
            os.environ["PATH"] = path
    state = {
        "instances": dict(("svc%d" % i, {"unit": "u", "unit_state": "active", "report": report()}) for i in range(2))
    }
    rows = binding.drift(state, {"active": True, "banned_irqs": list(range(300, 316))})
    assert rows
    drift = best(lambda: binding.drift(state, {"active": True, "banned_irqs": []}), 50)
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "svc.plan.json")
        with open(plan, "w") as handle:
            json.dump(PLAN, handle)
        app = build_binder(tmp)
        with stand_in_tree(tmp, workers=4) as tree:
            args = bind.parse_args(["--plan", plan, "--once", "--check", "--no-migrate", "--root-pid", str(tree.main)])
            doc = bind.targets.load_plan(plan)

            def in_process():
                runner = bind.Binder(doc, args, tree.main)
                runner.run()

            check_pass = best(in_process)
            command = best(
                lambda: subprocess.run(
                    [app, "--plan", plan, "--once", "--check", "--no-migrate", "--json", "--root-pid", str(tree.main)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=dict(os.environ, PATH="/nonexistent"),
                    check=True,
                )
            )
    print("| measurement (per host) | seconds | vs facts gathering |")
    print("|---|---:|---:|")
    print("| baseline: live `topology.gather`, A3 16 dies, npu-smi answering in 0.5 s | %.4f | 1.00x |" % facts)
    print(
        "| binder check pass in-process (main + EngineCore + 4 workers) | %.4f | %.3fx |"
        % (check_pass, check_pass / facts)
    )
    print("| binder check pass as the command `vllm_binding_facts` runs | %.4f | %.2fx |" % (command, command / facts))
    print("| `binding.drift`, 2 instances x 16 workers x 64 threads | %.5f | %.3fx |" % (drift, drift / facts))


if __name__ == "__main__":
    main()
