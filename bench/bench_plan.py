# -*- coding: utf-8 -*-
"""Plans per second: A3 640-CPU/16-NPU and A2 192-CPU/8-NPU hosts, both policies.

Prints a Markdown table. Two baselines, measured in the same process: ``copy.deepcopy`` of
the same topology dict, and ``cpulist.parse`` of the host's allowed CPUs (expanding one
cpulist to ints). The ratios say how many of those one plan costs; they are steadier than
plans/s on a shared machine. Times are CPU time of this process (``time.process_time``), the
best of 3 repeats, so other processes on the machine disturb them less than wall time.
Run: ``.venv/bin/python bench/bench_plan.py`` from the repository root.
"""
import copy
import os
import sys
import time
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from npuops_testing import cpu_hosts  # noqa: E402

PLANS = 10000


def best(func, number):
    return min(timeit.repeat(func, number=number, repeat=3, timer=time.process_time)) / number


def main():
    hosts = [("A3 640 CPUs / 16 NPUs", cpu_hosts.a3()), ("A2 192 CPUs / 8 NPUs", cpu_hosts.a2())]
    print("| host | policy | plans/s | time for %d plans (s) | cost vs deepcopy of the facts "
          "| cost vs cpulist.parse of the CPUs |" % PLANS)
    print("|---|---|---|---|---|---|")
    for name, topo in hosts:
        base = best(lambda: copy.deepcopy(topo), 2000)
        parse = best(lambda: cpulist.parse(topo["cpu"]["allowed"]), 2000)
        for policy in ("strict", "vllm_ascend"):
            per = best(lambda: plan_mod.make_plan(topo, policy), 2000)
            print("| %s | %s | %d | %.2f | %.2fx | %.1fx |"
                  % (name, policy, 1 / per, per * PLANS, per / base, per / parse))


if __name__ == "__main__":
    main()
