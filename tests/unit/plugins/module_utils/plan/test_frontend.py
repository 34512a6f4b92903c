# -*- coding: utf-8 -*-
"""The whole process tree: frontends, distance-aware borrowing, cpu_budget, SMT roles.

Worked examples pinned on the recorded hosts, and the invariants as hypothesis properties over
random hosts with random distance tables, packages and SMT numbering.
"""

import os

import pytest
from hypothesis import HealthCheck, given, settings

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.cpus.cpuset import CpuSeq
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules, topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch, frontend
from npuops_testing import SNAPSHOTS, cpu_hosts
from npuops_testing.placement_hosts import host_case

PROPS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
BUDGET = ("workers", "frontend", "reserved", "spare")
TWO = [{"name": "svc0", "npus": [0, 1, 2, 3]}, {"name": "svc1", "npus": [4, 5, 6, 7]}]


def facts(host):
    return topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))


def ids(text):
    return set(cpulist.parse(text or ""))


def node_of(topo):
    return dict((c, int(n)) for n, t in topo["cpu"]["numa_nodes"].items() for c in cpulist.parse(t))


def assert_partition(plan, allowed):
    """cpu_budget: four disjoint sets whose union is exactly the allowed CPUs."""
    sets = [ids(plan["cpu_budget"][k]) for k in BUDGET]
    for i, first in enumerate(sets):
        for second in sets[i + 1 :]:
            assert not first & second
    assert set().union(*sets) == set(allowed)


# ---- the worked example: the real A2 host with the 4-socket distance table -----------------


def test_real_a2_two_instances_worked_example():
    """a2-910b3x8 (real npu-smi, topo and lscpu; the Kunpeng 4-socket distance table paired):
    NPUs on nodes 6, 4, 0, 2; svc0 = NPUs 0-3, svc1 = NPUs 4-7."""
    topo = facts("a2-910b3x8")
    plan = dispatch.make_plan(topo, "strict", instances=TWO)
    where = node_of(topo)
    homes = {0: 6, 1: 6, 2: 4, 3: 4, 4: 0, 5: 0, 6: 2, 7: 2}
    for npu, home in homes.items():
        entry = plan["npus"][str(npu)]
        assert set(where[c] for c in ids(entry["pool"])) == {home}
        assert entry["numa_nodes"] == [home] and len(ids(entry["pool"])) == 12
    svc0, svc1 = plan["instances"]["svc0"], plan["instances"]["svc1"]
    assert (svc0["frontend"], svc0["frontend_nodes"]) == ("120-143,168-191", [5, 7])
    assert (svc1["frontend"], svc1["frontend_nodes"]) == ("24-47,72-95", [1, 3])
    assert svc0["frontend_source"] == svc1["frontend_source"] == "free"
    assert plan["cpu_budget"] == {
        "workers": "0-23,48-71,96-119,144-167",
        "frontend": "24-47,72-95,120-143,168-191",
        "reserved": "",
        "spare": "",
    }
    assert_partition(plan, range(192))
    # no CPU in two sets: pools, frontends
    owners = {}
    for key, entry in plan["npus"].items():
        for cpu in ids(entry["pool"]):
            assert cpu not in owners
            owners[cpu] = key
    for inst in (svc0, svc1):
        for cpu in ids(inst["frontend"]):
            assert cpu not in owners
            owners[cpu] = "frontend"
    assert not [w for w in plan["warnings"] if "frontend" in w]


def test_real_a2_capped_frontend_leaves_spare():
    plan = dispatch.make_plan(facts("a2-910b3x8"), "strict", instances=TWO, frontend_cpus=8)
    assert plan["instances"]["svc0"]["frontend"] == "120-127"  # node 5 (11 from node 4) first
    assert plan["instances"]["svc1"]["frontend"] == "24-31"
    assert plan["cpu_budget"]["spare"] == "32-47,72-95,128-143,168-191"
    assert_partition(plan, range(192))


