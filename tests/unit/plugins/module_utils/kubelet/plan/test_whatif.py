# -*- coding: utf-8 -*-
"""kubelet/plan/whatif.py against the kubelet's own table-driven cases (tests/fixtures/kubelet/, ported
as data) and on the recorded A2 with its kubelet profile."""

import os

import pytest
import yaml

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import whatif as w
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from npuops_testing import REPO, SNAPSHOTS

FIXTURES_KUBELET = os.path.join(REPO, "tests", "fixtures", "kubelet")
with open(os.path.join(FIXTURES_KUBELET, "cpu_assignment.yml")) as _handle:
    DATA = yaml.safe_load(_handle)


def topo_of(name):
    spec = dict(DATA["topologies"].get(name) or DATA["more_topologies"][name])
    offset = spec.pop("smt_offset", None)
    if offset:
        spec["smt_siblings"] = ["%d,%d" % (i, i + offset) for i in range(offset)]
    return w.Topo.from_spec(spec["numa_nodes"], spec.get("smt_siblings"), spec.get("packages"), spec.get("sockets"))


def outcome(case):
    got, err = w.take_by_topology(topo_of(case["topo"]), cpulist.parse(case["available"]), case["cpus"])
    return ("error", err) if err else ("cpus", sorted(got))


def agrees(case):
    kind, value = outcome(case)
    if "error" in case:
        return kind == "error" and value == case["error"]
    return kind == "cpus" and value == cpulist.parse(case["expected"])


@pytest.mark.parametrize("case", DATA["take_by_topology"], ids=[c["id"] for c in DATA["take_by_topology"]])
def test_take_by_topology_case(case):
    assert agrees(case), outcome(case)


@pytest.mark.parametrize("case", DATA["free_cpus"], ids=[c["id"] for c in DATA["free_cpus"]])
def test_free_cpus_order_case(case):
    assert w.free_cpus(topo_of(case["topo"]), cpulist.parse(case["available"])) == case["expected"]


COMMON = 13  # the first 13 take_by_topology cases are commonTakeByTopologyTestCases


def distributed(case):
    got, err = w.take_distributed(
        topo_of(case["topo"]), cpulist.parse(case["available"]), case["cpus"], case.get("group", 1)
    )
    return ("error", err) if err else ("cpus", sorted(got))


def agrees_distributed(case):
    kind, value = distributed(case)
    if "error" in case:
        return kind == "error" and value == case["error"]
    return kind == "cpus" and value == cpulist.parse(case["expected"])


def free_units(case):
    acc = w._Acc(topo_of(case["topo"]), cpulist.parse(case["available"]), 0)
    topo = acc.topo

    def free(level):
        units = {"numa": acc.numas, "socket": acc.sockets, "core": acc.cores}[level]()
        size = {
            "numa": lambda u: len(topo.cpus_in(topo.cpus, "numa", u)),
            "socket": lambda u: topo.cpus_per_socket,
            "core": lambda u: topo.cpus_per_core,
        }[level]
        return [u for u in units if len(topo.cpus_in(acc.free, level, u)) == size(u)]

    if case["level"] == "both":
        return [free("socket"), free("numa")]
    got = free(case["level"])
    return sorted(got) if case.get("sort") else got


def accumulator(case):
    acc = w._Acc(topo_of(case["topo"]), cpulist.parse(case["available"]), case["cpus"])
    for text in case["take"]:
        acc.take(set(cpulist.parse(text)))
    return acc.need < 1, acc.need > len(acc.free)


# k of N per Go test function of cpu_assignment_test.go; a case the what-if cannot express is in
# the data with its reason and counted as not agreeing (never skipped)
EXPECTED_K_OF_N = {
    "TestTakeByTopologyNUMAPacked": (16, 24),  # 8 prefer-align-cpus-by-uncorecache cases
    "TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption": (0, 8),  # distribute-cpus-across-cores
    "TestTakeByTopologyNUMADistributed": (30, 30),
    "TestCPUAccumulatorFreeCPUs": (5, 6),  # topoTripleSocketHT not ported
    "TestCPUAccumulatorFreeSockets": (13, 13),
    "TestCPUAccumulatorFreeNUMANodes": (13, 13),
    "TestCPUAccumulatorFreeSocketsAndNUMANodes": (4, 4),
    "TestCPUAccumulatorFreeCores": (8, 8),
    "TestCPUAccumulatorTake": (6, 6),
}


