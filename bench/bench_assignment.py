# -*- coding: utf-8 -*-
"""GPU<->NIC assignment: our pure-Python exact solver vs scipy and vs brute force.

Prints a Markdown table. Times are medians per solve, measured in this process; the
figures to quote are the ratios (ours / scipy, brute force / ours), which move less than
absolute times between machines.

Run from the repo root: ``.venv/bin/python bench/bench_assignment.py``
"""

import itertools
import math
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), ".cache", "collections"))

from scipy.optimize import linear_sum_assignment  # noqa: E402

from ansible_collections.npuops.fleet.plugins.module_utils.plan import assignment


def _median_seconds(func, repeat):
    samples = []
    for dummy in range(repeat):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _brute_force(matrix):
    size = len(matrix)
    return min(sum(matrix[r][c] for r, c in enumerate(perm)) for perm in itertools.permutations(range(size)))


def main():
    rng = random.Random(42)
    rows = []
    for size, repeat in ((8, 200), (16, 100), (64, 10)):
        matrix = [[rng.randint(1, 5) for dummy in range(size)] for dummy in range(size)]
        ours = _median_seconds(lambda m=matrix: assignment.solve(m), repeat)
        theirs = _median_seconds(lambda m=matrix: linear_sum_assignment(m), repeat)
        r_ind, c_ind = linear_sum_assignment(matrix)
        assert assignment.total_cost(matrix, assignment.solve(matrix)) == sum(
            matrix[r][c] for r, c in zip(r_ind, c_ind)
        )
        brute = None
        if size == 8:
            brute = _median_seconds(lambda m=matrix: _brute_force(m), 3)
        rows.append((size, ours, theirs, math.factorial(size), brute))

    print(
        "| n x n | ours (ms/solve) | scipy (ms/solve) | ours / scipy | n! assignments "
        "| brute force (ms) | brute / ours |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size, ours, theirs, fact, brute in rows:
        print(
            "| %d x %d | %.3f | %.3f | %.1fx | %s | %s | %s |"
            % (
                size,
                size,
                ours * 1e3,
                theirs * 1e3,
                ours / theirs,
                "{:,}".format(fact) if fact < 10**12 else "%.2e" % fact,
                "%.1f" % (brute * 1e3) if brute else "not run",
                "%.0fx" % (brute / ours) if brute else "-",
            )
        )

    # the real-size problem: 8 GPUs x 16 NICs (B200 class), three cost tiers, capacity 1
    costs = dict(((g, "mlx5_%d" % n), rng.randint(1, 5)) for g in range(8) for n in range(16))
    nics = ["mlx5_%d" % n for n in range(16)]
    pair_time = _median_seconds(lambda: assignment.pair(costs, list(range(8)), nics), 100)
    print()
    print("| canonical pair() (3 cost tiers, exact integers) | ms/solve | vs plain 8 x 8 solve |")
    print("|---|---:|---:|")
    print("| 8 GPUs x 16 NICs | %.3f | %.1fx |" % (pair_time * 1e3, pair_time / rows[0][1]))


if __name__ == "__main__":
    main()