def test_frontend_cpus_zero_means_none_and_no_carving():
    everything = [{"name": "all", "npus": list(range(16))}]
    plan = dispatch.make_plan(cpu_hosts.a3(), "strict", instances=everything, frontend_cpus=0)
    assert plan["instances"]["all"]["frontend"] == "" and plan["npus"]["0"]["pool"] == "0-39"
    assert plan["instances"]["all"]["frontend_source"] == "none"


def test_without_instances_every_device_keeps_its_share_in_the_budget():
    plan = dispatch.make_plan(facts("a2-910b3x8"), "strict")
    assert plan["instances"] == {}
    assert plan["cpu_budget"]["frontend"] == "24-47,72-95,120-143,168-191"
    assert plan["cpu_budget"]["spare"] == ""


def test_independent_services_get_disjoint_frontends():
    """svc0 and svc1 planned by two separate runs agree with the plan of both."""
    topo = facts("a2-910b3x8")
    both = dispatch.make_plan(topo, "strict", instances=TWO)
    for inst in TWO:
        alone = dispatch.make_plan(topo, "strict", instances=[inst])
        assert alone["instances"][inst["name"]] == both["instances"][inst["name"]]
    mixed = dispatch.make_plan(topo, "strict", instances=[{"name": "a", "npus": [0, 4]}, {"name": "b", "npus": [1, 5]}])
    # NPU0 and NPU1 share node 6, so each takes half of node 7 (per device, not per instance)
    assert mixed["instances"]["a"]["frontend"] == "24-35,168-179"
    assert mixed["instances"]["b"]["frontend"] == "36-47,180-191"


# ---- borrowing by distance ------------------------------------------------------------------


def test_borrowing_goes_to_the_sibling_die_not_the_lower_id():
    """Node 6 short of CPUs: the sibling die 7 (distance 11) lends, not node 5 (25, another
    socket) as the nearest-id rule did; the workers' memory stays on node 6."""
    topo = facts("a2-910b3x8")
    plan = dispatch.make_plan(topo, "strict", reserved_cpus="144-161")
    npu0, npu1 = plan["npus"]["0"], plan["npus"]["1"]
    assert (npu0["pool"], npu1["pool"]) == ("162-166", "167-171")
    assert npu0["pool_nodes"] == [6] and npu1["pool_nodes"] == [6, 7]
    assert npu0["numa_nodes"] == npu1["numa_nodes"] == [6]
    assert "NUMA node 6 lacks room for NPU(s) [0, 1]: borrowed 4 unit(s) from node 7" in plan["warnings"]
    # without the table: nearest id, ties to the lower id (the old rule, kept for such facts)
    topo["cpu"]["numa_distance"] = None
    old = dispatch.make_plan(topo, "strict", reserved_cpus="144-161")
    assert old["npus"]["1"]["pool_nodes"] == [5, 6]


def test_borrowing_stays_in_the_package_while_it_has_free_cpus():
    topo = cpu_hosts.host(
        [{"logic_id": 0, "affinity": "0-3"}, {"logic_id": 1, "affinity": "0-3"}],
        {0: "0-7", 1: "8-15", 2: "16-23"},
        "0-23",
    )
    # node 2 is nearer by the table but on another package: node 1 lends
    topo["cpu"]["numa_distance"] = {
        "0": {"0": 10, "1": 30, "2": 20},
        "1": {"0": 30, "1": 10, "2": 20},
        "2": {"0": 20, "1": 20, "2": 10},
    }
    topo["cpu"]["packages"] = {"0": 0, "1": 0, "2": 1}
    plan = dispatch.make_plan(topo, "strict")
    assert plan["npus"]["1"]["pool"] == "5-9" and plan["npus"]["1"]["pool_nodes"] == [0, 1]
    topo["cpu"]["packages"] = None
    plan = dispatch.make_plan(topo, "strict")
    assert plan["npus"]["1"]["pool"] == "5-7,16-17"


