# -*- coding: utf-8 -*-
"""kubelet/plan/profile.py on the recorded A2, A3 and DGX snapshots and on small hosts."""

import copy
import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile, parse_quantity
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from npuops_testing import SNAPSHOTS, cpu_hosts

_CACHE = {}


def recorded(snap):
    if snap not in _CACHE:
        path = os.path.join(SNAPSHOTS, snap)
        if not os.path.isfile(os.path.join(path, "snapshot.yml")):
            pytest.fail("tests/snapshots/%s is missing" % snap)
        facts = topology.gather(hostio.SnapshotHostIO(path))
        _CACHE[snap] = (facts, make_plan(facts))
    return _CACHE[snap]


def irq_cpus_of(plan):
    return set(c for e in plan["npus"].values() for c in cpulist.parse(e["irq"]))


def test_a2_reserved_is_exactly_the_irq_cpus_whole_host_pods_restricted():
    facts, plan = recorded("a2-910b3x8")
    prof = kubelet_profile(facts, plan, kubelet_version="v1.35.1")
    cfg = prof["config"]
    assert set(cpulist.parse(cfg["reservedSystemCPUs"])) == irq_cpus_of(plan)
    assert cfg["reservedSystemCPUs"] == "0-1,12-13,48-49,60-61,96-97,108-109,144-145,156-157"
    assert prof["irq_nodes"] == [0, 2, 4, 6]
    assert cfg["cpuManagerPolicy"] == "static" and cfg["topologyManagerScope"] == "pod"
    assert "full-pcpus-only" not in cfg["cpuManagerPolicyOptions"]  # no SMT on Kunpeng 920
    assert cfg["cpuManagerPolicyOptions"]["strict-cpu-reservation"] == "true"
    # 8 NPUs, 2 per node: a whole-host pod spans 4 nodes
    assert cfg["topologyManagerPolicy"] == "restricted"
    assert cfg["topologyManagerPolicyOptions"] == {"prefer-closest-numa-nodes": "true"}
    assert prof["exclusive_cpus_per_node"]["0"] == 20 and prof["exclusive_cpus_per_node"]["1"] == 24
    banned = set(cpulist.parse(prof["banned_cpus"]))
    assert banned.isdisjoint(cpulist.parse(cfg["reservedSystemCPUs"])) and len(banned) == 192 - 16


def test_a2_two_npu_pods_fit_one_node():
    facts, plan = recorded("a2-910b3x8")
    prof = kubelet_profile(facts, plan, pod_devices=2)
    assert prof["config"]["topologyManagerPolicy"] == "single-numa-node"
    assert "topologyManagerPolicyOptions" not in prof["config"]
    # version unknown: KEP-4540's option is left out, and the profile says why
    assert "cpuManagerPolicyOptions" not in prof["config"]
    assert any("strict-cpu-reservation" in w for w in prof["warnings"])
    assert kubelet_profile(facts, plan, pod_devices=3)["config"]["topologyManagerPolicy"] == "restricted"


def test_a3_smt_full_pcpus_and_unknown_siblings_warned():
    facts, plan = recorded("a3-16die")
    prof = kubelet_profile(facts, plan, kubelet_version="1.33.0")
    cfg = prof["config"]
    assert cfg["cpuManagerPolicyOptions"]["full-pcpus-only"] == "true"
    assert set(cpulist.parse(cfg["reservedSystemCPUs"])) == irq_cpus_of(plan)
    assert len(cpulist.parse(cfg["reservedSystemCPUs"])) == 32
    assert prof["irq_nodes"] == list(range(8))
    assert cfg["topologyManagerPolicy"] == "restricted"
    assert any("siblings are unknown" in w for w in prof["warnings"])


def test_dgx_nic_irq_cores_whole_cores_on_the_paired_nics_nodes():
    facts, plan = recorded("dgx-a100")
    prof = kubelet_profile(facts, plan, kubelet_version="v1.35.0")
    cfg = prof["config"]
    reserved = cpulist.parse(cfg["reservedSystemCPUs"])
    assert cfg["reservedSystemCPUs"] == "16,48,80,112,144,176,208,240"
    assert prof["irq_nodes"] == [1, 3, 5, 7]  # the nodes of mlx5_0..7, the GPUs' rails
    siblings = [set(cpulist.parse(s)) for s in facts["cpu"]["smt_siblings"]]
    for cpu in reserved:  # whole cores: each CPU's sibling is reserved too
        assert next(s for s in siblings if cpu in s) <= set(reserved)
    assert cfg["cpuManagerPolicyOptions"]["full-pcpus-only"] == "true"
    assert cfg["topologyManagerPolicy"] == "restricted"
    assert "8 gpus" in prof["topology_reason"]


def test_instances_decide_the_topology_policy():
    facts, plan = recorded("a2-910b3x8")
    plan = dict(plan, instances={"a": {"npus": [0, 1]}, "b": {"npus": [4]}})
    prof = kubelet_profile(facts, plan)
    assert prof["config"]["topologyManagerPolicy"] == "single-numa-node"
    assert prof["device_groups"] == [{"name": "a", "numa_nodes": [6]}, {"name": "b", "numa_nodes": [0]}]
    # two NPUs on nodes 4 and 2 with a CPU request one node holds: the kubelet (1.24+) never
    # prefers the merge of a one-node CPU hint and a two-node device hint, so restricted
    # refuses the pod as single-numa-node does; only best-effort admits it
    plan["instances"]["c"] = {"npus": [2, 6]}
    prof = kubelet_profile(facts, plan)
    assert prof["config"]["topologyManagerPolicy"] == "best-effort"
    assert "restricted would refuse plan instance c" in prof["topology_reason"]
    # four NPUs on two nodes (more than one node holds) with CPUs of two nodes: both hints are
    # the same two nodes, preferred: restricted admits it
    del plan["instances"]["c"]
    plan["instances"]["d"] = {"npus": [2, 3, 6, 7], "pool": "48-71,96-119"}
    prof = kubelet_profile(facts, plan)
    assert prof["config"]["topologyManagerPolicy"] == "restricted"
    assert "single-numa-node would refuse plan instance d" in prof["topology_reason"]
    d = [r for r in prof["topology_policy_whatif"] if r["name"] == "d"][0]
    assert d["results"]["restricted"]["numa_nodes"] == [2, 4]


