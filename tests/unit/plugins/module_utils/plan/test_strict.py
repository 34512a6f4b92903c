# -*- coding: utf-8 -*-
"""The strict policy: worked examples pinned, and each invariant of the brief as a property."""

import random

import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.cpus.nodemap import NodeMap
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from ansible_collections.npuops.fleet.plugins.module_utils.plan import strict as ps
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from npuops_testing import cpu_hosts
from npuops_testing.placement_hosts import home_of


PROPS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


def pools(plan):
    return dict((int(k), v["pool"]) for k, v in plan["npus"].items())


# ---- worked examples --------------------------------------------------------------------


def test_a3_640cpu_16npu_table():
    plan = plan_mod.make_plan(cpu_hosts.a3(), "strict")
    assert plan["mode"] == "global_slice"
    for i in range(16):
        base = 40 * i
        entry = plan["npus"][str(i)]
        assert (entry["pool"], entry["irq"], entry["main"], entry["acl"], entry["release"]) == (
            "%d-%d" % (base, base + 39),
            "%d-%d" % (base, base + 1),
            "%d-%d" % (base + 2, base + 37),
            str(base + 38),
            str(base + 39),
        )
        assert entry["numa_nodes"] == [i // 2]


def test_a3_whole_host_affinity_is_not_locality():
    plan = plan_mod.make_plan(cpu_hosts.a3(affinity="0-639"), "strict")
    assert plan["mode"] == "global_slice" and plan["npus"]["5"]["pool"] == "200-239"


def test_a2_hidden_npu_two_independent_services():
    first = plan_mod.make_plan(cpu_hosts.a2("144-191"), "strict", npus=[0])
    second = plan_mod.make_plan(cpu_hosts.a2("144-191"), "strict", npus=[2])
    assert first["npus"]["0"]["pool"] == "144-167"
    assert second["npus"]["2"]["pool"] == "168-191"


def test_a2_full_host_no_overlap_and_numa_local():
    plan = plan_mod.make_plan(cpu_hosts.a2(), "strict")
    assert pools(plan) == {
        0: "144-167",
        1: "0-23",
        2: "168-191",
        3: "24-47",
        4: "96-119",
        5: "48-71",
        6: "120-143",
        7: "72-95",
    }
    homes = {0: 3, 1: 0, 2: 3, 3: 0, 4: 2, 5: 1, 6: 2, 7: 1}
    for npu, node in homes.items():
        assert plan["npus"][str(npu)]["numa_nodes"] == [node]
        assert plan["npus"][str(npu)]["locality"] == "affinity"


def test_pci_numa_node_is_second_source():
    topo = cpu_hosts.a2(numa_node=True)
    for npu in topo["npus"]:
        npu["affinity"] = None
    plan = plan_mod.make_plan(topo, "strict")
    assert pools(plan)[0] == "144-167" and plan["npus"]["0"]["locality"] == "numa_node"


def test_reserved_cpus_stay_out():
    plan = plan_mod.make_plan(cpu_hosts.a2(), "strict", reserved_cpus="0-1,144-145")
    assert plan["npus"]["1"]["pool"] == "2-24" and plan["npus"]["3"]["pool"] == "25-47"
    assert plan["npus"]["0"]["pool"] == "146-168"


def test_lacking_node_borrows_from_unowned_node():
    topo = cpu_hosts.host(
        [{"logic_id": 0, "affinity": "0-3"}, {"logic_id": 1, "affinity": "0-3"}],
        {0: "0-7", 1: "8-15", 2: "16-23"},
        "0-23",
    )
    topo["npus"].append({"logic_id": 2, "affinity": "16-23", "processes": []})
    plan = plan_mod.make_plan(topo, "strict")
    assert pools(plan) == {0: "0-4", 1: "5-9", 2: "16-23"}
    # the pool spans nodes 0 and 1; the worker's memory stays on its home node 0
    assert plan["npus"]["1"]["pool_nodes"] == [0, 1]
    assert plan["npus"]["1"]["numa_nodes"] == [0] and plan["npus"]["1"]["home_node"] == 0
    assert plan["npus"]["1"]["pool_order"] == "5-9"
    assert any("borrowed 2 unit(s) from node 1" in w for w in plan["warnings"])


def test_lacking_node_fails_naming_the_npu():
    topo = cpu_hosts.host(
        [{"logic_id": 3, "affinity": "0-3"}, {"logic_id": 4, "affinity": "0-3"}, {"logic_id": 5, "affinity": "8-15"}],
        {0: "0-7", 1: "8-15"},
        "0-15",
    )
    with pytest.raises(PlanError) as err:
        plan_mod.make_plan(topo, "strict")
    assert err.value.npu == 3
    assert str(err.value) == (
        "NPU 3: NUMA node 0 has 8 allowed CPUs (at least 5 per NPU) for 2 "
        "NPU(s) [3, 4] that need 5 each (10 in all), and nodes no NPU calls "
        "home have only 0 spare"
    )


def test_requested_npu_outside_cpuset_fails():
    with pytest.raises(PlanError, match="NPU 1: its NUMA node 0 .from affinity. has no allowed CPUs"):
        plan_mod.make_plan(cpu_hosts.a2("144-191"), "strict", npus=[1])


def test_works_on_x86_64():
    plan = plan_mod.make_plan(cpu_hosts.a2(arch="x86_64"), "strict", npus=[0])
    assert plan["skipped"] is False and plan["npus"]["0"]["pool"] == "144-167"


def test_homeless_npu_joins_node_with_room():
    topo = cpu_hosts.host(
        [{"logic_id": 0, "affinity": "0-3"}, {"logic_id": 1}, {"logic_id": 2, "affinity": "16-19"}],
        {0: "0-15", 1: "16-23"},
        "0-23",
    )
    plan = plan_mod.make_plan(topo, "strict")
    assert pools(plan) == {0: "0-7", 1: "8-15", 2: "16-23"}
    assert "NPU 1 has no NUMA locality: placed on NUMA node 0" in plan["warnings"]


@pytest.mark.parametrize(
    "nodes, allowed, expected",
    [
        ({0: "0-5", 1: "6-18"}, "0-18", {0: "0-5", 1: "6-12", 2: "13-18"}),  # node-local slices
        ({0: "0-3", 1: "4-14"}, "0-14", {0: "0-4", 1: "5-9", 2: "10-14"}),  # counts do not allow
    ],
)
def test_homeless_slices_inside_nodes_where_counts_allow(nodes, allowed, expected):
    topo = cpu_hosts.host([{"logic_id": i} for i in range(3)], nodes, allowed)
    plan = plan_mod.make_plan(topo, "strict")
    assert pools(plan) == expected


def test_no_numa_layout():
    topo = cpu_hosts.host([{"logic_id": 0}, {"logic_id": 1}], {}, "0-19")
    plan = plan_mod.make_plan(topo, "strict")
    assert pools(plan) == {0: "0-9", 1: "10-19"} and plan["npus"]["0"]["numa_nodes"] == []


@pytest.mark.parametrize(
    "affinity, pci, expected",
    [
        ([0, 1, 2, 8], None, (0, "affinity")),
        ([0, 1, 8, 9], 1, (1, "numa_node")),  # no strict majority -> PCI node
        ([0, 1, 8, 9], None, (None, None)),
        (None, 5, (None, None)),  # unknown node
        ([100], None, (None, None)),  # CPUs on no node
    ],
)
def test_npu_home(affinity, pci, expected):
    cpu_node = NodeMap({0: range(0, 8), 1: range(8, 16)})
    assert ps.npu_home(affinity, pci, cpu_node, {0, 1}) == expected


# ---- Ascend 950 ---------------------------------------------------------------------------


def test_950_clusters_no_starvation_of_numa0():
    topo = cpu_hosts.a5(tpc=1, node_of={0: 0, 1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3, 7: 3})
    plan = plan_mod.make_plan(topo, "strict")
    assert plan["mode"] == "ascend950"
    assert plan["uvb"] == "88-95"  # last cluster of NUMA0
    assert plan["npus"]["0"]["pool"] == "0-87"  # NUMA0's NPU keeps the rest of its node
    assert plan["npus"]["1"]["pool"] == "96-127" and plan["npus"]["3"]["pool"] == "160-191"
    for entry in plan["npus"].values():
        assert entry["irq"] == entry["acl"] == entry["release"] == ""


def test_950_clusters_aligned_when_cpuset_starts_mid_cluster():
    plan = plan_mod.make_plan(cpu_hosts.a5(allowed="100-383", tpc=2), "strict", npus=[2, 3, 4, 5])
    # node 1 (96-191) minus the cut cluster 96-111: 112-191 = 5 clusters for 4 NPUs
    assert pools(plan) == {2: "112-143", 3: "144-159", 4: "160-175", 5: "176-191"}


def test_950_uvb_on_unowned_node_when_numa0_full():
    topo = cpu_hosts.a5(tpc=2, node_of=dict((i, 0) for i in range(8)))
    topo["cpu"]["numa_nodes"]["0"] = "0-127"
    topo["cpu"]["numa_nodes"]["1"] = "128-191"
    plan = plan_mod.make_plan(topo, "strict")
    assert plan["uvb"] == "128-143"
    assert pools(plan)[0] == "0-15"


def test_950_needs_threads_per_core():
    with pytest.raises(PlanError, match="Thread.s. per core 1 or 2"):
        plan_mod.make_plan(cpu_hosts.a5(tpc=None), "strict")


# ---- properties -----------------------------------------------------------------------------


@st.composite
def random_host(draw):
    n_nodes = draw(st.integers(1, 8))
    contiguous = draw(st.booleans())
    node_ids = (
        list(range(n_nodes))
        if contiguous
        else sorted(draw(st.sets(st.integers(0, 15), min_size=n_nodes, max_size=n_nodes)))
    )
    sizes = [draw(st.sampled_from([4, 8, 16, 24, 32, 48])) for dummy in node_ids]
    nodes, start = {}, 0
    for node, size in zip(node_ids, sizes):
        nodes[node] = list(range(start, start + size))
        start += size
    total = start
    cut = draw(st.sampled_from(["full", "range", "random"]))
    if cut == "full":
        allowed = list(range(total))
    elif cut == "range":
        lo = draw(st.integers(0, total - 1))
        hi = draw(st.integers(lo, total - 1))
        allowed = list(range(lo, hi + 1))
    else:
        rnd = random.Random(draw(st.integers(0, 2**32)))
        allowed = sorted(c for c in range(total) if rnd.random() < 0.8) or [0]
    n_npus = draw(st.integers(1, 16))
    npus = []
    for logic in range(n_npus):
        kind = draw(st.sampled_from(["none", "sub", "node", "span"]))
        node = draw(st.sampled_from(node_ids))
        cpus = nodes[node]
        if kind == "sub":
            aff = cpulist.format(cpus[: max(1, len(cpus) // 2)])
        elif kind == "node":
            aff = cpulist.format(cpus)
        elif kind == "span":
            aff = "0-%d" % (total - 1)
        else:
            aff = None
        pci = draw(st.sampled_from([None, node, -1]))
        npus.append({"logic_id": logic, "affinity": aff, "numa_node": pci})
    device_type = draw(st.sampled_from(["A2", "A3", "A5", "310P", "unknown"]))
    tpc = draw(st.sampled_from([1, 2]))
    topo = cpu_hosts.host(
        npus,
        dict((n, cpulist.format(c)) for n, c in nodes.items()),
        cpulist.format(allowed),
        device_type=device_type,
        tpc=tpc,
    )
    return topo, nodes, allowed


def plan_or_reason(topo, **kw):
    try:
        return plan_mod.make_plan(topo, "strict", **kw)
    except PlanError as err:
        # a failure names the NPU (or, for an empty cpuset, the host) and says why
        assert str(err)
        return None


@PROPS
@given(random_host())
def test_strict_invariants(case):
    topo, nodes, allowed = case
    plan = plan_or_reason(topo)
    if plan is None:
        return
    cpu_node = dict((c, n) for n, cs in nodes.items() for c in cs)
    seen = {}
    by_npu = dict((n["logic_id"], n) for n in topo["npus"])
    homes = dict((logic, home_of(n, nodes)) for logic, n in by_npu.items())
    planned = [int(k) for k in plan["npus"]]
    for key, entry in plan["npus"].items():
        npu = int(key)
        pool = cpulist.parse(entry["pool"])
        assert pool
        # 1. disjoint across every NPU of the host
        for cpu in pool:
            assert cpu not in seen, "CPU %d in NPU %s and NPU %s" % (cpu, seen.get(cpu), npu)
            seen[cpu] = npu
        # 2. inside the allowed CPUs
        assert set(pool) <= set(allowed)
        # 3. NUMA-local
        home = homes[npu]
        assert entry["home_node"] == home
        if home is not None:
            sharers = [m for m in planned if homes[m] == home]
            room = len([c for c in nodes[home] if c in set(allowed)])
            outside = [c for c in pool if cpu_node[c] != home]
            if topo["device_type"] != "A5" and room >= 5 * len(sharers):
                assert not outside
            for cpu in outside:  # never extended into a node other NPUs call home
                assert all(homes[m] != cpu_node[cpu] for m in planned)
        # 5. roles
        order = cpulist.parse_ordered(entry["pool_order"])
        if topo["device_type"] == "A5":
            size = 8 * topo["cpu"]["threads_per_core"]
            assert len(order) % size == 0 and entry["main"] == entry["pool"]
            for i in range(0, len(order), size):
                first = nodes[cpu_node[order[i]]][0]
                assert (order[i] - first) % size == 0 and order[i + size - 1] == order[i] + size - 1
        else:
            assert len(order) >= 5
            assert cpulist.parse_ordered(entry["irq"]) == order[:2]
            assert cpulist.parse(entry["main"]) == sorted(order[2:-2])
            assert entry["acl"] == str(order[-2]) and entry["release"] == str(order[-1])
    if topo["device_type"] == "A5" and plan.get("uvb"):
        assert not set(cpulist.parse(plan["uvb"])) & set(seen)


@PROPS
@given(random_host(), st.randoms(use_true_random=False))
def test_strict_deterministic_and_independent_of_request(case, rnd):
    topo, _nodes, _allowed = case
    full = plan_or_reason(topo)
    if full is None:
        return
    # 4. same host, NPUs listed in another order, planned per instance: same pools
    shuffled = dict(topo)
    shuffled["npus"] = list(topo["npus"])
    rnd.shuffle(shuffled["npus"])
    keys = sorted(full["npus"], key=int)
    if not keys:  # every NPU's node is outside the cpuset (or has no whole cluster)
        assert full["warnings"]
        return
    subset = [int(k) for k in keys if rnd.random() < 0.5] or [int(keys[0])]
    rest = [int(k) for k in keys if int(k) not in subset]
    insts = [{"name": "b", "npus": rest}, {"name": "a", "npus": subset}] if rest else [{"name": "a", "npus": subset}]
    again = plan_mod.make_plan(shuffled, "strict", instances=insts)
    owner = dict((str(n), i["name"]) for i in insts for n in i["npus"])
    for key in keys:
        # the same pools, less the CPUs an instance without free CPUs carved for its frontend
        got = set(cpulist.parse(again["npus"][key]["pool"]))
        carved = set(cpulist.parse(full["npus"][key]["pool"])) - got
        assert got <= set(cpulist.parse(full["npus"][key]["pool"]))
        inst = again["instances"][owner[key]]
        assert carved <= set(cpulist.parse(inst["frontend"]))
        if carved:
            assert inst["frontend_source"] == "carved"
    # an instance planned alone gets the same pools and frontend as planned with the others
    alone = plan_mod.make_plan(shuffled, "strict", instances=[{"name": "a", "npus": subset}])
    for key in alone["npus"]:
        assert alone["npus"][key] == again["npus"][key]
    assert alone["instances"]["a"] == again["instances"]["a"]
    single = plan_mod.make_plan(shuffled, "strict", npus=subset)
    assert sorted(single["npus"], key=int) == [str(n) for n in sorted(subset)]
    for key in single["npus"]:
        assert single["npus"][key] == full["npus"][key]