def test_nearness_rule():
    near = rules.Nearness(
        {0: {0: 10, 1: 11, 2: 20}, 1: {0: 11, 1: 10, 2: 20}, 2: {0: 20, 1: 20, 2: 10}}, {0: 0, 1: 1, 2: 0}, [0, 1, 2]
    )
    assert sorted([1, 2], key=lambda b: near.key(0, b)) == [2, 1]  # same package first
    assert near.key(0, 1) == (1, 11, 1) and near.same_package(0, 2)
    partial = rules.Nearness({0: {0: 10}}, None, [0, 1])
    assert partial.distance is None and "lacks NUMA node(s) [1]" in partial.warnings[0]
    assert rules.Nearness().key(6, 5) == (0, 1, 5)  # no table: by id


# ---- the A3 carve-out -------------------------------------------------------------------------


def test_a3_carve_out_worked_example():
    """A3, 640 CPUs / 16 NPUs (no free CPU): one instance of 16 carves 2 + 16 = 18 CPUs (one
    thread per core here), one or two from the end of each worker's main CPUs."""
    plan = dispatch.make_plan(cpu_hosts.a3(), "strict", instances=[{"name": "all", "npus": list(range(16))}])
    inst = plan["instances"]["all"]
    assert inst["frontend_source"] == "carved"
    assert inst["frontend"] == "36-37,76-77," + ",".join(str(40 * i + 37) for i in range(2, 16))
    assert plan["npus"]["0"]["pool_order"] == "0-35,38-39"
    assert (plan["npus"]["0"]["main"], plan["npus"]["0"]["acl"]) == ("2-35", "38")
    assert plan["npus"]["2"]["pool_order"] == "80-116,118-119"
    assert_partition(plan, range(640))
    assert any("carved from its workers' main CPUs" in w for w in plan["warnings"])


def test_a3_recorded_host_two_instances():
    """The recorded A3 (2 threads per core, SMT numbering unknown): 2 x (2 + 8) CPUs each."""
    plan = dispatch.make_plan(
        facts("a3-16die"),
        "strict",
        instances=[{"name": "a", "npus": list(range(8))}, {"name": "b", "npus": list(range(8, 16))}],
    )
    for name in ("a", "b"):
        assert len(ids(plan["instances"][name]["frontend"])) == 20
    assert plan["instances"]["a"]["frontend_nodes"] == [0, 1, 2, 3]
    assert_partition(plan, range(640))


def test_carving_keeps_a_main_cpu_and_says_when_short():
    topo = cpu_hosts.host([{"logic_id": 0, "affinity": "0-5"}], {0: "0-5"}, "0-5")
    plan = dispatch.make_plan(topo, "strict", instances=[{"name": "x", "npus": [0]}])
    # pool 0-5: IRQ 0-1, main 2-3, ACL 4, release 5: one main CPU may go, 3 were wanted
    assert plan["instances"]["x"]["frontend"] == "3"
    assert plan["npus"]["0"]["main"] == "2"
    assert any("leave room for 1 of the 3" in w for w in plan["warnings"])


def test_950_carves_whole_clusters():
    plan = dispatch.make_plan(facts("a5-950"), "strict", instances=TWO)
    fronts = [plan["instances"][n]["frontend"] for n in ("svc0", "svc1")]
    assert fronts == ["40-47", "232-239"]
    for entry in plan["npus"].values():
        assert len(ids(entry["pool"])) % 8 == 0
    assert_partition(plan, range(384))


# ---- isolated CPUs, SMT ---------------------------------------------------------------------


def test_isolated_cpus_are_never_frontend_or_spare():
    topo = facts("a2-910b3x8")
    topo["cpu"]["isolated"] = "120-123,150"
    topo["cpu"]["nohz_full"] = "168-169"
    plan = dispatch.make_plan(topo, "strict", instances=TWO)
    assert plan["instances"]["svc0"]["frontend"] == "124-143,170-191"
    # 150 is in NPU0's pool (workers may use isolated CPUs); the others stay reserved
    assert plan["cpu_budget"]["reserved"] == "120-123,168-169"
    assert "150" not in plan["cpu_budget"]["reserved"]
    assert any("isolated / nohz_full CPUs 120-123,168-169" in w for w in plan["warnings"])
    assert_partition(plan, range(192))


