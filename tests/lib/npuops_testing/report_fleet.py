# -*- coding: utf-8 -*-
"""Fleets for the fleet report tests (analysis, renderers, filters, the Chromium page).

- ``sample_fleet()``: hand-built hosts, every problem kind once; its builders ``a2_facts``,
  ``a2_strict``, ``a2_vllm`` (the research note's overlap defect), ``npu_entry``, ``gpu_facts``,
  ``gpu_plan``, ``x86_none_facts``
- ``real_fleet()``: {host: {facts, plan_strict, plan_vllm_ascend, plan_errors}} from every
  snapshot in tests/snapshots/ (skips when there is none)
"""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis as fr

from npuops_testing import SNAPSHOTS

NODES4 = {"0": "0-47", "1": "48-95", "2": "96-143", "3": "144-191"}


# ----------------------------------------------------------------------------------------------
# hand-built fleet
# ----------------------------------------------------------------------------------------------


def a2_facts(hostname="a2-node-01", irq_active=False, migratepages=True, health=None):
    npus = []
    for logic in range(8):
        node = logic // 2
        npus.append(
            {
                "npu_id": logic,
                "chip_id": 0,
                "logic_id": logic,
                "phy_id": logic,
                "name": "910B3",
                "bus_id": "0000:%02x:00.0" % (0xC1 + logic),
                "numa_node": node,
                "affinity": NODES4[str(node)],
                "health": (health or {}).get(logic, "OK"),
                "hbm_total_mb": 65536,
            }
        )
    healthy = sum(1 for n in npus if n["health"] == "OK")
    return {
        "schema_version": 1,
        "hostname": hostname,
        "arch": "aarch64",
        "vendor": "ascend",
        "device_type": "A2",
        "cpu": {
            "allowed": "0-191",
            "online": "0-191",
            "threads_per_core": 1,
            "numa_nodes": dict(NODES4),
            "numa_source": "sysfs",
        },
        "npus": npus,
        "gpus": [],
        "nics": [],
        "tools": {"npu-smi": True, "migratepages": migratepages, "taskset": True},
        "irqbalance": {"installed": True, "active": irq_active},
        "softshare": {"chips_total": 8, "chips_healthy": healthy, "capacity": 100 * healthy},
        "errors": [],
    }


def npu_entry(pool, node):
    cpus = fr.cpu_ids(pool)
    return {
        "pool": pool,
        "numa_nodes": [node],
        "irq": fr.fmt(cpus[:2]),
        "main": fr.fmt(cpus[2:-2]),
        "acl": str(cpus[-2]),
        "release": str(cpus[-1]),
    }


