# -*- coding: utf-8 -*-
"""The Kubernetes audit on a recorded A2 turned into a Kubernetes node: the kubelet files (real
formats, tests/fixtures/real/kubernetes) added to its snapshot, recorded through HostIO and
replayed; one pod whose exclusive CPUs sit off its NPUs' node, one aligned pod."""

import json
import os
import shutil

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import facts as kubelet
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.kubernetes import kubernetes_audit
from npuops_testing import SNAPSHOTS, fixture_text

ALIGNED = "6b3c1f0e-2a4d-4c61-9d3e-5f0a7c2b9e11"  # NPUs 0,1 on node 6
MISALIGNED = "0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f"  # NPU 4 on node 0


def k8s_snapshot(tmp_path, profile_text, device_fixture="kubernetes/device_checkpoint_ascend-numa.json"):
    """a2-910b3x8 plus a kubelet: kubeadm's config with the profile merged, a static CPU Manager
    state giving the aligned pod node-6 CPUs and the other pod node-1 CPUs, the device checkpoint."""
    src = os.path.join(SNAPSHOTS, "a2-910b3x8")
    if not os.path.isfile(os.path.join(src, "snapshot.yml")):
        pytest.fail("tests/snapshots/a2-910b3x8 is missing")
    snap = tmp_path / "a2-k8s"
    shutil.copytree(src, str(snap))
    state = {
        "policyName": "static",
        "defaultCpuSet": "0-1,12-29,40-145,156-191",
        "entries": {ALIGNED: {"vllm": "146-155"}, MISALIGNED: {"vllm": "30-39"}},
        "checksum": 1,
    }
    files = {
        "/var/lib/kubelet/config.yaml": profile_text,
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": fixture_text("kubernetes/10-kubeadm.conf"),
        "/var/lib/kubelet/cpu_manager_state": json.dumps(state),
        "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint": fixture_text(device_fixture),
    }
    for path, text in files.items():
        disk = snapshot.disk_path(str(snap), path)
        os.makedirs(os.path.dirname(disk), exist_ok=True)
        with open(disk, "w") as handle:
            handle.write(text)
    return str(snap)


def profiled():
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8")))
    plan = make_plan(facts)
    profile = kubelet_profile(facts, plan, kubelet_version="v1.35.0")
    from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.apply.config import merge_text

    text = merge_text(fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml"), profile["config"])
    return plan, profile, text


def test_audit_one_misaligned_one_aligned_pod(tmp_path):
    plan, profile, text = profiled()
    facts = topology.gather(hostio.SnapshotHostIO(k8s_snapshot(tmp_path, text)))
    report = kubernetes_audit(facts, plan, profile)
    by_pod = dict((row["pod"], row) for row in report["pods"])
    assert by_pod[ALIGNED]["aligned"] is True
    assert by_pod[ALIGNED]["cpu_nodes"] == [6] and by_pod[ALIGNED]["device_nodes"] == [6]
    assert by_pod[MISALIGNED]["aligned"] is False
    assert by_pod[MISALIGNED]["cpu_nodes"] == [1] and by_pod[MISALIGNED]["device_nodes"] == [0]
    assert [(f["kind"], f["pod"]) for f in report["findings"]] == [("pod_cpus_off_devices_node", MISALIGNED)]
    assert MISALIGNED in report["findings"][0]["msg"] and "30-39" in report["findings"][0]["msg"]
    node = report["node"]
    assert node["profile_in_effect"] is True and node["reserved_covers_irq_cpus"] is True
    assert node["device_plugin_numa"] is True and node["misaligned_pods"] == 1


def test_audit_old_device_plugin_and_profile_not_in_effect(tmp_path):
    plan, profile, dummy = profiled()
    kubeadm = fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml")
    snap = k8s_snapshot(tmp_path, kubeadm, "kubernetes/device_checkpoint_no-topology.json")
    facts = topology.gather(hostio.SnapshotHostIO(snap))
    report = kubernetes_audit(facts, plan, profile)
    kinds = sorted(f["kind"] for f in report["findings"])
    assert kinds == ["device_plugin_no_numa", "irq_cpus_not_reserved", "pod_shared_cpus", "profile_not_in_effect"]
    row = report["pods"][0]
    assert row["numa_hints"] is False and row["device_nodes"] == [4]  # NPUs 2,3 by the facts
    assert report["node"]["device_plugin_numa"] is False


def test_kubernetes_facts_recorded_and_replayed(tmp_path):
    plan, profile, text = profiled()
    snap = k8s_snapshot(tmp_path, text)
    root = tmp_path / "root"
    snapshot.copy_host_tree(snap, str(root))
    recorder = hostio.RecordingHostIO(hostio.LiveHostIO(str(root)))
    live = kubelet.gather(recorder, version=False)
    recorder.save(str(tmp_path / "recorded"))
    replayed = kubelet.gather(hostio.SnapshotHostIO(str(tmp_path / "recorded")), version=False)
    assert replayed == live
    assert replayed["cpu_manager_state"]["entries"][MISALIGNED] == {"vllm": "30-39"}
    assert replayed["kubelet"]["effective"]["cpuManagerPolicy"] == "static"


def test_host_without_kubelet_has_no_audit():
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8")))
    assert facts["kubernetes"] is None and kubernetes_audit(facts) is None


def test_fleet_report_carries_the_node_audit_and_a_problem_per_misaligned_pod(tmp_path):
    """build_report: the host's ``kubernetes`` block and one warning row naming the pod UID."""
    from ansible_collections.npuops.fleet.plugins.plugin_utils.report.analysis import build_report

    plan, profile, text = profiled()
    facts = topology.gather(hostio.SnapshotHostIO(k8s_snapshot(tmp_path, text)))
    report = build_report({"k8s-a2": {"facts": facts, "plan_strict": plan}})
    host = report["hosts"][0]
    assert host["kubernetes"]["node"]["misaligned_pods"] == 1
    rows = [p for p in report["problems"] if p["kind"] == "pod_cpus_off_devices_node"]
    assert len(rows) == 1 and rows[0]["severity"] == "warning"
    assert MISALIGNED in rows[0]["evidence"] and "k8s_node" in rows[0]["fix"]
    plain = build_report(
        {
            "a2": {
                "facts": topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8"))),
                "plan_strict": plan,
            }
        }
    )
    assert plain["hosts"][0]["kubernetes"] is None
    assert not [p for p in plain["problems"] if p["kind"] in ("pod_cpus_off_devices_node", "profile_not_in_effect")]
