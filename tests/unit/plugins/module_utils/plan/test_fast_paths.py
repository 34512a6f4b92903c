# -*- coding: utf-8 -*-
"""The planners' fast paths for CpuSeq pools (the 10,000-plan speed work) against the general list
paths they shortcut: plan entries, vllm-ascend's plan lines, slices and shares, the next-NUMA
extension, the "N-M" parse, subtract / union_runs / cpulist text, the nearness keys of many
nodes, node counts. Same values for any runs: ascending or not, ids past the decimal
table (2048), one run or several."""
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist, cpuset, nodemap, smt
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.model.rules import Nearness
from ansible_collections.npuops.fleet.plugins.module_utils.plan import frontend
from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles
from ansible_collections.npuops.fleet.plugins.module_utils.plan import vllm_ascend as va
from npuops_testing.hostile import fuzz_examples

SETTINGS = settings(max_examples=fuzz_examples(300), deadline=None)
# NUMA nodes of 64 CPUs, ids up to 4095: past the 2048 ids of cpuset.DECIMAL
NODES = dict((node, list(range(64 * node, 64 * node + 64))) for node in range(64))
NODE_SEQS = dict((node, cpuset.CpuSeq.from_cpus(cpus)) for node, cpus in NODES.items())
NODE_MAP = nodemap.node_map(NODE_SEQS)
NODE_DICT = nodemap.node_map(NODES)


@st.composite
def pools(draw, min_size=5):
    """CPU ids in positional order: runs of various lengths, in any order, no duplicates."""
    cpus = []
    for dummy in range(draw(st.integers(1, 4))):
        first = draw(st.sampled_from([0, 1, 40, 63, 64, 1000, 2040, 2045, 2047, 2048, 3000,
                                      4090]))
        length = draw(st.integers(1, 9))
        cpus.extend(c for c in range(first, min(first + length, 4096)) if c not in cpus)
    while len(cpus) < min_size:
        cpus.append(max(cpus) + 1 if max(cpus) < 4095 else min(cpus) - 1)
    if draw(st.booleans()):
        cpus.sort()
    return cpus


@SETTINGS
@given(st.lists(pools(), min_size=1, max_size=4), st.sampled_from([0, 5, 2047, 2048]))
def test_pool_entries_as_npu_entry(lists, base):
    npus = [base + index for index in range(len(lists))]
    seqs = dict((npu, cpuset.CpuSeq.from_cpus(cpus)) for npu, cpus in zip(npus, lists))
    expected = [cpu_roles.npu_entry(cpus, cpu_roles.split_roles(cpus, True, npu), NODE_DICT)
                for npu, cpus in zip(npus, lists)]
    assert cpu_roles.pool_entries(seqs, npus, NODE_MAP) == expected
    assert [cpu_roles.pool_entry(seqs[npu], NODE_MAP, False, npu) for npu in npus] == expected


@SETTINGS
@given(st.lists(pools(), min_size=1, max_size=4), st.sampled_from([0, 7, 2047, 2048]),
       st.sampled_from(["A2", "A3", "A5"]))
def test_plan_lines_as_plan_line(lists, base, device_type):
    npus = [base + index for index in range(len(lists))]
    seqs = dict((npu, cpuset.CpuSeq.from_cpus(cpus)) for npu, cpus in zip(npus, lists))
    expected = [va.plan_line(npu, va.allocate({npu: cpus}, device_type)[npu], device_type)
                for npu, cpus in zip(npus, lists)]
    assert va.plan_lines(npus, seqs, device_type) == expected


@SETTINGS
@given(pools(min_size=1), st.data())
def test_part_as_slice(cpus, data):
    seq = cpuset.CpuSeq.from_cpus(cpus)
    start = data.draw(st.integers(0, len(cpus)))
    stop = data.draw(st.integers(start, len(cpus)))
    assert list(seq.part(start, stop)) == cpus[start:stop] == list(seq[start:stop])


@SETTINGS
@given(pools(min_size=1), st.integers(1, 5))
def test_shares_as_lists(cpus, count):
    owners = list(range(count))
    seq = cpuset.CpuSeq.from_cpus(cpus)
    shares = smt.split(seq, owners, None)
    assert dict((k, list(v)) for k, v in shares.items()) == smt.split(cpus, owners, None)
    run = list(range(cpus[0], cpus[0] + len(cpus)))  # one run: the shares by arithmetic
    shares = smt.split(cpuset.CpuSeq.from_cpus(run), owners, None)
    assert dict((k, list(v)) for k, v in shares.items()) == smt.split(run, owners, None)
    for share in shares.values():
        counted = cpuset.CpuSeq(share.runs)
        assert (share.size, share.normal) == (counted.size, counted.normal)
    got = va.average_distribute({0: seq}, owners)
    assert dict((k, list(v)) for k, v in got.items()) == va.average_distribute({0: cpus}, owners)