def a2_strict():
    npus = {}
    for logic in range(8):
        base = 48 * (logic // 2) + 24 * (logic % 2)
        npus[str(logic)] = npu_entry("%d-%d" % (base, base + 23), logic // 2)
    return {
        "policy": "strict",
        "mode": "topo_affinity",
        "device_type": "A2",
        "skipped": False,
        "reason": None,
        "numa_nodes": dict(NODES4),
        "npus": npus,
        "gpus": {},
        "log": [],
        "warnings": [],
    }


def a2_vllm():
    """The research note's defect: next-NUMA extension, NPU0 and NPU1 share 0-23, NPU2 off node."""
    plan = a2_strict()
    plan["policy"] = "vllm_ascend"
    plan["npus"]["1"] = npu_entry("0-23,48-59", 0)
    plan["npus"]["2"] = npu_entry("144-155", 3)
    return plan


def gpu_facts(hostname, nics=("mlx5_0", "mlx5_1"), numa=True, irq_active=False):
    gpus = []
    for idx in range(4):
        node = idx // 2 if numa else None
        gpus.append(
            {
                "index": idx,
                "name": "GPU%d" % idx,
                "bus_id": "0000:%02x:00.0" % (0x18 + idx),
                "numa_node": node,
                "affinity": "0-47" if node == 0 else "48-95",
                "links": {},
            }
        )
    return {
        "schema_version": 1,
        "hostname": hostname,
        "arch": "x86_64",
        "vendor": "nvidia",
        "device_type": None,
        "cpu": {
            "allowed": "0-95",
            "online": "0-95",
            "threads_per_core": 1,
            "numa_nodes": {"0": "0-47", "1": "48-95"} if numa else {"0": "0-95"},
        },
        "npus": [],
        "gpus": gpus,
        "nics": [{"name": n, "numa_node": 0} for n in nics],
        "tools": {"nvidia-smi": True, "migratepages": True},
        "irqbalance": {"installed": True, "active": irq_active},
        "softshare": {"chips_total": 0, "chips_healthy": 0, "capacity": 0},
        "errors": [],
    }


def gpu_plan(nic_of=("mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"), numa=True):
    gpus = {}
    for idx in range(4):
        node = idx // 2
        if numa:
            pool = "%d-%d" % (48 * node + 24 * (idx % 2), 48 * node + 24 * (idx % 2) + 23)
        else:
            pool = "%d-%d" % (24 * idx, 24 * idx + 23)
        gpus[str(idx)] = {"pool": pool, "numa_node": node if numa else None, "nic": nic_of[idx], "link": "PIX"}
    return {
        "policy": "strict",
        "mode": "gpu_numa",
        "skipped": False,
        "npus": {},
        "gpus": gpus,
        "log": [],
        "warnings": [],
    }


def x86_none_facts():
    return {
        "schema_version": 1,
        "hostname": "x86-none",
        "arch": "x86_64",
        "vendor": "none",
        "device_type": None,
        "cpu": {"allowed": "0-15", "online": "0-15", "numa_nodes": {"0": "0-15"}},
        "npus": [],
        "gpus": [],
        "nics": [],
        "tools": {"migratepages": False},
        "irqbalance": {"installed": True, "active": True},
        "softshare": {"chips_total": 0, "chips_healthy": 0, "capacity": 0},
        "errors": [],
    }


def sample_fleet():
    """Every problem kind once; used by the renderer and Chromium tests too."""
    return {
        "a2-clean": {
            "facts": a2_facts("a2-clean"),
            "plan_strict": a2_strict(),
            "plan_vllm_ascend": dict(a2_strict(), policy="vllm_ascend"),
        },
        "a2-bad": {
            "facts": a2_facts("a2-bad", irq_active=True, migratepages=False, health={5: "Alarm"}),
            "plan_strict": a2_strict(),
            "plan_vllm_ascend": a2_vllm(),
        },
        "gpu-a": {"facts": gpu_facts("gpu-a"), "plan_strict": gpu_plan(), "plan_vllm_ascend": None},
        "gpu-b": {"facts": gpu_facts("gpu-b"), "plan_strict": gpu_plan()},
        "gpu-c": {"facts": gpu_facts("gpu-c"), "plan_strict": gpu_plan(("mlx5_1", "mlx5_0", "mlx5_1", "mlx5_1"))},
        "x86-none": {
            "facts": x86_none_facts(),
            "plan_strict": {
                "policy": "strict",
                "mode": None,
                "skipped": True,
                "reason": "no NPU or GPU on this host",
                "npus": {},
            },
            "plan_vllm_ascend": None,
        },
    }


def real_fleet():
    """{host: {facts, plan_strict, plan_vllm_ascend, plan_errors}} from tests/snapshots/."""
    from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
    from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan

    names = (
        sorted(n for n in os.listdir(SNAPSHOTS) if os.path.isfile(os.path.join(SNAPSHOTS, n, "snapshot.yml")))
        if os.path.isdir(SNAPSHOTS)
        else []
    )
    if not names:
        pytest.fail("no recorded host in tests/snapshots")
    fleet = {}
    for name in names:
        facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, name)))
        entry = {"facts": facts, "plan_errors": {}}
        for policy in fr.POLICIES:
            try:
                entry["plan_" + policy] = plan.make_plan(facts, policy=policy)
            except NpuopsError as err:
                entry["plan_errors"][policy] = str(err)
        fleet[name] = entry
    return fleet
