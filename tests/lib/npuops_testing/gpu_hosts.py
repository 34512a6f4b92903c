# -*- coding: utf-8 -*-
"""The real ``nvidia-smi topo -m`` fixtures (tests/fixtures/real/nvidia/) and the host each was
captured on, for the nvidia_topo parser, GPU planner and rail tests.

- ``DELLA`` ... ``PCIE8``: fixture paths relative to tests/fixtures/real; ``ALL``: every one
- ``LAYOUT``: {fixture: (numa_nodes, allowed cpulist, threads_per_core)} of the capturing host
- ``topology_of(rel)``: the topology facts the GPU planner takes, from the parsed fixture and
  its host layout (no bus ids; numa_node None under numa=off as sysfs says -1)
- ``SHOWPIDGPUS``: ``rocm-smi --showpidgpus`` output (a %-template of pids w0, w1, both, idle)
"""

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.parse import nvidia_topo

from npuops_testing import fixture_text

NV = "nvidia/"
DELLA = NV + "della-a100-pcie_2gpu_old-format-mlx5-in-header_nvidia-smi-topo-m.txt"
DGXA100 = NV + "dgx-a100-class_8xA100-SXM_epyc7742-nps4_10nic_drv525_nvidia-smi-topo-m.txt"
B200 = NV + "dgx-b200-class_16nic_fused-cells_drv570_nccl-tests-333_nvidia-smi-topo-m.txt"
BREV = NV + "h100-4gpu-vm_brev_no-nic_partial-cpu-affinity_nvidia-smi-topo-m.txt"
DELL_MP = NV + "h100-8gpu-12nic-dell_topo-mp-pci-only_cgroup-affinity_deepep-397_nvidia-smi-topo-mp.txt"
TPG7 = NV + "h100-8gpu-12nic_numa-off_host-0007_nvidia-smi-topo-m.txt"
TPG8 = NV + "h100-8gpu-12nic_numa-off_host-0008_fused-cells_nvidia-smi-topo-m.txt"
PLI = NV + "h100-8gpu-6nic_princeton-pli_cgroup-limited-affinity_drv545_nvidia-smi-topo-m.txt"
ONENIC = NV + "h100-8gpu_1nic-sys-to-all_drv535_vllm-collect-env_nvidia-smi-topo-m.txt"
V17516 = NV + "h100-class_10nic_PARTIAL_fused-affinity-columns_vllm-17516_nvidia-smi-topo-m.txt"
H200 = NV + "h200-8gpu-9nic_bond_blog-reformatted_nvidia-smi-topo-m.txt"
SNC = NV + "hgx-h-class_9nic_snc4-4-numa-nodes_PARTIAL_sglang-13973_nvidia-smi-topo-m.txt"
JUWELS = NV + "juwels-booster_4xA100_old-format-mlx5-in-header_nps4_nvidia-smi-topo-mp.txt"
PCIE8 = NV + "pcie-8gpu_no-nvlink_no-nic_odd-cpu-range_nvidia-smi-topo-m.txt"

ALL = [DELLA, DGXA100, B200, BREV, DELL_MP, TPG7, TPG8, PLI, ONENIC, V17516, H200, SNC, JUWELS, PCIE8]


def _lscpu_nodes(rel):
    nodes = {}
    for line in fixture_text(rel).splitlines():
        line = line.strip()
        if line.startswith("NUMA node") and "CPU(s):" in line:
            key = line.split()[1][len("node") :]
            nodes[key] = line.split(":", 1)[1].strip()
    return nodes


def _interleaved(count):
    return {"0": cpulist.format(range(0, count, 2)), "1": cpulist.format(range(1, count, 2))}


TWO_XEON_224 = {"0": "0-55,112-167", "1": "56-111,168-223"}

# fixture: (numa_nodes, allowed, threads_per_core) of the host it was captured on
LAYOUT = {
    DGXA100: (_lscpu_nodes("cpu/dgx-a100-class_2x-epyc7742_nps4_256cpu_lscpu.txt"), "0-255", 2),
    B200: (TWO_XEON_224, "0-223", 2),
    # the capture ran in a cpuset of 12 CPUs, the planner gets the same cut
    DELL_MP: (_interleaved(112), "0-11", 2),
    TPG7: ({"0": "0-191"}, "0-191", 2),
    TPG8: ({"0": "0-191"}, "0-191", 2),
    PLI: (_lscpu_nodes("cpu/hgx-h100-princeton-pli_2x-xeon8468_ht-off_interleaved-numa_96cpu_lscpu.txt"), "0-95", 1),
    ONENIC: ({"0": "0-103", "1": "104-207"}, "0-207", 2),
    V17516: (TWO_XEON_224, "0-223", 2),
    H200: ({"0": "0-47,96-143", "1": "48-95,144-191"}, "0,2-191", 2),
    SNC: ({"0": "0-23,96-119", "1": "24-47,120-143", "2": "48-71,144-167", "3": "72-95,168-191"}, "0-191", 2),
    JUWELS: (
        dict((str(k), "%d-%d,%d-%d" % (6 * k, 6 * k + 5, 48 + 6 * k, 48 + 6 * k + 5)) for k in range(8)),
        "0-95",
        2,
    ),
    DELLA: ({"0": "0-63", "1": "64-127"}, "0-127", 1),
    BREV: ({"0": "0-51,104-155", "1": "52-103,156-207"}, "0-207", 2),
    PCIE8: ({"0": "0-31,64-95", "1": "32-63,96-127"}, "0-123", 2),
}


def topology_of(rel):
    parsed = nvidia_topo.parse(fixture_text(rel))
    nodes, allowed, threads = LAYOUT[rel]
    gpus = []
    for gpu in parsed["gpus"]:
        entry = dict(gpu)
        entry["bus_id"] = None
        if parsed["numa_off"]:
            entry["numa_node"] = None  # sysfs numa_node is -1 under numa=off
        gpus.append(entry)
    return {
        "cpu": {"allowed": allowed, "online": allowed, "numa_nodes": nodes, "threads_per_core": threads},
        "gpus": gpus,
        "nics": [{"name": nic["name"], "bus_id": None, "numa_node": None} for nic in parsed["nics"]],
    }


# rocm-smi --showpidgpus as rocm_smi_lib's python_smi_tools/rocm_smi.py prints it
# (showGpusByPid + printListLog): no real capture of this command is in tests/fixtures/real
SHOWPIDGPUS = "\n".join(
    [
        "============================ ROCm System Management Interface ============================",
        "================================== GPUs Indexed by PID ===================================",
        "PID %(w0)d is using 1 DRM device(s):",
        "1 ",
        "PID %(w1)d is using 1 DRM device(s):",
        "0 ",
        "PID %(both)d is using 2 DRM device(s):",
        "0 1 ",
        "PID %(idle)d is using 0 DRM device(s)",
        "==========================================================================================",
        "================================== End of ROCm SMI Log ===================================",
        "",
    ]
)