def tally():
    out = {}

    def add(name, ok):
        k, n = out.get(name, (0, 0))
        out[name] = (k + (1 if ok else 0), n + 1)

    for case in DATA["take_by_topology"]:
        add("TestTakeByTopologyNUMAPacked", agrees(case))
    for case in DATA["packed_options"]:
        add("TestTakeByTopologyNUMAPacked", False)
    for case in DATA["spread"]:
        add("TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption", False)
    for case in DATA["take_by_topology"][:COMMON] + DATA["distributed"]:
        add("TestTakeByTopologyNUMADistributed", agrees_distributed(case))
    for case in DATA["free_cpus"]:
        add(
            "TestCPUAccumulatorFreeCPUs",
            w.free_cpus(topo_of(case["topo"]), cpulist.parse(case["available"])) == case["expected"],
        )
    for case in DATA["free_cpus_not_ported"]:
        add("TestCPUAccumulatorFreeCPUs", False)
    for case in DATA["free_units"]:
        add(case["function"], free_units(case) == case["expected"])
    for case in DATA["accumulator_take"]:
        add("TestCPUAccumulatorTake", accumulator(case) == (case["satisfied"], case["failed"]))
    return out


def test_k_of_n_kubelet_cases_agree():
    assert tally() == EXPECTED_K_OF_N


def test_cases_not_expressible_say_why():
    for case in DATA["packed_options"] + DATA["spread"] + DATA["free_cpus_not_ported"]:
        assert "not modelled" in case["not_expressible"] or "not ported" in case["not_expressible"]


@pytest.mark.parametrize(
    "case",
    DATA["take_by_topology"][:COMMON] + DATA["distributed"],
    ids=[c["id"] for c in DATA["take_by_topology"][:COMMON] + DATA["distributed"]],
)
def test_take_distributed_case(case):
    assert agrees_distributed(case), distributed(case)


@pytest.mark.parametrize(
    "case", DATA["free_units"], ids=["%s-%d" % (c["function"], i) for i, c in enumerate(DATA["free_units"])]
)
def test_free_units_case(case):
    assert free_units(case) == case["expected"]


def test_hint_merge_rules():
    nodes = [0, 1]
    one = [(frozenset([0]), True), (frozenset([1]), True), (frozenset([0, 1]), False)]
    two_only = [(frozenset([0, 1]), True)]
    assert w.merge_hints("single-numa-node", [one, None], nodes) == (frozenset([0]), True, True)
    assert w.merge_hints("single-numa-node", [two_only], nodes)[2] is False
    assert w.merge_hints("restricted", [two_only], nodes) == (frozenset([0, 1]), True, True)
    # CPUs fit node 1 only, the devices node 0 only: nothing preferred is left
    mask, preferred, admit = w.merge_hints(
        "restricted",
        [[(frozenset([1]), True), (frozenset([0, 1]), False)], [(frozenset([0]), True), (frozenset([0, 1]), False)]],
        nodes,
    )
    assert (mask, preferred, admit) == (frozenset([0]), False, False)  # narrowest, not preferred
    assert w.merge_hints("best-effort", [[(frozenset([1]), True)], [(frozenset([0]), True)]], nodes)[2] is True


def a2():
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8")))
    return facts, kubelet_profile(facts, make_plan(facts), pod_devices=2)


