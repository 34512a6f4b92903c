# -*- coding: utf-8 -*-
"""Every device a Kubernetes node hands out, audited: the recorded Ascend 950 host (a5-950) made
a Kubernetes node whose kubelet records a 950 pod, a Volcano-mode pod (its kubelet ids are not
its chips), a soft-share pod and a DRA claim (real formats, tests/fixtures/real/kubernetes),
recorded through HostIO and replayed; then the rules one by one on facts dicts."""

import json
import os
import shutil

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.apply.config import merge_text
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import facts as kubelet
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as parse
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import kubernetes_devices as kd
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.kubernetes import kubernetes_audit
from npuops_testing import SNAPSHOTS, fixture_text

P950 = "3f2a9c1e-0b7d-4e5a-8c6f-1d2e3f4a5b60"  # npu-0,1 = chips 0,1 (node 0), CPUs node 0
PVOL = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"  # ids npu-2,3 (node 1) but chips 6,7 (node 3)
PSOFT = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"  # ids npu-4-0..3, chip 5 (node 2), CPUs node 2
PDRA = "d4c3b2a1-6f5e-4b7a-9d8c-5d4c3b2a1f0e"  # DRA npu.huawei.com npu-4 (node 2), CPUs node 1
CPU_STATE = {
    "policyName": "static",
    "defaultCpuSet": "1-9,26-99,116-119,128-199,204-383",
    "entries": {
        P950: {"vllm": "10-25"},
        PVOL: {"vllm": "100-115"},
        PSOFT: {"vllm": "200-203"},
        PDRA: {"vllm": "120-127"},
    },
    "checksum": 1,
}


