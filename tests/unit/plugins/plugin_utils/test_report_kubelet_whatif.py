# -*- coding: utf-8 -*-
"""The kubelet what-if in the fleet report, on the recorded A2 turned into a Kubernetes node
(test_report_kubernetes.k8s_snapshot: the profile in effect, two device pods running): per pod
shape of npuops_vllm_instances and npuops_audit_pod_shapes, admitted or not, which CPUs and NUMA
nodes, in the report's JSON, markdown and HTML."""

import importlib.util
import json
import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.analysis import build_report, render_json
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html import render_html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.kubelet_whatif import whatif_audit
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.markdown import render_markdown
from npuops_testing import SNAPSHOTS

# the recorded Kubernetes node of the Kubernetes audit's own test, used as it builds it
_SPEC = importlib.util.spec_from_file_location(
    "npuops_report_kubernetes_node", os.path.join(os.path.dirname(__file__), "test_report_kubernetes.py")
)
_NODE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_NODE)
k8s_snapshot, profiled = _NODE.k8s_snapshot, _NODE.profiled

INSTANCES = [{"name": "tp2", "npus": [0, 1]}, {"name": "tp4", "npus": [2, 3, 4, 5]}]
SHAPES = [
    {"name": "one-npu", "devices": 1, "cpus": 10},
    {"name": "wide", "devices": [0, 2], "cpus": 20},
    {"name": "odd", "devices": 1, "cpus": 3},
]


@pytest.fixture
def node(tmp_path):
    plan, profile, text = profiled()
    facts = topology.gather(hostio.SnapshotHostIO(k8s_snapshot(tmp_path, text)))
    return facts, plan, profile


def test_rows_of_a_recorded_node(node):
    facts, plan, profile = node
    audit = whatif_audit(facts, plan, INSTANCES, SHAPES)
    assert audit["error"] is None
    kubelet = audit["kubelet"]
    assert kubelet["topology_manager_policy"] == profile["config"]["topologyManagerPolicy"] == "restricted"
    assert kubelet["cpu_manager_policy"] == "static" and kubelet["merge_rule"] == "equal-masks"
    rows = dict((r["name"], r) for r in audit["shapes"])
    # tp2: NPUs 0,1 on node 6 and the 20 free CPUs there; now the aligned pod holds 146-155 and
    # both NPUs of node 6, so its NPUs are gone: refused now, admitted on an empty node
    assert rows["tp2"]["empty"] == {"admitted": True, "cpus": "146-155,158-167", "numa_nodes": [6], "reason": None}
    assert rows["tp2"]["now"]["admitted"] is False
    assert "TopologyAffinityError" in rows["tp2"]["now"]["reason"]
    # tp4: four NPUs on nodes 4 and 0, 40 CPUs: restricted admits it on those two nodes
    assert rows["tp4"]["empty"]["admitted"] and rows["tp4"]["empty"]["numa_nodes"] == [0, 4]
    # two NPUs on nodes 6 and 4 with one node's worth of CPUs: restricted refuses it
    assert rows["wide"]["empty"]["admitted"] is False
    assert rows["one-npu"]["now"]["admitted"] is True
    assert rows["odd"]["empty"]["admitted"] is True  # no SMT on this host: no full-pcpus-only


def test_rows_in_json_markdown_and_html(node):
    facts, plan, dummy = node
    entry = {"facts": facts, "plan_strict": plan, "config": {"instances": INSTANCES}, "pod_shapes": SHAPES}
    report = build_report({"a2-k8s": entry})
    data = json.loads(render_json(report))
    host = [h for h in data["hosts"] if h["name"] == "a2-k8s"][0]
    shapes = host["kubernetes_whatif"]["shapes"]
    assert [s["name"] for s in shapes] == ["tp2", "tp4", "one-npu", "wide", "odd"]
    md = render_markdown(report)
    assert "## Kubernetes: what the kubelet does with each pod shape" in md
    assert (
        "| a2-k8s | version unknown, cpu static, topology restricted (prefer-closest-numa-nodes) | tp2 | "
        "2 npus | 20 | REFUSED | - | TopologyAffinityError: the best merged hint (NUMA 0, not preferred) is "
        "not admitted by restricted | admitted | 146-155,158-167 | 6 |"
    ) in md
    page = render_html(report)
    assert 'id="kubelet-whatif"' in page and "146-155,158-167" in page


def test_bad_user_shapes_are_reported_not_raised(node):
    facts, plan, dummy = node
    audit = whatif_audit(facts, plan, None, [{"name": "x", "devices": 1}])
    assert audit["shapes"] == [] and "npuops_audit_pod_shapes[0] (x): cpus must be an integer" in audit["error"]


@pytest.mark.parametrize("instances", [[{"name": "x", "npus": 3}], "tp2", [1]])
def test_malformed_instances_are_reported_not_raised(node, instances):
    facts, plan, dummy = node
    audit = whatif_audit(facts, plan, instances, None)
    assert audit["shapes"] == [] and audit["error"].startswith("npuops_vllm_instances: a list of")


def test_no_kubelet_no_section():
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8")))
    assert whatif_audit(facts, {}, INSTANCES, SHAPES) is None
    report = build_report({"a2": {"facts": facts}})
    assert "what the kubelet does" not in render_markdown(report)