def test_housekeeping_cpus_added_and_outside_refused():
    facts, plan = recorded("a2-910b3x8")
    prof = kubelet_profile(facts, plan, housekeeping_cpus="24-25")
    assert "24-25" in prof["config"]["reservedSystemCPUs"]
    with pytest.raises(PlanError, match="outside"):
        kubelet_profile(facts, plan, housekeeping_cpus="500")


def test_memory_manager_reserved_memory_sums_kube_system_and_eviction():
    facts, plan = recorded("a2-910b3x8")
    current = {"kubeReserved": {"memory": "2Gi"}, "evictionHard": {"memory.available": "500Mi"}}
    prof = kubelet_profile(facts, plan, memory_manager=True, current=current, memory={"system_reserved_memory": "1Gi"})
    cfg = prof["config"]
    assert cfg["memoryManagerPolicy"] == "Static"
    assert cfg["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "3572Mi"}}]  # 2048+1024+500
    assert cfg["systemReserved"] == {"memory": "1Gi"} and "kubeReserved" not in cfg
    with pytest.raises(PlanError, match="percentage"):
        kubelet_profile(facts, plan, memory_manager=True, current={"evictionHard": {"memory.available": "5%"}})


@pytest.mark.parametrize(
    "text, value", [("1Gi", 2**30), ("500M", 500 * 10**6), ("1.5Gi", 3 * 2**29), ("1024", 1024), ("100Mi", 100 * 2**20)]
)
def test_quantities(text, value):
    assert parse_quantity(text, "q") == value


@pytest.mark.parametrize("bad", ["1GB", "-1Gi", "", None, "1e3"])
def test_bad_quantity(bad):
    with pytest.raises(PlanError, match="memory quantity"):
        parse_quantity(bad, "kube_reserved_memory")


def test_many_nodes_get_max_allowable_numa_nodes_and_skipped_plan_refused():
    host = cpu_hosts.a2()
    host["cpu"]["numa_nodes"] = dict((str(n), "%d-%d" % (n * 12, n * 12 + 11)) for n in range(16))
    plan = make_plan(host)
    prof = kubelet_profile(host, plan, kubelet_version="v1.31.0")
    assert prof["config"]["topologyManagerPolicyOptions"]["max-allowable-numa-nodes"] == "16"
    # before 1.31 (and with the version unknown) the kubelet refuses any policy but none on
    # more than 8 nodes: the profile says none, and why
    for version in ("v1.30.4", None):
        prof = kubelet_profile(host, plan, kubelet_version=version)
        assert prof["config"]["topologyManagerPolicy"] == "none"
        assert "topologyManagerPolicyOptions" not in prof["config"]
        assert any("16 NUMA nodes" in w for w in prof["warnings"])
    with pytest.raises(PlanError, match="skipped"):
        kubelet_profile(host, dict(plan, skipped=True, reason="x86_64"))


def test_irq_targets_moved_onto_the_reserved_cpus_of_their_node():
    from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import irq_targets_on_reserved

    nodes = {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
    targets = [
        {"irq": 10, "device": "GPU0/mlx5_0", "role": "comp0", "cpus": [2]},
        {"irq": 11, "device": "GPU0/mlx5_0", "role": "comp1", "cpus": [3]},
        {"irq": 12, "device": "GPU0/mlx5_0", "role": "comp2", "cpus": [1]},
        {"irq": 20, "device": "NPU1", "role": "sq", "cpus": [4]},
        {"irq": 30, "device": "GPU1/mlx5_1", "role": "comp0", "cpus": [6]},
    ]
    out, warnings = irq_targets_on_reserved(targets, [0, 1, 4], nodes)
    assert [t["cpus"] for t in out] == [[0], [1], [1], [4], [4]]
    assert warnings == []
    out, warnings = irq_targets_on_reserved(targets, [0], nodes)
    assert out[3]["cpus"] == [4] and "no reserved CPU on NUMA node 1" in warnings[0]


@pytest.mark.parametrize("field, value", [("home_node", [0]), ("home_node", True), ("home_node", "0")])
def test_a_device_node_that_is_not_an_id_is_a_plan_error(field, value):
    # found by tests/unit/fuzz/test_fuzz_kubelet.py: a list as a node was a TypeError
    facts, plan = recorded("a3-16die")
    plan = copy.deepcopy(plan)
    plan["npus"]["0"][field] = value
    with pytest.raises(PlanError, match="npus 0 home_node: .* is not a NUMA node id"):
        kubelet_profile(facts, plan)


@pytest.mark.parametrize("budget", [True, "0-3", [0, 1]])
def test_a_cpu_budget_that_is_no_mapping_is_named(budget):
    """Found by the kubelet fuzz: a plan whose cpu_budget is not a mapping is a PlanError naming
    the field, never an AttributeError."""
    from npuops_testing.module_harness import facts_of, plan_of

    plan = dict(plan_of("dgx-a100"), cpu_budget=budget)
    with pytest.raises(PlanError, match="plan cpu_budget"):
        kubelet_profile(facts_of("dgx-a100"), plan)
