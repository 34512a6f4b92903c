# -*- coding: utf-8 -*-
"""Plans per second: A3 640-CPU/16-NPU and A2 192-CPU/8-NPU hosts, both policies.

Prints a Markdown table. The baseline, measured in the same process, is ``copy.deepcopy`` of
the same topology dict: the ratio says how many deep copies of the facts one plan costs.
Run: ``.venv/bin/python bench/bench_plan.py`` from the repository root.
"""
import copy
import os
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
sys.path.insert(0, os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "cases"))

from ansible_collections.npuops.fleet.plugins.module_utils import plan as plan_mod  # noqa: E402
import cpu_hosts  # noqa: E402

PLANS = 10000


def best(func, number):
    return min(timeit.repeat(func, number=number, repeat=3)) / number


def main():
    hosts = [("A3 640 CPUs / 16 NPUs", cpu_hosts.a3()), ("A2 192 CPUs / 8 NPUs", cpu_hosts.a2())]
    print("| host | policy | plans/s | time for %d plans (s) | cost vs deepcopy of the facts |" % PLANS)
    print("|---|---|---|---|---|")
    for name, topo in hosts:
        base = best(lambda: copy.deepcopy(topo), 2000)
        for policy in ("strict", "vllm_ascend"):
            per = best(lambda: plan_mod.make_plan(topo, policy), 500)
            print("| %s | %s | %d | %.2f | %.1fx |" % (name, policy, 1 / per, per * PLANS, per / base))


if __name__ == "__main__":
    main()