@SETTINGS
@given(st.integers(0, 4095), st.integers(0, 300), st.integers(1, 24))
def test_global_slice_as_lists(lo, length, total):
    allowed = list(range(lo, min(lo + length, 4096)))
    running = list(range(total))
    log_seq, log_list = [], []
    try:
        got = va.global_slice(running, cpuset.CpuSeq.from_cpus(allowed), total, {}, 5, log_seq)
    except PlanError as err:
        got = str(err)
    try:
        expected = va.global_slice(running, allowed, total, {}, 5, log_list)
    except PlanError as err:
        expected = str(err)
    if isinstance(got, dict):
        got = dict((k, list(v)) for k, v in got.items())
    assert got == expected and log_seq == log_list


@SETTINGS
@given(st.lists(st.integers(0, 63), min_size=1, max_size=8), st.integers(0, 63),
       st.integers(1, 64), st.integers(0, 63))
def test_extend_numa_as_lists(node_ids, node, length, start):
    nodes = dict((n, NODES[n]) for n in sorted(set(node_ids)))
    base = list(range(64 * node + start, 64 * node + min(64, start + length)))
    allowed = sorted(c for cpus in nodes.values() for c in cpus) + base
    seq_node, seq_numa = va.build_cpu_node_map(
        dict((n, cpuset.CpuSeq.from_cpus(c)) for n, c in nodes.items()))
    list_node, list_numa = va.build_cpu_node_map(nodes)
    got = expected = None
    try:
        got = list(va.extend_numa(cpuset.CpuSeq.from_cpus(base), seq_node, seq_numa,
                                  cpuset.CpuSeq.from_cpus(sorted(set(allowed)))))
    except PlanError as err:
        got = str(err)
    try:
        expected = list(va.extend_numa(base, list_node, list_numa, set(allowed)))
    except PlanError as err:
        expected = str(err)
    assert got == expected and list(seq_numa) == list(list_numa)


@SETTINGS
@given(st.integers(0, 9000), st.integers(0, 9000),
       st.sampled_from(["%d-%d", "%d-%d,", "0%d-%d", "%d-0%d", "%d-%d-1", " %d-%d"]))
def test_parse_as_cpulist(lo, hi, form):
    text = form % (lo, hi)
    try:
        expected = cpulist.parse_ordered(text, "x")
    except ParseError as err:
        expected = str(err)
    try:
        got = list(cpuset.parse_ordered(text, "x"))
    except ParseError as err:
        got = str(err)
    assert got == expected


