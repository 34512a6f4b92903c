# -*- coding: utf-8 -*-
"""smt.py: CPU sequences grouped, split and cut in whole SMT cores (siblings from the facts)."""

from hypothesis import given, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import smt
from ansible_collections.npuops.fleet.plugins.module_utils.cpus.cpuset import CpuSeq

PLUS_HALF = dict((c, c % 4) for c in range(8))  # siblings N and N + 4
ADJACENT = dict((c, c & ~1) for c in range(8))  # siblings 2k and 2k + 1


def test_groups_and_core_order():
    seq = CpuSeq.from_cpus(range(8))
    assert smt.groups(seq, PLUS_HALF) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert list(smt.core_order(seq, PLUS_HALF)) == [0, 4, 1, 5, 2, 6, 3, 7]
    assert smt.core_order(seq, None) is seq and smt.groups([1, 2], None) == [[1], [2]]
    assert smt.core_sizes(ADJACENT) == {0: 2, 2: 2, 4: 2, 6: 2}
    assert smt.count([0, 1, 2], ADJACENT) == 2 and smt.count([0, 1, 2], None) == 3


def test_split_take_spread():
    seq = smt.core_order(CpuSeq.from_cpus(range(8)), PLUS_HALF)
    shares = smt.split(seq, ["a", "b", "c"], PLUS_HALF)
    assert [list(shares[k]) for k in "abc"] == [[0, 4, 1, 5], [2, 6], [3, 7]]
    # fewer cores than owners: the cores are split into CPUs
    assert [list(v) for v in smt.split(CpuSeq.from_cpus([0, 4]), ["a", "b"], PLUS_HALF).values()] == [[0], [4]]
    assert list(smt.take(seq, 5, PLUS_HALF)) == [0, 4, 1, 5]
    assert list(smt.take(seq, 1, PLUS_HALF)) == [0]
    # ACL / release on two cores: 2, 6 are siblings at the end -> 5 moves to the ACL position
    pool = CpuSeq.from_cpus([0, 4, 1, 5, 2, 6])
    assert list(smt.spread_roles(pool, PLUS_HALF)) == [0, 4, 1, 2, 5, 6]
    assert smt.spread_roles(pool, None) is pool


@given(st.integers(1, 24), st.integers(1, 6), st.booleans())
def test_split_partitions_in_whole_cores_when_it_can(cores_count, owners, half):
    cpus = list(range(2 * cores_count))
    cores = dict((c, c % cores_count) for c in cpus) if half else dict((c, c & ~1) for c in cpus)
    seq = smt.core_order(CpuSeq.from_cpus(cpus), cores)
    shares = smt.split(seq, list(range(owners)), cores)
    got = [c for k in range(owners) for c in shares[k]]
    assert sorted(got) == cpus
    if cores_count >= owners:
        for share in shares.values():
            assert all(len(g) == 2 for g in smt.groups(share, cores))
