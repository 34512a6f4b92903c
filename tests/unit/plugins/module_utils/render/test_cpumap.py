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
    assert rows(text, "node 0 ")[0].endswith("." * 88 + "U" * 8)
    assert rows(text, "NPU2 ")[0].endswith(" " + "W" * 24)
    assert rows(text, "UVB")[0].split() == ["UVB", "88-95"]


def test_skipped_plan():
    plan = plan_mod.make_plan(cpu_hosts.a2(arch="x86_64"), "vllm_ascend")
    assert cpumap.render_text(plan).endswith("skipped: CPU binding skipped: non-ARM CPU detected.")


def test_without_topology_or_numa():
    plan = {"policy": "strict", "mode": "global_slice", "numa_nodes": {},
            "npus": {"0": {"pool": "0-4", "pool_order": "0-4", "irq": "0-1", "main": "2",
                           "acl": "3", "release": "4", "numa_nodes": []}}}
    text = cpumap.render_text(plan)
    assert rows(text, "node -")[0].endswith(" IIMAR")
    assert rows(text, "NPU0")[0].split()[-2:] == ["-", "IIMAR"]
