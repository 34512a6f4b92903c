# -*- coding: utf-8 -*-
"""Grace-Blackwell: NUMA Affinity printed as a node list (the CPU node, then the GPU's
memory-only nodes) gives each GPU its CPU node, records the memory nodes, and sysfs is the
truth where it disagrees; the plan of the recorded 4-GPU GB200 host puts each GPU's pool on
its own Grace socket."""

import os
import shutil

from npuops_testing import SNAPSHOTS
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch

HOST = os.path.join(SNAPSHOTS, "gb200-4gpu")
SOCKETS = {0: set(range(0, 72)), 1: set(range(72, 144))}
MEMORY = {
    0: [3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17],
    1: [19, 20, 21, 22, 23, 24, 25, 27, 28, 29, 30, 31, 32, 33],
}


def _facts(path=HOST):
    return topology.gather(hostio.SnapshotHostIO(path))


def test_gb200_gpus_get_their_cpu_node_and_memory_nodes():
    facts = _facts()
    assert facts["numa_off"] is False
    assert [g["numa_node"] for g in facts["gpus"]] == [0, 0, 1, 1]
    assert [g["memory_nodes"] for g in facts["gpus"]] == [MEMORY[0], MEMORY[0], MEMORY[1], MEMORY[1]]
    assert not [w for w in facts["warnings"] if "NUMA" in w]


def test_gb200_plan_puts_each_gpu_pool_on_its_socket():
    plan = dispatch.make_plan(_facts(), policy="strict")
    assert plan["mode"] == "gpu_numa"
    pools = {}
    for index, gpu in sorted(plan["gpus"].items()):
        cpus = set(cpulist.parse(gpu["pool"]))
        assert cpus and cpus <= SOCKETS[gpu["numa_node"]], (index, gpu)
        pools[index] = (gpu["numa_node"], len(cpus))
    assert pools == {"0": (0, 36), "1": (0, 36), "2": (1, 36), "3": (1, 36)}
    assert not [w for w in plan.get("warnings", []) if "numa=off" in w or "even" in w]


def test_sysfs_numa_node_wins_where_it_disagrees(tmp_path):
    copy = str(tmp_path / "host")
    shutil.copytree(HOST, copy)
    node_file = os.path.join(copy, "fs", "sys", "bus", "pci", "devices", "0009%3A01%3A00.0", "numa_node")
    with open(node_file, "w") as handle:
        handle.write("1\n")
    facts = _facts(copy)
    gpu1 = facts["gpus"][1]
    assert gpu1["numa_node"] == 1
    assert gpu1["memory_nodes"] == MEMORY[0]  # node 0 has CPUs: never a memory node
    assert any("GPU1" in w and "numa_node is 1" in w for w in facts["warnings"])


def test_a_list_of_two_cpu_nodes_is_not_read_as_memory_nodes():
    from ansible_collections.npuops.fleet.plugins.module_utils.model import device_nodes

    class NoSysfs(object):
        def read_text(self, path):
            return None

    warnings = []
    gpu = {"name": "GPU0", "numa_node": 0, "numa_nodes": [0, 1, 5]}
    node, memory = device_nodes.gpu_node(NoSysfs(), gpu, None, {"0": "0-3", "1": "4-7", "5": ""}, False, warnings)
    assert (node, memory) == (0, [5])
    assert warnings == ["GPU0: NUMA Affinity 0,1,5 lists 2 nodes with CPUs: node 0 taken"]
    # no CPU map known: the first listed node, the rest its memory nodes
    assert device_nodes.gpu_node(NoSysfs(), gpu, None, {}, False, []) == (0, [1, 5])