def test_smt_roles_and_whole_cores():
    """atlas300-310p: Xeon siblings N and N+64 (node 0 holds the even CPUs): IRQ CPUs on one
    core, ACL and release on two, pools and frontends in whole cores."""
    topo = facts("atlas300-310p")
    cores = rules.smt_cores(topo)
    halves = [{"name": "a", "npus": [0, 1]}, {"name": "b", "npus": [2, 3]}]
    plan = dispatch.make_plan(topo, "strict", instances=halves)
    for entry in plan["npus"].values():
        irq = cpulist.parse_ordered(entry["irq"])
        assert cores[irq[0]] == cores[irq[1]]
        assert cores[int(entry["acl"])] != cores[int(entry["release"])]
    front = ids(plan["instances"]["a"]["frontend"])
    assert front == {24, 26, 88, 90, 56, 58, 120, 122}
    assert all(cpu in front for c in front for cpu in (cores[c], cores[c] + 64))
    assert_partition(plan, range(128))


def test_smt_split_of_a_node_in_whole_cores():
    seq = CpuSeq.from_cpus([0, 64, 2, 66, 4, 68])
    cores = {0: 0, 64: 0, 2: 2, 66: 2, 4: 4, 68: 4}
    shares = frontend.smt.split(seq, ["a", "b"], cores)
    assert (list(shares["a"]), list(shares["b"])) == ([0, 64, 2, 66], [4, 68])
    assert list(frontend.smt.take(seq, 3, cores)) == [0, 64]
    assert list(frontend.smt.spread_roles(CpuSeq.from_cpus([0, 64, 2, 66, 4, 68]), cores)) == [0, 64, 2, 4, 66, 68]


# ---- GPU hosts ---------------------------------------------------------------------------------


def test_gpu_frontend_per_package():
    """dgx-a100 (EPYC NPS4 table paired: 16 within a socket, 32 across): GPUs on nodes 3, 1 of
    socket 0 take free nodes 0 and 2, GPUs on 7, 5 take 4 and 6."""
    topo = facts("dgx-a100")
    plan = dispatch.make_plan(topo, "strict", instances=TWO)
    assert plan["instances"]["svc0"]["frontend"] == "0-15,32-47,128-143,160-175"
    assert plan["instances"]["svc0"]["frontend_nodes"] == [0, 2]
    assert plan["instances"]["svc1"]["frontend_nodes"] == [4, 6]
    assert_partition(plan, range(256))
    # the DOWN storage port is left out of the pairing
    assert any("mlx5_9 not ACTIVE (DOWN)" in w for w in plan["warnings"])


def test_gpu_numa_off_carves_from_the_gpu_pools():
    plan = dispatch.make_plan(facts("h100-numaoff"), "strict", instances=TWO)
    assert plan["instances"]["svc0"]["frontend_source"] == "carved"
    assert len(ids(plan["instances"]["svc0"]["frontend"])) == 2 * (2 + 4)
    assert_partition(plan, range(192))


def test_vllm_ascend_plans_are_unchanged():
    plan = dispatch.make_plan(facts("a2-910b3x8"), "vllm_ascend", instances=TWO)
    assert "cpu_budget" not in plan and "frontend" not in plan["instances"]["svc0"]
    assert "pool_nodes" not in plan["npus"]["0"]


def test_frontend_cpus_is_validated():
    with pytest.raises(PlanError, match="frontend_cpus must be a non-negative integer"):
        dispatch.make_plan(cpu_hosts.a2(), "strict", frontend_cpus=-1)


# ---- properties -------------------------------------------------------------------------------


def _plan(topo, options):
    try:
        return dispatch.make_plan(topo, "strict", **options)
    except PlanError as err:
        assert str(err)
        return None


