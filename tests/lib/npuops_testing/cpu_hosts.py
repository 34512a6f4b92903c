# -*- coding: utf-8 -*-
"""Topology facts dicts for the CPU planner tests, built from the research note's hosts.

- A2: Kunpeng 920, 4 NUMA nodes x 48 CPUs, 8 x 910B; NPU0/2 -> 144-167, NPU1/3 -> 0-23,
  NPU4/6 -> 96-119, NPU5/7 -> 48-71 (the vllm-ascend design document's table).
- A3: Kunpeng 920 7285Z, 640 CPUs in 8 NUMA nodes x 80, 16 dies (logic 0-15), no topo affinity.
- A5: Ascend 950, 384 CPUs in 4 x 96, threads per core 2, NPUs 0,1,6,7 on node 3, 2-5 on node 1.
"""

A2_AFFINITY = {0: "144-167", 1: "0-23", 2: "144-167", 3: "0-23", 4: "96-119", 5: "48-71", 6: "96-119", 7: "48-71"}


def host(
    npus, numa_nodes, allowed, device_type="A2", arch="aarch64", tpc=1, vendor="ascend", npu_map=None, visible=None
):
    """A facts dict. ``npus``: list of dicts with at least logic_id (affinity, numa_node, busy)."""
    entries = []
    for npu in npus:
        logic = npu["logic_id"]
        entries.append(
            {
                "npu_id": npu.get("npu_id", logic),
                "chip_id": npu.get("chip_id", 0),
                "logic_id": logic,
                "phy_id": logic,
                "name": "910B3",
                "bus_id": None,
                "numa_node": npu.get("numa_node"),
                "affinity": npu.get("affinity"),
                "health": "OK",
                "processes": [{"pid": 1000 + logic, "name": "python3", "memory_mb": 1}] if npu.get("busy") else [],
            }
        )
    if npu_map is None:
        npu_map = {}
        for e in entries:
            npu_map.setdefault(str(e["npu_id"]), {})[str(e["chip_id"])] = str(e["logic_id"])
    return {
        "schema_version": 1,
        "hostname": "test",
        "arch": arch,
        "vendor": vendor,
        "device_type": device_type,
        "cpu": {
            "allowed": allowed,
            "online": allowed,
            "threads_per_core": tpc,
            "numa_nodes": dict((str(k), v) for k, v in numa_nodes.items()),
        },
        "npus": entries,
        "npu_map": npu_map,
        "gpus": [],
        "nics": [],
        "visible_devices": {"ASCEND_RT_VISIBLE_DEVICES": visible, "CUDA_VISIBLE_DEVICES": None},
    }


def a2(allowed="0-191", busy=(), visible=None, arch="aarch64", numa_node=False):
    nodes = {0: "0-47", 1: "48-95", 2: "96-143", 3: "144-191"}
    node_of = {0: 3, 1: 0, 2: 3, 3: 0, 4: 2, 5: 1, 6: 2, 7: 1}
    return host(
        [
            {
                "logic_id": i,
                "affinity": A2_AFFINITY[i],
                "busy": i in busy,
                "numa_node": node_of[i] if numa_node else None,
            }
            for i in range(8)
        ],
        nodes,
        allowed,
        visible=visible,
        arch=arch,
    )


def a3(allowed="0-639", arch="aarch64", affinity=None):
    nodes = dict((n, "%d-%d" % (80 * n, 80 * n + 79)) for n in range(8))
    npus = [{"logic_id": i, "npu_id": i // 2, "chip_id": i % 2, "affinity": affinity} for i in range(16)]
    return host(npus, nodes, allowed, device_type="A3", arch=arch)


def a5(allowed="0-383", tpc=2, node_of=None):
    nodes = dict((n, "%d-%d" % (96 * n, 96 * n + 95)) for n in range(4))
    node_of = node_of or {0: 3, 1: 3, 2: 1, 3: 1, 4: 1, 5: 1, 6: 3, 7: 3}
    npus = [{"logic_id": i, "affinity": "%d-%d" % (96 * node_of[i], 96 * node_of[i] + 95)} for i in range(8)]
    return host(npus, nodes, allowed, device_type="A5", tpc=tpc)


# The 4-socket Kunpeng node-distance table (tests/fixtures/real/cpu/kunpeng-4p-8numa_node-
# distances_opengauss-tpcc-case.txt): dies of a socket 11 apart, other sockets 24-32.
KUNPENG_4P_DISTANCE = [
    [10, 11, 24, 25, 24, 25, 24, 25],
    [11, 10, 25, 32, 25, 32, 25, 32],
    [24, 25, 10, 11, 24, 25, 24, 25],
    [25, 32, 11, 10, 25, 32, 25, 32],
    [24, 25, 24, 25, 10, 11, 24, 25],
    [25, 32, 25, 32, 11, 10, 25, 32],
    [24, 25, 24, 25, 24, 25, 10, 11],
    [25, 32, 25, 32, 25, 32, 11, 10],
]


def a2_real(allowed="0-191"):
    """The real A2 capture's layout (tests/snapshots/a2-910b3x8): 8 NUMA nodes x 24 CPUs, NPU
    pairs on nodes 6, 4, 0, 2, with the 4-socket Kunpeng distance table paired (no public A2
    capture of its own table exists) and no package ids (its firmware names none)."""
    nodes = dict((n, "%d-%d" % (24 * n, 24 * n + 23)) for n in range(8))
    home = [6, 6, 4, 4, 0, 0, 2, 2]
    topo = host([{"logic_id": i, "affinity": nodes[home[i]], "numa_node": home[i]} for i in range(8)], nodes, allowed)
    topo["cpu"]["numa_distance"] = dict(
        (str(a), dict((str(b), KUNPENG_4P_DISTANCE[a][b]) for b in range(8))) for a in range(8)
    )
    topo["cpu"].update({"packages": None, "smt_siblings": [], "isolated": "", "nohz_full": ""})
    return topo