def test_a2_pod_with_two_npus_lands_on_their_node():
    facts, profile = a2()
    topo = w.Topo.from_facts(facts)
    reserved = cpulist.parse(profile["reserved_cpus"])
    npu_nodes = [n["numa_node"] for n in facts["npus"]]  # 6,6,4,4,0,0,2,2
    pod = {"count": 2, "nodes": npu_nodes, "free": [6, 6]}  # only NPUs 0,1 free
    got = w.whatif(topo, reserved, 20, pod, policy=profile["config"]["topologyManagerPolicy"])
    assert got["admitted"] and got["numa_nodes"] == [6]
    assert got["cpus"] == "146-155,158-167"  # node 6 minus the IRQ CPUs 144-145, 156-157
    # 21 CPUs do not fit node 6's 20 unreserved ones: single-numa-node refuses
    refused = w.whatif(topo, reserved, 21, pod, policy="single-numa-node")
    assert not refused["admitted"] and "TopologyAffinityError" in refused["reason"]
    # restricted, 8 NPUs, 80 CPUs: the CPU hint {0,2,4,6} (4 nodes are the fewest that hold 80
    # CPUs) and the device hint {0,2,4,6} are the same mask, so their merge is preferred (the
    # kubelet since 1.24 prefers a merge only of equal masks): the CPUs come from the NPUs' nodes
    whole = w.whatif(topo, reserved, 80, {"count": 8, "nodes": npu_nodes}, policy="restricted")
    assert whole["admitted"] and whole["numa_nodes"] == [0, 2, 4, 6]
    assert whole["hint"] == {"numa_nodes": [0, 2, 4, 6], "preferred": True}
    # before 1.24 a merge of {0,1,3,5} and {0,2,4,6} was "preferred" too: {0}, the narrowest
    legacy = w.whatif(topo, reserved, 80, {"count": 8, "nodes": npu_nodes}, policy="restricted", version="v1.23.0")
    assert legacy["hint"] == {"numa_nodes": [0], "preferred": True}
    assert legacy["numa_nodes"] == [0, 1, 2, 3]


def test_restricted_refuses_cpus_narrower_than_the_devices():
    """The current merge: a CPU request that fits one node merged with two NPUs on two nodes is
    never preferred (the masks differ), so restricted refuses it; best-effort admits it."""
    facts, profile = a2()
    topo = w.Topo.from_facts(facts)
    reserved = cpulist.parse(profile["reserved_cpus"])
    pod = {"count": 2, "nodes": [4, 6], "free": [4, 6]}  # one NPU on each of nodes 4 and 6
    refused = w.whatif(topo, reserved, 8, pod, policy="restricted")
    assert not refused["admitted"] and "TopologyAffinityError" in refused["reason"]
    assert w.whatif(topo, reserved, 8, pod, policy="best-effort")["admitted"]
    # the 1.23 kubelet took {4} & {4,6} as preferred
    assert w.whatif(topo, reserved, 8, pod, policy="restricted", version="1.23")["admitted"]


def test_none_does_not_align():
    facts, profile = a2()
    topo = w.Topo.from_facts(facts)
    reserved = cpulist.parse(profile["reserved_cpus"])
    got = w.whatif(topo, reserved, 4, {"count": 1, "nodes": [6], "free": [6]}, policy="none")
    assert got["admitted"] and got["hint"] is None
    assert got["numa_nodes"] != [6]  # packed from the lowest free node, not the NPU's


def test_smt_alignment_error_for_lack_of_physical_cpus():
    topo = topo_of("topoDualSocketHT")
    got = w.whatif(topo, [1, 6], 10, None, policy="best-effort", full_pcpus_only=True)
    assert not got["admitted"]
    assert got["reason"] == (
        "SMTAlignmentError: not enough free physical CPUs: available physical CPUs = 8, "
        "requested CPUs = 10, CPUs per core = 2"
    )


def test_full_pcpus_only_refuses_odd_requests():
    topo = topo_of("topoDualSocketHT")
    got = w.whatif(topo, [0, 6], 3, None, policy="restricted", full_pcpus_only=True)
    assert not got["admitted"] and "SMTAlignmentError" in got["reason"]
    ok = w.whatif(topo, [0, 6], 4, None, policy="restricted", full_pcpus_only=True)
    assert ok["admitted"] and ok["numa_nodes"] == [0]


def test_whatif_distributes_across_numa_when_the_option_is_on():
    topo = topo_of("topoDualSocketMultiNumaPerSocketHT")
    packed = w.whatif(topo, [], 26, None, policy="best-effort")
    spread = w.whatif(topo, [], 26, None, policy="best-effort", distribute_numa=True)
    assert packed["cpus"] != spread["cpus"]
    assert spread["cpus"] == "0-6,10-16,40-45,50-55" and spread["numa_nodes"] == [0, 1]
