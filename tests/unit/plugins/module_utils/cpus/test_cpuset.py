# -*- coding: utf-8 -*-
"""cpuset.CpuSeq and helpers: every operation checked against the list/set it stands for."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import nodemap
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

PROPS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])

# CPU id lists with runs, gaps, duplicates and any order (what parse_ordered can produce)
RUN = st.tuples(st.integers(0, 120), st.integers(0, 12)).map(lambda t: list(range(t[0], t[0] + t[1])))
CPUS = st.lists(st.one_of(RUN, st.lists(st.integers(0, 130), max_size=4)), max_size=6).map(
    lambda parts: [c for part in parts for c in part]
)
ITEM = st.one_of(
    st.integers(0, 200).map(str),
    st.tuples(st.integers(0, 200), st.integers(0, 40)).map(lambda t: "%d-%d" % (t[0], t[0] + t[1])),
    st.tuples(st.integers(0, 200), st.integers(0, 40), st.integers(1, 4), st.integers(1, 4)).map(
        lambda t: "%d-%d:%d/%d" % (t[0], t[0] + t[1], min(t[2], t[3]), t[3])
    ),
    st.tuples(st.integers(0, 50), st.integers(0, 9)).map(lambda t: " %d - %d " % (t[0], t[0] + t[1])),
)
TEXT = st.lists(ITEM, max_size=6).map(",".join)


def seq(cpus):
    return cpuset.CpuSeq.from_cpus(cpus)


@PROPS
@given(CPUS)
def test_round_trip_and_list_protocol(cpus):
    s = seq(cpus)
    assert list(s) == cpus and len(s) == len(cpus) and bool(s) == bool(cpus)
    assert s == cpus and s == seq(list(cpus)) and hash(s) == hash(seq(list(cpus)))
    assert repr(s) == repr(cpus)
    assert s.normal == (cpus == sorted(set(cpus)))
    for lo, hi in s.runs:
        assert lo <= hi
    for (dummy, prev_hi), (lo, dummy) in zip(s.runs, s.runs[1:]):
        assert lo != prev_hi + 1


@PROPS
@given(CPUS, st.integers(-20, 20), st.integers(-20, 20))
def test_index_and_slices_match_lists(cpus, start, stop):
    s = seq(cpus)
    assert list(s[start:stop]) == cpus[start:stop]
    assert list(s[start:]) == cpus[start:] and list(s[:stop]) == cpus[:stop]
    if -len(cpus) <= start < len(cpus):
        assert s[start] == cpus[start]
    else:
        with pytest.raises(IndexError):
            s[start]  # pylint: disable=pointless-statement


@PROPS
@given(CPUS, st.integers(0, 40), st.integers(0, 40))
def test_part_and_set_operations_give_canonical_runs(cpus, start, stop):
    # the CpuSeq built from the result list: equal runs, size and order flag (part drops
    # whole runs from the ends; keep / subtract of an ascending sequence skip re-joining)
    def same(got, ids):
        want = seq(ids)
        assert (got.runs, got.size, got.normal) == (want.runs, want.size, want.normal)

    start, stop = min(start, len(cpus)), min(max(start, stop), len(cpus))
    same(seq(cpus).part(start, stop), cpus[start:stop])
    ascending = sorted(set(cpus))
    other = cpus[start:stop] + list(range(stop, stop + 3))
    same(cpuset.subtract(seq(ascending), seq(other)), [c for c in ascending if c not in other])
    same(cpuset.keep(seq(ascending), cpuset.sorted_unique(seq(other))), [c for c in ascending if c in other])


@PROPS
@given(CPUS, CPUS, st.integers(-5, 140))
def test_concat_membership_and_sorting(first, second, cpu):
    assert list(seq(first) + seq(second)) == first + second
    assert (seq(first) + seq(second)) == seq(first + second)
    assert (cpu in seq(first)) == (cpu in first)
    assert list(cpuset.sorted_unique(seq(first))) == sorted(set(first))
    assert list(cpuset.sorted_all(seq(first))) == sorted(first)


@PROPS
@given(CPUS, CPUS)
def test_set_operations_match_python_sets(cpus, other):
    allowed = cpuset.sorted_unique(seq(other))
    assert list(cpuset.keep(seq(cpus), allowed)) == [c for c in cpus if c in set(other)]
    assert cpuset.overlaps(seq(cpus), allowed) == bool(set(cpus) & set(other))
    assert list(cpuset.subtract(seq(cpus), seq(other))) == [c for c in cpus if c not in set(other)]
    assert (seq(cpus).runs == seq(other).runs) == (cpus == other)
    # plain sequences are taken as CpuSeq
    assert cpuset.keep(cpus, set(other)) == [c for c in cpus if c in set(other)]
    assert isinstance(cpuset.keep(cpus, set(other)), cpuset.CpuSeq)
    assert seq(cpus) + seq(other) == cpus + other


@PROPS
@given(TEXT)
def test_parse_matches_cpulist(text):
    try:
        expected = cpulist.parse_ordered(text, "src")
    except ParseError as err:
        with pytest.raises(ParseError) as got:
            cpuset.parse_ordered(text, "src")
        assert str(got.value) == str(err)
        return
    assert list(cpuset.parse_ordered(text, "src")) == expected
    assert list(cpuset.parse(text, "src")) == cpulist.parse(text, "src")


@pytest.mark.parametrize("bad", ["a", "1-", "3-1", "1,,2", "-1", "0x3", "5-2:1/2", "1-4:0/2"])
def test_parse_rejects_like_cpulist(bad):
    with pytest.raises(ParseError) as err:
        cpuset.parse(bad, source="/proc/self/status")
    assert str(err.value) == str(pytest.raises(ParseError, cpulist.parse, bad, "/proc/self/status").value)


@PROPS
@given(CPUS)
def test_format_matches_cpulist(cpus):
    s = seq(cpus)
    assert cpuset.format(s) == cpuset.format(list(cpus)) == cpulist.format(cpus)
    assert cpuset.format_ordered(s) == cpuset.format_ordered(list(cpus))
    assert cpulist.format_runs(s.runs) == cpulist.format_ordered(cpus)
    assert cpuset.join_ids(s) == " ".join(str(c) for c in cpus)


@settings(deadline=None, max_examples=300)
@given(st.lists(st.integers(0, 300), max_size=60))
def test_formatters_agree_with_cpulist(ids):
    assert cpuset.format(ids) == cpulist.format(ids)
    assert cpulist.format(sorted(set(ids))) == cpulist.format(ids)
    assert cpulist.parse_ordered(cpuset.format_ordered(ids)) == ids


@PROPS
@given(st.lists(CPUS, min_size=1, max_size=5), CPUS)
def test_node_map_matches_dict(nodes, cpus):
    node_cpus = dict((n * 3, seq(sorted(set(c)))) for n, c in enumerate(nodes))
    expected = {}
    for node, members in node_cpus.items():
        expected.update(dict.fromkeys(list(members), node))
    got = nodemap.NodeMap(node_cpus)
    for cpu in range(-2, 140):
        assert got.get(cpu) == expected.get(cpu) and (cpu in got) == (cpu in expected)
    counts = {}
    for cpu in cpus:
        if cpu in expected:
            counts[expected[cpu]] = counts.get(expected[cpu], 0) + 1
    assert got.counts(seq(cpus)) == counts
    assert got.nodes(seq(cpus)) == set(counts)
    missing = [c for c in cpus if c not in expected]
    assert got.first_missing(seq(cpus)) == (missing[0] if missing else None)
    by_first = sorted(set(expected.values()), key=lambda n: min(c for c in expected if expected[c] == n))
    assert list(got.node_runs) == by_first
    for node in by_first:
        assert list(got.node_runs[node]) == sorted(c for c in expected if expected[c] == node)


@PROPS
@given(CPUS.filter(lambda c: len(c) >= 5))
def test_split_roles_positional(cpus):
    node_map = nodemap.NodeMap({0: seq(list(range(0, 60))), 1: seq(list(range(60, 131)))})
    for reserve_irq in (True, False):
        roles = cpu_roles.split_roles(seq(cpus), reserve_irq)
        if reserve_irq:
            want = {"irq": cpus[:2], "main": cpus[2:-2], "acl": [cpus[-2]], "release": [cpus[-1]]}
        else:
            want = {"irq": [], "main": cpus[:-2], "acl": [cpus[-2]], "release": [cpus[-1]]}
        assert dict((k, list(v)) for k, v in roles.items()) == want
        assert cpu_roles.split_roles(list(cpus), reserve_irq) == roles
        assert cpu_roles.npu_entry(seq(cpus), roles, node_map) == {
            "pool": cpulist.format(cpus),
            "pool_order": cpulist.format_ordered(cpus),
            "numa_nodes": sorted(set(0 if c < 60 else 1 for c in cpus)),
            "irq": cpulist.format_ordered(want["irq"]),
            "main": cpulist.format(want["main"]),
            "acl": cpulist.format(want["acl"]),
            "release": cpulist.format(want["release"]),
        }