@PROPS
@given(host_case())
def test_placement_invariants(case):
    topo, options, truth = case
    plan = _plan(topo, options)
    if plan is None:
        return
    nodes, allowed = truth["nodes"], truth["allowed"]
    where = dict((c, n) for n, cs in nodes.items() for c in cs)
    pkg = truth["package"]
    # the budget partitions the allowed CPUs
    assert_partition(plan, allowed)
    isolated = set(truth["isolated"])
    assert not isolated & (ids(plan["cpu_budget"]["frontend"]) | ids(plan["cpu_budget"]["spare"]))
    workers = ids(plan["cpu_budget"]["workers"])
    reserved_opt = ids(options.get("reserved_cpus"))
    carved = set()
    for inst in plan["instances"].values():
        if inst["frontend_source"] == "carved":
            carved |= ids(inst["frontend"])
    # free when the frontends were placed: no worker's (carved CPUs were the workers')
    free = set(allowed) - workers - carved - reserved_opt - isolated
    homes = truth["homes"]
    planned = [int(k) for k in plan["npus"]]
    home_nodes = set(h for n, h in homes.items() if h is not None)
    seen = {}
    for key, entry in plan["npus"].items():
        npu, pool = int(key), ids(entry["pool"])
        for cpu in pool:  # disjoint
            assert cpu not in seen
            seen[cpu] = npu
        assert pool <= workers
        home = homes[npu]
        if home is None:
            continue
        assert entry["numa_nodes"] == [home]
        room = len(set(nodes[home]) & (set(allowed) - reserved_opt))
        sharers = [m for m in planned if homes[m] == home]
        if topo["device_type"] != "A5" and room >= 5 * len(sharers):
            assert set(where[c] for c in pool) == {home}
        if pkg:
            # borrowing never leaves the package while a node of it has CPUs no worker holds
            crossed = [c for c in pool if pkg[where[c]] != pkg[home]]
            if crossed:
                assert not [
                    c
                    for c in free | (set(allowed) - workers - reserved_opt)
                    if pkg[where[c]] == pkg[home] and where[c] not in home_nodes
                ]
    for name, inst in plan["instances"].items():
        front = ids(inst["frontend"])
        assert not front & workers
        if not pkg or not front or inst["frontend_source"] != "free":
            continue
        members = inst["npus"]
        own = set(pkg[homes[m]] for m in members if homes[m] is not None)
        # a frontend CPU off the packages of the instance's devices only for a device whose
        # own package has no free CPU on a node no device calls home (a node goes to the
        # devices nearest to it, a device of its own package first)
        for cpu in front:
            if pkg[where[cpu]] in own:
                continue
            assert any(
                homes[m] is None
                or not [c for c in free if pkg[where[c]] == pkg[homes[m]] and where[c] not in home_nodes]
                for m in members
            )


@PROPS
@given(host_case())
def test_an_instance_alone_gets_the_same_frontend(case):
    topo, options, truth = case
    plan = _plan(topo, options)
    if plan is None or not plan["instances"]:
        return
    name = sorted(plan["instances"])[0]
    members = plan["instances"][name]["npus"]
    alone = dict(options, instances=[{"name": name, "npus": members}])
    again = dispatch.make_plan(topo, "strict", **alone)
    assert again["instances"][name] == plan["instances"][name]
    for npu in members:
        assert again["npus"][str(npu)] == plan["npus"][str(npu)]


@PROPS
@given(host_case(device_types=("A2",)))
def test_gpu_budget_partitions_the_allowed_cpus(case):
    """The same host as a GPU host (a GPU per NPU, on the NPU's node): frontends never take a
    pool's CPU and the budget partitions the allowed CPUs."""
    topo, options, truth = case
    gpus = [
        {
            "index": n["logic_id"],
            "name": "GPU%d" % n["logic_id"],
            "bus_id": None,
            "numa_node": truth["homes"][n["logic_id"]],
            "affinity": None,
            "links": {},
        }
        for n in topo["npus"]
    ]
    topo = dict(topo, vendor="nvidia", device_type=None, npus=[], npu_map={}, gpus=gpus)
    try:
        plan = dispatch.make_plan(topo, "strict", **options)
    except PlanError as err:
        assert str(err)
        return
    assert_partition(plan, truth["allowed"])
    pools = set()
    for entry in plan["gpus"].values():
        pools |= ids(entry["pool"])
    assert pools <= ids(plan["cpu_budget"]["workers"])
    for inst in plan["instances"].values():
        assert not ids(inst["frontend"]) & pools