def a5_node(tmp_path):
    """a5-950 plus a kubelet running the collection's profile, and the device records."""
    src = os.path.join(SNAPSHOTS, "a5-950")
    facts = topology.gather(hostio.SnapshotHostIO(src))
    plan = make_plan(facts)
    profile = kubelet_profile(facts, plan, kubelet_version="v1.35.0")
    snap = str(tmp_path / "a5-k8s")
    shutil.copytree(src, snap)
    kubelet_config = merge_text(fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml"), profile["config"])
    files = {
        "/var/lib/kubelet/config.yaml": kubelet_config,
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": fixture_text("kubernetes/10-kubeadm.conf"),
        "/var/lib/kubelet/cpu_manager_state": json.dumps(CPU_STATE),
        "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint": fixture_text(
            "kubernetes/device_checkpoint_a5-volcano-softshare.json"
        ),
        "/var/lib/kubelet/dra_manager_state": fixture_text("kubernetes/dra_manager_state_npu.json"),
    }
    for path, text in files.items():
        disk = snapshot.disk_path(snap, path)
        os.makedirs(os.path.dirname(disk), exist_ok=True)
        with open(disk, "w") as handle:
            handle.write(text)
    return snap, plan, profile


def test_a5_node_every_device_audited(tmp_path):
    snap, plan, profile = a5_node(tmp_path)
    facts = topology.gather(hostio.SnapshotHostIO(snap))
    report = kubernetes_audit(facts, plan, profile)
    rows = dict((row["pod"], row) for row in report["pods"])
    assert sorted(rows) == sorted([P950, PVOL, PSOFT, PDRA])
    # the 950 pod (huawei.com/npu): its ids are its chips, CPUs on their node
    row = rows[P950]
    assert row["resources"] == ["huawei.com/npu"] and row["chips"] == [0, 1]
    assert row["chips_from"] == "allocate_response" and row["remapped"] is False
    assert row["device_nodes"] == [0] and row["cpu_nodes"] == [0] and row["aligned"] is True
    # Volcano mode: the kubelet chose npu-2,3 (node 1) and aligned the CPUs there; chips 6,7 on node 3
    row = rows[PVOL]
    assert row["devices"] == ["npu-2", "npu-3"] and row["chips"] == [6, 7] and row["remapped"] is True
    assert row["hint_nodes"] == [1] and row["device_nodes"] == [3]
    assert row["cpu_nodes"] == [1] and row["aligned"] is False
    # soft share: 4 of chip 4's share ids, chip 5 handed out (/dev/davinci5), CPUs on its node
    row = rows[PSOFT]
    assert row["soft_share"] is True and row["chips"] == [5] and row["remapped"] is True
    assert row["device_nodes"] == [2] and row["aligned"] is True
    # DRA: no kubelet ids, a claim's device on node 2, CPUs on node 1
    row = rows[PDRA]
    assert row["devices"] == [] and row["resources"] == ["npu.huawei.com (DRA)"]
    assert row["dra"] == [
        {
            "driver": "npu.huawei.com",
            "pool": "a5-950",
            "device": "npu-4",
            "cdi": [],
            "claim": "default/npu-claim",
            "numa_node": 2,
        }
    ]
    assert row["device_nodes"] == [2] and row["cpu_nodes"] == [1] and row["aligned"] is False
    assert row["numa_hints"] is None and "hinted" not in row
    by_pod = {}
    for finding in report["findings"]:
        by_pod.setdefault(finding["pod"], []).append(finding["kind"])
    assert P950 not in by_pod
    assert sorted(by_pod[PVOL]) == ["device_ids_not_chips", "pod_cpus_off_devices_node"]
    assert by_pod[PSOFT] == ["device_ids_not_chips"]
    assert sorted(by_pod[PDRA]) == ["dra_devices_not_aligned", "pod_cpus_off_devices_node"]
    assert "device_plugin_no_numa" not in by_pod.get(None, [])
    msgs = dict(((f["pod"], f["kind"]), f["msg"]) for f in report["findings"])
    vol = msgs[(PVOL, "device_ids_not_chips")]
    assert "chip(s) 6,7" in vol and "node(s) 3" in vol and "aligned the pod to node(s) 1" in vol
    assert "aligned the pod" not in msgs[(PSOFT, "device_ids_not_chips")]
    dra = msgs[(PDRA, "dra_devices_not_aligned")]
    assert "npu.huawei.com/npu-4" in dra and "default/npu-claim" in dra and "node(s) 2" in dra
    assert report["node"]["dra_pods"] == 1 and report["node"]["remapped_pods"] == 2
    assert report["node"]["device_pods"] == 4 and report["node"]["misaligned_pods"] == 2


def test_a5_node_recorded_and_replayed(tmp_path):
    """The device records travel in snapshots (paths under fs/) like the rest of the facts."""
    snap, dummy, dummy = a5_node(tmp_path)
    root = tmp_path / "root"
    snapshot.copy_host_tree(snap, str(root))
    recorder = hostio.RecordingHostIO(hostio.LiveHostIO(str(root)))
    live = kubelet.gather(recorder, version=False)
    recorder.save(str(tmp_path / "recorded"))
    assert os.path.isfile(str(tmp_path / "recorded" / "fs" / "var" / "lib" / "kubelet" / "dra_manager_state"))
    replayed = kubelet.gather(hostio.SnapshotHostIO(str(tmp_path / "recorded")), version=False)
    assert replayed == live and replayed["errors"] == []
    assert replayed["dra_state"]["claims"][0]["devices"][0]["device"] == "npu-4"
    assert replayed["device_checkpoint"]["entries"][1]["alloc"]["envs"]["ASCEND_VISIBLE_DEVICES"] == "6,7"


def test_fleet_report_rows_for_the_device_findings(tmp_path):
    from ansible_collections.npuops.fleet.plugins.plugin_utils.report.analysis import build_report

    snap, plan, dummy = a5_node(tmp_path)
    facts = topology.gather(hostio.SnapshotHostIO(snap))
    report = build_report({"k8s-a5": {"facts": facts, "plan_strict": plan}})
    kinds = dict((p["kind"], p) for p in report["problems"])
    assert kinds["dra_devices_not_aligned"]["severity"] == "warning"
    assert PDRA in kinds["dra_devices_not_aligned"]["evidence"]
    assert kinds["device_ids_not_chips"]["severity"] == "warning"


# --- the rules on facts dicts -------------------------------------------------------------------

A5_FACTS = {
    "cpu": {"numa_nodes": {"0": "0-95", "1": "96-191", "2": "192-287", "3": "288-383"}},
    "npus": [{"phy_id": i, "logic_id": i, "numa_node": i // 2} for i in range(8)],
}


def _kube(entries, dra=None, errors=None):
    return {
        "kubelet": {"effective": {"cpuManagerPolicy": "static"}},
        "cpu_manager_state": {"policy": "static", "entries": {"p": {"c": "0-3"}}},
        "device_checkpoint": {"entries": entries},
        "dra_state": dra,
        "errors": errors or [],
    }


def _entry(resource, node, ids, alloc=None, error=None):
    return {
        "pod": "p",
        "container": "c",
        "resource": resource,
        "devices": [{"numa_node": node, "ids": ids}],
        "alloc": alloc,
        "alloc_error": error,
    }


def _audit(kube, facts=None):
    facts = dict(A5_FACTS if facts is None else facts, kubernetes=kube)
    return kubernetes_audit(facts)


def test_no_allocate_answer_says_the_chips_are_unverified():
    report = _audit(_kube([_entry("huawei.com/npu", 0, ["npu-0"])]))
    row = report["pods"][0]
    assert row["chips_from"] == "kubelet_ids" and row["chips"] == [0] and row["device_nodes"] == [0]
    found = [f for f in report["findings"] if f["kind"] == "device_chips_unverified"]
    assert len(found) == 1 and "huawei.com/AscendReal" in found[0]["msg"] and "API" in found[0]["msg"]


def test_unreadable_allocate_answer_is_said():
    report = _audit(_kube([_entry("huawei.com/npu", 0, ["npu-0"], error="AllocResp: truncated")]))
    found = [f for f in report["findings"] if f["kind"] == "device_chips_unverified"]
    assert "could not be read (AllocResp: truncated)" in found[0]["msg"]


def test_soft_share_ids_without_a_record_name_their_chip_but_warn():
    report = _audit(_kube([_entry("huawei.com/Ascend910", 1, ["Ascend910-3-57", "Ascend910-3-58"])]))
    row = report["pods"][0]
    assert row["soft_share"] is True and row["chips"] == [3] and row["device_nodes"] == [1]
    found = [f for f in report["findings"] if f["kind"] == "device_chips_unverified"]
    assert "soft-share ids" in found[0]["msg"]


def test_950_resource_is_audited_and_the_old_pattern_missed_it():
    assert kd.is_device_resource("huawei.com/npu")
    report = _audit(_kube([_entry("huawei.com/npu", 3, ["npu-6"], alloc={"envs": {"ASCEND_VISIBLE_DEVICES": "6"}})]))
    row = report["pods"][0]
    assert row["device_nodes"] == [3] and row["cpu_nodes"] == [0]
    assert [f["kind"] for f in report["findings"] if f["pod"] == "p"] == ["pod_cpus_off_devices_node"]


@pytest.mark.parametrize(
    "resource, audited",
    [
        ("huawei.com/Ascend910", True),
        ("huawei.com/Ascend310P", True),
        ("huawei.com/npu", True),
        ("huawei.com/Ascend910-2c", True),
        ("nvidia.com/gpu", True),
        ("amd.com/gpu", True),
        ("huawei.com/Ascend910B3-memory", False),
        ("huawei.com/Ascend910B3-core", False),
        ("huawei.com/npu-extra", False),
        ("example.com/fpga", False),
    ],
)
def test_device_resources(resource, audited):
    assert kd.is_device_resource(resource) is audited


def test_vnpu_answer_names_virtual_devices_not_chips():
    alloc = {"envs": {"ASCEND_VISIBLE_DEVICES": "100", "ASCEND_RUNTIME_OPTIONS": "VIRTUAL"}}
    assert kd.answered_chips(alloc) is None
    report = _audit(_kube([_entry("huawei.com/Ascend910-2c", 2, ["Ascend910-2c-100-5"], alloc)]))
    assert report["pods"][0]["chips"] == [5] and report["pods"][0]["device_nodes"] == [2]
    assert report["pods"][0]["chips_from"] == "vnpu_ids"
    assert not [f for f in report["findings"] if f["kind"] == "device_chips_unverified"]


def test_answer_by_davinci_device_specs():
    alloc = {
        "envs": {},
        "devices": [
            {"host_path": "/dev/davinci_manager"},
            {"host_path": "/dev/davinci3"},
            {"host_path": "/dev/davinci2"},
        ],
    }
    assert kd.answered_chips(alloc) == [2, 3]
    assert kd.answered_chips({"envs": {"ASCEND_VISIBLE_DEVICES": "0,x"}, "devices": []}) is None


def test_950_answer_carries_logic_ids():
    facts = dict(A5_FACTS, npus=[{"phy_id": 7 - i, "logic_id": i, "numa_node": i // 2} for i in range(8)])
    report = _audit(
        _kube([_entry("huawei.com/npu", 0, ["npu-7"], alloc={"envs": {"ASCEND_VISIBLE_DEVICES": "0"}})]), facts
    )
    row = report["pods"][0]
    # npu-7 names physical chip 7 = logic 0: the answer's logic id 0 is the same chip, not a remap
    assert row["chips"] == [7] and row["remapped"] is False and row["device_nodes"] == [0]
    assert not [f for f in report["findings"] if f["kind"] == "device_ids_not_chips"]


def test_dra_nvidia_gpu_by_minor_and_unknown_without_it():
    dra = {
        "claims": [
            {
                "uid": "c",
                "name": "gpu",
                "namespace": "ml",
                "pods": ["p"],
                "devices": [{"driver": "gpu.nvidia.com", "pool": "n", "device": "gpu-1", "requests": [], "cdi": []}],
            }
        ]
    }
    facts = {
        "cpu": {"numa_nodes": {"0": "0-3", "1": "4-7"}},
        "gpus": [{"index": 0, "minor": 0, "numa_node": 0}, {"index": 1, "minor": 1, "numa_node": 1}],
    }
    report = _audit(_kube([], dra), facts)
    assert report["pods"][0]["device_nodes"] == [1] and report["pods"][0]["aligned"] is False
    for gpu in facts["gpus"]:
        del gpu["minor"]
    report = _audit(_kube([], dra), facts)
    assert report["pods"][0]["device_nodes"] == []
    found = [f for f in report["findings"] if f["kind"] == "dra_devices_not_aligned"]
    assert "node(s) unknown" in found[0]["msg"]


def test_unreadable_dra_state_is_a_finding_not_an_empty_record():
    kube = _kube([], errors=[{"source": kubelet.DRA_STATE, "msg": "checksum 1 is not the CRC-32"}])
    report = _audit(kube)
    found = [f for f in report["findings"] if f["kind"] == "device_record_unreadable"]
    assert len(found) == 1 and "dra_manager_state" in found[0]["msg"]


def test_old_fixtures_keep_their_rows():
    """The A2 fixture pod's answer (ASCEND_VISIBLE_DEVICES 0,1) is read, not only its ids."""
    data = parse.parse_device_checkpoint(fixture_text("kubernetes/device_checkpoint_ascend-numa.json"))
    assert [e["alloc"]["envs"] for e in data["entries"]] == [
        {"ASCEND_VISIBLE_DEVICES": "0,1"},
        {"ASCEND_VISIBLE_DEVICES": "4"},
    ]


def test_renamed_ids_and_a_pod_half_recorded_are_unverified():
    report = _audit(_kube([_entry("huawei.com/Ascend910", 0, ["my-chip-a"])]))
    found = [f["msg"] for f in report["findings"] if f["kind"] == "device_chips_unverified"]
    assert len(found) == 1 and "my-chip-a name no chip" in found[0]
    assert report["pods"][0]["chips"] == [] and report["pods"][0]["device_nodes"] == [0]
    both = [
        _entry("huawei.com/npu", 0, ["npu-0"], alloc={"envs": {"ASCEND_VISIBLE_DEVICES": "0"}}),
        _entry("huawei.com/Ascend910", 1, ["Ascend910-2"]),
    ]
    report = _audit(_kube(both))
    assert report["pods"][0]["chips_from"] == "mixed"
    assert [f["kind"] for f in report["findings"]].count("device_chips_unverified") == 1
