# -*- coding: utf-8 -*-
"""Plan time per host against the start-up of the module that makes the plan.

``npu_cpu_plan`` runs ``make_plan`` once per host per play, in a fresh Python process. The
bench prints one line: the plan time of the recorded A3 host (``tests/snapshots/a3-16die``:
640 CPUs, 16 dies, every NPU, ``vllm_ascend`` policy) as CPU time of this process
(``time.process_time``, best of 3 repeats), the module's own start-up (a fresh interpreter
importing ``plugins/modules/npu_cpu_plan.py``, wall time, best of 5) and the plan time as a
fraction of the start-up. No goal: the ratio says how much of a module run the plan is.
Run: ``.venv/bin/python bench/bench_plan.py`` from the repository root.
"""

import os
import subprocess
import sys
import time
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
sys.path.insert(0, COLLECTIONS)

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist  # noqa: E402
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio  # noqa: E402
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology  # noqa: E402
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch  # noqa: E402

SNAPSHOT = os.path.join(REPO, "tests", "snapshots", "a3-16die")
POLICY = "vllm_ascend"
MODULE = "ansible_collections.npuops.fleet.plugins.modules.npu_cpu_plan"


def plan_seconds(facts):
    def one():
        return dispatch.make_plan(facts, POLICY)

    return min(timeit.repeat(one, number=200, repeat=3, timer=time.process_time)) / 200


def startup_seconds():
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    best = None
    for dummy in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import " + MODULE], env=env, check=True)
        took = time.perf_counter() - start
        best = took if best is None else min(best, took)
    return best


def main():
    facts = topology.gather(hostio.SnapshotHostIO(SNAPSHOT))
    plan = plan_seconds(facts)
    start = startup_seconds()
    print("| host | policy | plan (ms) | module start-up (ms) | plan / start-up |")
    print("|---|---|---:|---:|---:|")
    print(
        "| recorded A3 (a3-16die, %d CPUs) | %s | %.3f | %.1f | %.4f |"
        % (len(cpulist.parse(facts["cpu"]["online"])), POLICY, plan * 1e3, start * 1e3, plan / start)
    )


if __name__ == "__main__":
    main()
