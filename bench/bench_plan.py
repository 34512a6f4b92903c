# -*- coding: utf-8 -*-
"""Plans per second: A3 640-CPU/16-NPU and A2 192-CPU/8-NPU hosts, both policies; strict with
two instances on the real A2 layout (distance table) and on A3 (frontends carved).

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


def halves(count):
    return [{"name": "svc0", "npus": list(range(count // 2))},
            {"name": "svc1", "npus": list(range(count // 2, count))}]


def main():
    # (name, facts, policies, make_plan keyword arguments); the last two rows place the whole
    # process tree: frontends from free nodes by distance, and the A3 carve-out
    hosts = [("A3 640 CPUs / 16 NPUs", cpu_hosts.a3(), ("strict", "vllm_ascend"), {}),
             ("A2 192 CPUs / 8 NPUs", cpu_hosts.a2(), ("strict", "vllm_ascend"), {}),
             ("A2 real 8 x 24, distance table, 2 instances", cpu_hosts.a2_real(), ("strict",),
              {"instances": halves(8)}),
             ("A3 640 CPUs / 16 NPUs, 2 instances (carve-out)", cpu_hosts.a3(), ("strict",),
              {"instances": halves(16)})]
    print("| host | policy | plans/s | time for %d plans (s) | cost vs deepcopy of the facts "
          "| cost vs cpulist.parse of the CPUs |" % PLANS)
    print("|---|---|---|---|---|---|")
    for name, topo, policies, kwargs in hosts:
        base = best(lambda t=topo: copy.deepcopy(t), 2000)
        parse = best(lambda t=topo: cpulist.parse(t["cpu"]["allowed"]), 2000)
        for policy in policies:
            per = best(lambda t=topo, p=policy, kw=kwargs: plan_mod.make_plan(t, p, **kw), 2000)
            print("| %s | %s | %d | %.2f | %.2fx | %.1fx |"
                  % (name, policy, 1 / per, per * PLANS, per / base, per / parse))


if __name__ == "__main__":
    main()