@SETTINGS
@given(pools(min_size=1), pools(min_size=1))
def test_subtract_merge_and_text_as_lists(cpus, removed):
    """subtract (one run less one run by arithmetic, else by bisection), union_runs, parts,
    "+" and the looked-up cpulist text against their list expressions; the results whose size
    and order are computed instead of counted (cpuset.known) against a count of their runs."""
    seq, other = cpuset.CpuSeq.from_cpus(cpus), cpuset.CpuSeq.from_cpus(removed)
    gone = set(removed)
    results = [cpuset.subtract(seq, other)]
    assert list(results[-1]) == [c for c in cpus if c not in gone]
    one, run = seq.part(0, 1), other.part(len(removed) - 1, len(removed))
    results += [one, run, cpuset.subtract(seq.sorted_unique(), run)]
    assert list(results[-1]) == [c for c in sorted(cpus) if c not in set(run)]
    results.append(cpuset.subtract(one, other))
    assert list(results[-1]) == [c for c in cpus[:1] if c not in gone]
    lo, hi, r_lo, r_hi = min(cpus), max(cpus), min(removed), max(removed)
    results.append(cpuset.subtract(cpuset.CpuSeq(((lo, hi),)), cpuset.CpuSeq(((r_lo, r_hi),))))
    assert list(results[-1]) == [c for c in range(lo, hi + 1) if not r_lo <= c <= r_hi]
    results.append(cpuset.union_runs(seq.runs + other.runs))
    assert list(results[-1].runs) == cpulist.runs(sorted(set(cpus) | gone))
    results.append(seq + other)
    assert list(results[-1]) == cpus + removed
    for start in range(len(cpus)):
        results.append(seq.part(start, len(cpus) - (start + 1) // 2))
        assert list(results[-1]) == cpus[start:len(cpus) - (start + 1) // 2]
    for result in results:
        counted = cpuset.CpuSeq(result.runs)
        assert (result.size, result.normal) == (counted.size, counted.normal), result.runs
    assert cpuset.format(seq) == cpulist.format(cpus)
    assert cpuset.format_ordered(seq) == cpulist.format_ordered(cpus)


@SETTINGS
@given(st.dictionaries(st.integers(0, 7), st.integers(0, 2), min_size=1),
       st.booleans(), st.integers(0, 9), st.lists(st.integers(0, 9), max_size=6))
def test_nearness_keys_from_as_key(packages, with_table, anchor, nodes):
    """Nearness.keys_from is key(a, b)[:2] for every node: table or id distance, packages
    known or not (nodes 8 and 9 are in neither)."""
    table = dict((a, dict((b, 10 + abs(a - b) * 3) for b in range(8))) for a in range(8)) \
        if with_table else None
    covered = Nearness(table, packages if len(packages) == 8 else None, range(8))
    for nearness in (covered, Nearness(table, packages, ())):
        assert nearness.keys_from(anchor, nodes) == [nearness.key(anchor, b)[:2] for b in nodes]


@SETTINGS
@given(pools(min_size=1))
def test_node_counts_as_dict(cpus):
    """NodeMap.counts (one run inside one node answered by one lookup) as the dict's count."""
    seq = cpuset.CpuSeq.from_cpus(cpus)
    assert nodemap.node_counts(NODE_MAP, seq) == nodemap.node_counts(NODE_DICT, cpus)
    assert nodemap.node_counts(NODE_MAP, seq.part(0, 1)) == \
        nodemap.node_counts(NODE_DICT, cpus[:1])


@SETTINGS
@given(st.integers(0, 600), st.integers(5, 80), st.integers(0, 75), st.booleans())
def test_carved_pool_as_subtract(first, size, carve, shuffled):
    """frontend.carved_pool (the end of main by arithmetic) against the rule it short-cuts:
    the carved CPUs leave the pool and its main, the IRQ, ACL and release CPUs stay."""
    pool = list(range(first, first + size))
    if shuffled:
        pool = pool[:2] + pool[2:-2][::-1] + pool[-2:]
    seq = cpuset.CpuSeq.from_cpus(pool)
    main = seq.part(2, seq.size - 2)
    taken = main.part(max(main.size - carve, 1), main.size).sorted_unique()
    new_pool, new_main = frontend.carved_pool(seq, main, taken)
    gone = set(taken)
    assert list(new_pool) == [c for c in pool if c not in gone]
    assert list(new_main) == [c for c in pool[2:-2] if c not in gone]
    assert list(new_pool)[:2] == pool[:2] and list(new_pool)[-2:] == pool[-2:]
    for result in (new_pool, new_main):
        counted = cpuset.CpuSeq(result.runs)
        assert (result.size, result.normal) == (counted.size, counted.normal)


@SETTINGS
@given(st.lists(st.integers(0, 12), min_size=1, max_size=9), st.integers(0, 40))
def test_carve_cpus_as_quotas(sizes, need):
    """The carve's even-parts shortcut gives what the general quota rule gives."""
    members = list(range(len(sizes)))
    mains = dict((dev, cpuset.CpuSeq.from_cpus(range(100 * dev, 100 * dev + size)))
                 for dev, size in enumerate(sizes) if size)
    carved, got = frontend.carve(mains, members, need, None)
    room = dict((dev, max(len(mains[dev]) - 1, 0) if dev in mains else 0) for dev in members)
    quota, expected = frontend._quotas(room, members, need)
    assert got == expected
    assert dict((dev, list(cpus)) for dev, cpus in carved.items()) == \
        dict((dev, list(mains[dev])[-count:]) for dev, count in quota.items() if count)
    for cpus in carved.values():
        counted = cpuset.CpuSeq(cpus.runs)
        assert (cpus.size, cpus.normal) == (counted.size, counted.normal)


@SETTINGS
@given(st.integers(0, 2100), st.integers(3, 40), st.integers(1, 30))
def test_pool_entries_of_carved_pools(first, kept, carved):
    """The shape a carve leaves (frontend.carved_pool: SQ, CQ and main, a gap, ACL and
    release), read by arithmetic, as npu_entry reads it from the list."""
    last = first + kept + carved + 1
    cpus = list(range(first, first + kept)) + [last - 1, last]
    seq = cpuset.CpuSeq.from_cpus(cpus)
    expected = cpu_roles.npu_entry(cpus, cpu_roles.split_roles(cpus, True, 0), NODE_DICT)
    assert cpu_roles.pool_entries({0: seq}, [0], NODE_MAP) == [expected]
    assert cpu_roles.pool_entries({0: seq}, [0], NODE_MAP, False, {0: seq.part(2, kept)}) == \
        [expected]
