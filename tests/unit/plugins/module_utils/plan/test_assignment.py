# -*- coding: utf-8 -*-
"""assignment.solve against scipy and brute force; pair(): capacity, tie-breaks, determinism."""

import itertools
import random

import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import linear_sum_assignment

from ansible_collections.npuops.fleet.plugins.module_utils.plan import assignment
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError


def _scipy_total(matrix):
    rows, cols = linear_sum_assignment(matrix)
    return sum(matrix[r][c] for r, c in zip(rows, cols))


def _check_shape(matrix, pairs):
    n_rows, n_cols = len(matrix), len(matrix[0])
    assert len(pairs) == min(n_rows, n_cols)
    assert len(set(r for r, dummy in pairs)) == len(pairs)
    assert len(set(c for dummy, c in pairs)) == len(pairs)
    assert pairs == sorted(pairs)


@pytest.mark.parametrize("seed", range(6))
def test_matches_scipy_on_random_matrices(seed):
    # 6 x 500 = 3000 matrices: square and rectangular both ways, small integer costs (many
    # ties), wide integer costs and floats
    rng = random.Random(seed)
    for dummy in range(500):
        n_rows, n_cols = rng.randint(1, 9), rng.randint(1, 9)
        kind = rng.choice(["ties", "wide", "float"])
        if kind == "ties":
            matrix = [[rng.randint(1, 5) for dummy in range(n_cols)] for dummy in range(n_rows)]
        elif kind == "wide":
            matrix = [[rng.randint(-1000, 10**6) for dummy in range(n_cols)] for dummy in range(n_rows)]
        else:
            matrix = [[rng.random() * 100 for dummy in range(n_cols)] for dummy in range(n_rows)]
        pairs = assignment.solve(matrix)
        _check_shape(matrix, pairs)
        assert assignment.total_cost(matrix, pairs) == pytest.approx(_scipy_total(matrix))


def test_matches_scipy_on_larger_matrices():
    rng = random.Random(7)
    for n_rows, n_cols in [(16, 16), (16, 40), (40, 16), (30, 30)]:
        matrix = [[rng.randint(1, 50) for dummy in range(n_cols)] for dummy in range(n_rows)]
        pairs = assignment.solve(matrix)
        _check_shape(matrix, pairs)
        assert assignment.total_cost(matrix, pairs) == _scipy_total(matrix)


def _brute_force(matrix):
    n_rows, n_cols = len(matrix), len(matrix[0])
    if n_rows <= n_cols:
        return min(
            sum(matrix[r][c] for r, c in enumerate(perm)) for perm in itertools.permutations(range(n_cols), n_rows)
        )
    return min(sum(matrix[r][c] for c, r in enumerate(perm)) for perm in itertools.permutations(range(n_rows), n_cols))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_matches_brute_force_small(n_rows, n_cols, data):
    matrix = data.draw(
        st.lists(st.lists(st.integers(-20, 20), min_size=n_cols, max_size=n_cols), min_size=n_rows, max_size=n_rows)
    )
    pairs = assignment.solve(matrix)
    _check_shape(matrix, pairs)
    assert assignment.total_cost(matrix, pairs) == _brute_force(matrix)


@pytest.mark.parametrize("seed", range(3))
def test_matches_brute_force_8x8(seed):
    rng = random.Random(100 + seed)
    matrix = [[rng.randint(1, 9) for dummy in range(8)] for dummy in range(8)]
    assert assignment.total_cost(matrix, assignment.solve(matrix)) == _brute_force(matrix)


def test_forbidden_cells_are_avoided_or_reported():
    inf = float("inf")
    assert assignment.solve([[inf, 1], [2, inf]]) == [(0, 1), (1, 0)]
    with pytest.raises(PlanError) as err:
        assignment.solve([[inf, inf], [1, 2]])
    assert "row 0" in str(err.value)


@pytest.mark.parametrize(
    "bad,needle",
    [
        ("x", "list of rows"),
        ([[1, 2], [3]], "ragged"),
        ([[1, "a"]], "not a number"),
        ([[True]], "not a number"),
        ([[float("nan")]], "nan"),
        ([1, 2], "row 0"),
    ],
)
def test_malformed_matrix_is_a_plan_error(bad, needle):
    with pytest.raises(PlanError) as err:
        assignment.solve(bad)
    assert needle in str(err.value)


def test_empty_matrix():
    assert assignment.solve([]) == []
    assert assignment.solve([[], []]) == []


