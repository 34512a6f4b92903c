# -*- coding: utf-8 -*-
"""An AMD Instinct host end to end on its real rocm-smi --showtopo text (tests/snapshots/
mi300x-8gpu): facts -> plan -> launch wrapper -> IRQ affinity -> fleet audit, each module run
in-process in a sandbox host root built from the snapshot."""

import json
import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis, markdown
from npuops_testing import SNAPSHOTS
from npuops_testing.module_harness import call_module

SNAP = os.path.join(SNAPSHOTS, "mi300x-8gpu")
INSTANCES = [{"name": "left", "npus": [0, 1, 2, 3]}, {"name": "right", "npus": [4, 5, 6, 7]}]


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    root = tmp_path_factory.mktemp("mi300x") / "root"
    snapshot.copy_host_tree(SNAP, str(root))
    facts = call_module("npu_topology_facts", {"snapshot": SNAP})["ansible_facts"]["npu_topology"]
    plan = call_module("npu_cpu_plan", {"topology": facts, "instances": INSTANCES})
    assert not plan.get("failed"), plan.get("msg")
    return {"root": root, "facts": facts, "plan": plan["plan"]}


def test_facts_from_rocm_smi(host):
    facts = host["facts"]
    assert facts["vendor"] == "amd" and facts["device_type"] is None
    assert [g["numa_node"] for g in facts["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert facts["gpus"][0]["links"]["GPU7"] == "XGMI"
    assert facts["gpus"][0]["bus_id"] == "0000:05:00.0"
    # no NIC in rocm-smi: the NIC cells come from the sysfs NUMA nodes
    assert facts["gpus"][0]["links"]["mlx5_0"] == "NODE" and facts["gpus"][0]["links"]["mlx5_7"] == "SYS"
    assert [n["numa_node"] for n in facts["nics"]] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_plan_is_numa_local_and_pairs_local_nics(host):
    plan, facts = host["plan"], host["facts"]
    assert plan["vendor"] == "amd" and plan["mode"] == "gpu_numa"
    node_cpus = dict((n, set(int(c) for c in range(int(n), 128, 2))) for n in ("0", "1"))
    pools = []
    for index, gpu in sorted(plan["gpus"].items(), key=lambda kv: int(kv[0])):
        node = facts["gpus"][int(index)]["numa_node"]
        pool = set(int(c) for c in _cpus(gpu["pool"]))
        assert gpu["numa_node"] == node and pool <= node_cpus[str(node)]
        assert gpu["nic"] == "mlx5_%s" % index and gpu["link"] == "NODE"
        pools.append(pool)
    assert sum(len(p) for p in pools) == len(set().union(*pools))  # disjoint
    assert plan["env"]["NCCL_IB_HCA"] == "=" + ",".join("mlx5_%d" % n for n in range(8))
    assert plan["instances"]["left"]["npus"] == [0, 1, 2, 3] and "env" not in plan["instances"]["left"]
    assert any("rocm-smi reports no GPU<->NIC PCIe path" in w for w in plan["warnings"])
    assert not any("GPUDirect RDMA on it" in w for w in plan["warnings"])


def _cpus(text):
    out = []
    for part in text.split(","):
        lo, _sep, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def test_wrapper_exports_the_rocm_visibility(host):
    result = call_module(
        "vllm_launch_wrapper",
        {
            "name": "left",
            "plan": host["plan"],
            "command": ["vllm", "serve", "/models/m"],
            "host_root": str(host["root"]),
            "allow_foreign_plan": True,
        },
    )
    assert not result.get("failed"), result.get("msg")
    text = (host["root"] / "usr/local/lib/npuops/left-launch").read_text()
    assert (
        "export HIP_VISIBLE_DEVICES=0,1,2,3\nexport CUDA_VISIBLE_DEVICES=0,1,2,3\nunset ROCR_VISIBLE_DEVICES\n" in text
    )
    assert "CUDA_DEVICE_ORDER" not in text and "UCX_NET_DEVICES='mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1'" in text
    doc = json.loads((host["root"] / "usr/local/lib/npuops/left.plan.json").read_text())
    assert doc["npuops_instance"]["vendor"] == "amd" and sorted(doc["gpus"]) == ["0", "1", "2", "3"]
    refused = call_module(
        "vllm_launch_wrapper",
        {
            "name": "left",
            "plan": host["plan"],
            "command": ["vllm"],
            "env": {"ROCR_VISIBLE_DEVICES": "0"},
            "host_root": str(host["root"]),
            "allow_foreign_plan": True,
        },
    )
    assert refused["failed"] and "ROCR_VISIBLE_DEVICES would renumber" in refused["msg"]


def test_irq_affinity_pins_the_paired_nics(host):
    result = call_module(
        "npu_irq_affinity",
        {
            "plan": host["plan"],
            "topology": host["facts"],
            "host_root": str(host["root"]),
            "irqbalance": "ignore",
            "allow_foreign_plan": True,
        },
    )
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is True
    nic0 = [n for n in host["facts"]["nics"] if n["name"] == "mlx5_0"][0]
    gpu0_pool = set(_cpus(host["plan"]["gpus"]["0"]["pool"]))
    spare_or_pool = gpu0_pool | set(_cpus(host["plan"]["cpu_budget"]["spare"] or "0"))
    for irq in nic0["irqs"]:
        pinned = (host["root"] / ("proc/irq/%d/smp_affinity_list" % irq)).read_text().strip()
        assert set(_cpus(pinned)) <= spare_or_pool
    again = call_module(
        "npu_irq_affinity",
        {
            "plan": host["plan"],
            "topology": host["facts"],
            "host_root": str(host["root"]),
            "irqbalance": "ignore",
            "allow_foreign_plan": True,
        },
    )
    assert again["changed"] is False


def test_the_audit_knows_the_vendor(host):
    vllm = call_module("npu_cpu_plan", {"topology": host["facts"], "policy": "vllm_ascend"})["plan"]
    report = analysis.build_report(
        {"mi300x-8gpu": {"facts": host["facts"], "plan_strict": host["plan"], "plan_vllm_ascend": vllm}}
    )
    (entry,) = report["hosts"]
    assert entry["vendor"] == "amd" and entry["gpus"] == 8
    devices = entry["plans"]["strict"]["devices"]
    assert [d["kind"] for d in devices] == ["gpu"] * 8 and devices[0]["nic"] == "mlx5_0"
    text = markdown.render_markdown(report)
    assert "| amd |" in text and "rocm-smi reports no GPU" in text
