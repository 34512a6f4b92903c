# -*- coding: utf-8 -*-
"""ASCII CPU map: node rows, NPU rows with roles in positional order, overlaps flagged."""

from ansible_collections.npuops.fleet.plugins.module_utils.render import cpumap
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from npuops_testing import cpu_hosts


def rows(text, prefix):
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_strict_hidden_npu_map():
    topo = cpu_hosts.a2("144-191")
    text = cpumap.render_text(plan_mod.make_plan(topo, "strict", npus=[0, 2]), topo)
    node = rows(text, "node ")
    assert node[0].endswith(" " + "x" * 48)
    assert node[3].endswith(" " + ("II" + "M" * 20 + "AR") * 2)
    assert rows(text, "NPU0 ")[0].split() == ["NPU0", "144-167", "node", "3", "II" + "M" * 20 + "AR"]


def test_vllm_ascend_overlap_flagged():
    topo = cpu_hosts.a2()
    text = cpumap.render_text(plan_mod.make_plan(topo, "vllm_ascend"), topo)
    assert rows(text, "node 0 ")[0].split()[-1].startswith("!" * 24 + "M")
    # NPU1's unsorted pool: IRQ on 0-1 then main, ACL 58, release 59
    assert rows(text, "NPU1 ")[0].split()[1] == "0-23,48-59"


def test_950_and_uvb():
    topo = cpu_hosts.a5(tpc=1)
    text = cpumap.render_text(plan_mod.make_plan(topo, "strict"), topo)
    # node 0 is no NPU's home: its CPUs are the frontend share of the NPUs nearest to it
    assert rows(text, "node 0 ")[0].endswith("F" * 88 + "U" * 8)
    assert rows(text, "NPU2 ")[0].endswith(" " + "W" * 24)
    assert rows(text, "UVB")[0].split() == ["UVB", "88-95"]


def test_skipped_plan():
    plan = plan_mod.make_plan(cpu_hosts.a2(arch="x86_64"), "vllm_ascend")
    assert cpumap.render_text(plan).endswith("skipped: CPU binding skipped: non-ARM CPU detected.")


def test_without_topology_or_numa():
    plan = {
        "policy": "strict",
        "mode": "global_slice",
        "numa_nodes": {},
        "npus": {
            "0": {
                "pool": "0-4",
                "pool_order": "0-4",
                "irq": "0-1",
                "main": "2",
                "acl": "3",
                "release": "4",
                "numa_nodes": [],
            }
        },
    }
    text = cpumap.render_text(plan)
    assert rows(text, "node -")[0].endswith(" IIMAR")
    assert rows(text, "NPU0")[0].split()[-2:] == ["-", "IIMAR"]


def test_frontend_spare_and_reserved():
    """Strict plans carry a cpu_budget: F frontend, r reserved, '.' spare, a row per instance."""
    topo = cpu_hosts.host(
        [{"logic_id": 0, "affinity": "0-7"}, {"logic_id": 1, "affinity": "0-7"}],
        {0: "0-7", 1: "8-15", 2: "16-23"},
        "0-23",
    )
    topo["cpu"]["isolated"] = "22-23"
    plan = plan_mod.make_plan(
        topo, "strict", instances=[{"name": "svc", "npus": [0, 1]}], frontend_cpus=4, reserved_cpus="20-21"
    )
    text = cpumap.render_text(plan, topo)
    assert cpumap.LEGEND_BUDGET in text
    # node 0 lends NPU1 two CPUs of node 1 (nearest by id); the rest of node 1 is the
    # frontend, cut to 4 CPUs; node 2 is nobody's nearest: spare, reserved and isolated CPUs
    assert rows(text, "node 1 ")[0].endswith(" AR" + "F" * 4 + "..")
    assert rows(text, "node 2 ")[0].endswith(" " + "." * 4 + "rrrr")
    assert rows(text, "NPU1 ")[0].split()[1:4] == ["5-9", "node", "0,1"]
    assert rows(text, "svc ")[0].split() == ["svc", "10-13", "node", "1", "frontend", "(free)"]