@pytest.mark.parametrize(
    "cell,cost",
    [
        ("NV18", 1),
        ("NV3", 1),
        ("PIX", 1),
        ("PXB", 2),
        ("PHB", 3),
        ("NODE", 4),
        ("SYS", 5),
        ("SOC", 5),
        ("X", 100),
        ("", 100),
        (None, 100),
        ("weird", 100),
    ],
)
def test_link_costs(cell, cost):
    assert assignment.link_cost(cell) == cost


# --- pair(): the GPU<->NIC layer -------------------------------------------------------


def _costs(table, gpus, nics):
    return dict(((g, n), assignment.link_cost(table[i][j])) for i, g in enumerate(gpus) for j, n in enumerate(nics))


def test_greedy_trap_is_solved_globally():
    # greedy "nearest NIC per GPU, in GPU order" puts GPU0 on a (PIX) and leaves GPU1 with
    # b (SYS): 1 + 5 = 6; the optimum gives GPU0 its PXB NIC: 2 + 1 = 3
    table = [["PIX", "PXB"], ["PIX", "SYS"]]
    result = assignment.pair(_costs(table, [0, 1], ["a", "b"]), [0, 1], ["a", "b"])
    assert result == {0: "b", 1: "a"}


def test_more_nics_than_gpus_uses_only_the_best():
    table = [["SYS", "PIX", "NODE", "SYS"], ["SYS", "NODE", "PXB", "SYS"]]
    nics = ["storage0", "rail0", "rail1", "frontend"]
    assert assignment.pair(_costs(table, [0, 1], nics), [0, 1], nics) == {0: "rail0", 1: "rail1"}


def test_fewer_nics_than_gpus_are_shared_evenly():
    # 4 GPUs, 2 equidistant NICs: capacity 2 each, never 3+1
    table = [["NODE", "NODE"]] * 4
    result = assignment.pair(_costs(table, range(4), ["a", "b"]), range(4), ["a", "b"])
    loads = sorted([list(result.values()).count("a"), list(result.values()).count("b")])
    assert loads == [2, 2]
    assert result == {0: "a", 1: "a", 2: "b", 3: "b"}  # lexicographic: GPU0 first


def test_spread_prefers_an_idle_nic_on_equal_cost():
    # 8 GPUs, 6 NICs (capacity 2): equal-cost choices go to idle NICs before doubling up
    table = [["NODE"] * 6 for dummy in range(8)]
    nics = ["n%d" % k for k in range(6)]
    result = assignment.pair(_costs(table, range(8), nics), range(8), nics)
    loads = sorted(list(result.values()).count(nic) for nic in nics)
    assert loads == [1, 1, 1, 1, 2, 2]


def test_never_shares_beyond_capacity_even_when_cheaper():
    table = [["PIX", "SYS"]] * 4
    result = assignment.pair(_costs(table, range(4), ["a", "b"]), range(4), ["a", "b"])
    assert list(result.values()).count("a") == 2


def test_explicit_capacity_too_small_is_a_plan_error():
    with pytest.raises(PlanError):
        assignment.pair({}, [0, 1, 2], ["a"], capacity=2)


def test_no_nics_gives_empty_pairing():
    assert assignment.pair({}, [0, 1], []) == {}


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.data())
def test_pair_is_optimal_canonical_and_order_independent(n_gpus, n_nics, data):
    cells = ["PIX", "PXB", "PHB", "NODE", "SYS"]
    table = data.draw(
        st.lists(st.lists(st.sampled_from(cells), min_size=n_nics, max_size=n_nics), min_size=n_gpus, max_size=n_gpus)
    )
    gpus = list(range(n_gpus))
    nics = ["mlx5_%d" % k for k in range(n_nics)]
    costs = _costs(table, gpus, nics)
    result = assignment.pair(costs, gpus, nics)
    capacity = -(-n_gpus // n_nics)
    assert set(result) == set(gpus)
    assert max(list(result.values()).count(n) for n in nics) <= capacity

    # brute force over every capacity-respecting map: the result is the optimum of
    # (link cost, NIC load spread, NIC ranks of GPU0, GPU1, ... lexicographically)
    def key(mapping):
        loads = [list(mapping.values()).count(n) for n in nics]
        return (
            sum(costs[(g, mapping[g])] for g in gpus),
            sum(k * (k - 1) // 2 for k in loads),
            [nics.index(mapping[g]) for g in gpus],
        )

    candidates = [dict(zip(gpus, combo)) for combo in itertools.product(nics, repeat=n_gpus)]
    best = min((m for m in candidates if max(list(m.values()).count(n) for n in nics) <= capacity), key=key)
    assert result == best
