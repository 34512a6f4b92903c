# -*- coding: utf-8 -*-
"""The binder takes each device's NUMA node (its ``migratepages`` target) from the plan JSON
(``npuops_instance.device_nodes``, schema 2, docs/plan-json.md) and finds it itself only in a
plan that lacks it: a schema 1 file, written by an earlier release, is still read."""

import json

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import binder, rules, targets
from npuops_testing import cpu_hosts

# A schema 1 plan JSON as an earlier release wrote it: the whole plan, an instance block with
# main / pool / visible, no device_nodes. NPU1's entry has no numa_nodes.
OLD_PLAN_JSON = """{
  "policy": "strict", "mode": "topo_affinity", "device_type": "A2", "skipped": false,
  "reason": null, "hostname": "a2", "vendor": "ascend",
  "numa_nodes": {"0": "0-47", "1": "48-95", "2": "96-143", "3": "144-191"},
  "npus": {"0": {"pool": "144-167", "numa_nodes": [3], "irq": "144-145", "main": "146-165",
                 "acl": "166", "release": "167", "home_node": 3},
           "1": {"pool": "48-71", "irq": "48-49", "main": "50-69", "acl": "70", "release": "71"}},
  "instances": {"svc": {"npus": [0, 1], "main": "50-69,146-165", "pool": "48-71,144-167",
                        "numa_nodes": [1, 3], "env": {"ASCEND_RT_VISIBLE_DEVICES": "0,1"}}},
  "log": [], "warnings": [], "env": {},
  "npuops_instance": {"schema": 1, "name": "svc", "vendor": "ascend", "devices": [0, 1],
                      "main": "50-69,146-165", "pool": "48-71,144-167", "binding": "host",
                      "visible": [0, 1]}
}
"""


def _binder(doc):
    return binder.Binder(doc, binder.parse_args(["--plan", "svc.plan.json"]), None)


def test_the_binder_takes_the_plans_device_node():
    """The plan gives NPU0 node 2 while its entry lists node 3 and its CPUs lie on node 3:
    the node the plan gives is the one the binder migrates to."""
    doc = json.loads(OLD_PLAN_JSON)
    doc["npuops_instance"].update(schema=2, device_nodes={"0": 2, "1": 1})
    one = _binder(doc)
    assert one.device_targets[0]["node"] == 2
    assert one.device_targets[1]["node"] == 1


def test_an_old_plan_file_is_read_as_its_binder_read_it():
    """Schema 1: the entry's first node, else the node of its main CPUs."""
    one = _binder(json.loads(OLD_PLAN_JSON))
    assert [one.device_targets[d]["node"] for d in (0, 1)] == [3, 1]
    assert one.device_targets[0]["main"] == list(range(146, 166))
    assert one.frontend is None and one.devices == [0, 1]


def test_a_device_the_plan_gives_no_node_falls_back():
    doc = json.loads(OLD_PLAN_JSON)
    doc["npuops_instance"]["device_nodes"] = {"0": 2}
    one = _binder(doc)
    assert [one.device_targets[d]["node"] for d in (0, 1)] == [2, 1]


@pytest.mark.parametrize(
    "nodes, words",
    [
        ([2], "device_nodes is a list"),
        ({"0": "x"}, "device_nodes 0: 'x' is not a NUMA node id"),
        ({"0": True}, "is not a NUMA node id"),
    ],
)
def test_bad_device_nodes_are_refused_naming_the_field(nodes, words):
    doc = json.loads(OLD_PLAN_JSON)
    doc["npuops_instance"]["device_nodes"] = nodes
    with pytest.raises(rules.BindError, match=words):
        _binder(doc)


def test_the_plan_json_of_a_real_plan_gives_each_devices_home_node():
    """From npu_cpu_plan to the binder: the node the strict plan chose for each NPU (its home)
    is the node the binder reads, carried once in the plan JSON."""
    plan = dispatch.make_plan(cpu_hosts.a2(), "strict", instances=[{"name": "svc", "npus": [1, 3]}])
    view = launch.instance_view(plan, "svc")
    doc = json.loads(launch.render_plan_json(plan, view, "host"))
    homes = dict((str(d), plan["npus"][str(d)]["home_node"]) for d in (1, 3))
    assert doc["npuops_instance"]["device_nodes"] == homes
    one = _binder(doc)
    assert dict((str(d), t["node"]) for d, t in one.device_targets.items()) == homes
    assert targets.planned_node(doc, 1) == homes["1"]
