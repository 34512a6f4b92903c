# -*- coding: utf-8 -*-
"""kubelet/plan/policy_choice.py: the topology policy chosen by running the kubelet what-if for
each pod shape of the recorded A2, A3 and DGX hosts under each candidate policy."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import policy_choice as choice
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from npuops_testing import SNAPSHOTS

INSTANCES = {
    "a2-910b3x8": [{"name": "a", "npus": [0, 1]}, {"name": "b", "npus": [2, 3, 4, 5]}, {"name": "c", "npus": [6, 7]}],
    "a3-16die": [{"name": "tp2-%d" % i, "npus": [2 * i, 2 * i + 1]} for i in range(8)],
    "dgx-a100": [{"name": "tp4a", "npus": [0, 1, 2, 3]}, {"name": "tp4b", "npus": [4, 5, 6, 7]}],
}


def facts_of(host):
    return topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))


# host, instances or pod_devices -> the policy the what-if chooses (kubelet 1.33)
CHOSEN = [
    ("a2-910b3x8", 2, "single-numa-node"),  # two NPUs and 20 CPUs fit one node
    ("a2-910b3x8", 4, "restricted"),  # four NPUs need two nodes, so do their 40 CPUs
    ("a2-910b3x8", None, "restricted"),  # every NPU: 8 on nodes 0,2,4,6, 80 CPUs there
    ("a2-910b3x8", "instances", "restricted"),  # instance b: NPUs 2-5 on nodes 4 and 0
    ("a3-16die", 2, "single-numa-node"),
    ("a3-16die", "instances", "single-numa-node"),  # each TP2 instance on its own node
    ("dgx-a100", 2, "single-numa-node"),
    ("dgx-a100", "instances", "restricted"),  # TP4: GPUs on nodes 1,3 and 5,7
]


@pytest.mark.parametrize("host,pods,policy", CHOSEN, ids=["%s-%s" % (h, p) for h, p, dummy in CHOSEN])
def test_policy_chosen_for_the_recorded_hosts(host, pods, policy):
    facts = facts_of(host)
    if pods == "instances":
        prof = kubelet_profile(facts, make_plan(facts, instances=INSTANCES[host]), kubelet_version="v1.33.0")
    else:
        prof = kubelet_profile(facts, make_plan(facts), pod_devices=pods, kubelet_version="v1.33.0")
    assert prof["config"]["topologyManagerPolicy"] == policy
    assert prof["topology_reason"].startswith("%s admits every pod shape" % policy)
    assert [g["name"] for g in prof["device_groups"]] == (
        [i["name"] for i in INSTANCES[host]] if pods == "instances" else []
    )
    reserved = set(cpulist.parse(prof["reserved_cpus"]))
    for row in prof["topology_policy_whatif"]:
        got = row["results"][policy]
        assert got["admitted"] and reserved.isdisjoint(cpulist.parse(got["cpus"]))
        assert len(cpulist.parse(got["cpus"])) == row["cpus"]


def test_the_refusal_of_the_stricter_policy_is_the_reason():
    facts = facts_of("a2-910b3x8")
    prof = kubelet_profile(facts, make_plan(facts, instances=INSTANCES["a2-910b3x8"]), kubelet_version="v1.33.0")
    assert (
        "single-numa-node would refuse plan instance b with npus 2,3,4,5: 40 CPUs - "
        "TopologyAffinityError" in prof["topology_reason"]
    )
    b = [r for r in prof["topology_policy_whatif"] if r["name"] == "b"][0]
    assert b["device_numa_nodes"] == [0, 4]
    assert b["results"]["restricted"]["numa_nodes"] == [0, 4]  # the NPUs' own nodes
    assert b["results"]["restricted"]["hint"] == {"numa_nodes": [0, 4], "preferred": True}


def test_a_pod_narrower_in_cpus_than_its_devices_gets_best_effort():
    """Today's rule ("restricted for device groups spanning nodes") re-derived: since 1.24 a
    one-node CPU hint and a two-node device hint never merge preferred, so restricted refuses."""
    facts = facts_of("a2-910b3x8")
    plan = make_plan(facts)
    plan["instances"] = {"x": {"npus": [0, 2]}}  # nodes 6 and 4, 20 CPUs (one node's worth)
    prof = kubelet_profile(facts, plan, kubelet_version="v1.33.0")
    assert prof["config"]["topologyManagerPolicy"] == "best-effort"
    assert "restricted would refuse plan instance x with npus 0,2" in prof["topology_reason"]
    x = prof["topology_policy_whatif"][0]
    assert x["results"]["best-effort"]["admitted"] and x["results"]["best-effort"]["hint"]["preferred"] is False


def test_no_device_keeps_restricted_with_its_reason():
    facts = facts_of("x86-none")
    got = choice.choose(facts, {"npus": {}, "gpus": {}}, [0])
    assert got == {
        "policy": "restricted",
        "shapes": [],
        "reason": "no NPU or GPU in the plan: restricted still aligns CPUs and memory",
    }


@pytest.mark.parametrize(
    "specs,message",
    [
        ("x", "a list of"),
        ([{"name": "p", "devices": 2}], r"\[0\] \(p\): cpus must be an integer"),
        ([{"name": "p", "devices": 9, "cpus": 4}], r"devices must be a count 0-8"),
        ([{"name": "p", "devices": [0, 42], "cpus": 4}], r"devices \[42\] are not planned npus"),
        ([{"devices": 1, "cpus": 4}], "each shape is a dict with a name"),
    ],
)
def test_user_shapes_are_checked_with_their_source(specs, message):
    facts = facts_of("a2-910b3x8")
    with pytest.raises(PlanError, match="npuops_audit_pod_shapes.*" + message):
        choice.shapes_from_spec(make_plan(facts), specs, "npuops_audit_pod_shapes")


def test_user_shapes_run():
    facts = facts_of("a2-910b3x8")
    plan = make_plan(facts)
    prof = kubelet_profile(facts, plan)
    shapes = choice.shapes_from_spec(
        plan,
        [{"name": "two", "devices": [0, 1], "cpus": 16}, {"name": "any4", "devices": 4, "cpus": 40}],
        "npuops_audit_pod_shapes",
    )
    rows = choice.evaluate(facts, cpulist.parse(prof["reserved_cpus"]), shapes, ("single-numa-node", "restricted"))
    two, any4 = rows
    assert two["results"]["single-numa-node"]["numa_nodes"] == [6]
    assert not any4["results"]["single-numa-node"]["admitted"]
    assert any4["results"]["restricted"]["admitted"]


@pytest.mark.parametrize(
    "instances,message",
    [
        ({"x": {"npus": 3}}, "plan instances x npus: a list of device ids, got 3"),
        ({"x": "npus"}, "plan instances x npus: a list of device ids"),
        ({"x": {"npus": [0, 99]}}, "plan instances x: npus 99 are not in the plan's npus"),
        ([1], "plan instances: a mapping"),
    ],
)
def test_malformed_plan_instances_are_plan_errors(instances, message):
    facts = facts_of("a2-910b3x8")
    plan = dict(make_plan(facts), instances=instances)
    with pytest.raises(PlanError, match=message):
        choice.pod_shapes(plan, [])
