# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vendor table: what differs between accelerator vendors, in one place.

The facts name the vendor (``ascend`` | ``nvidia`` | ``amd`` | ``none``) and the plan carries
it (``plan.vendor``); render, apply and the report look the vendor up here instead of
branching on its name. A new vendor is a row here, its parser in ``parse/`` and its facts in
``model/topology.py``; GPU vendors share the GPU planner (``plan/gpu.py``).

Each row: ``device_word`` (NPU / GPU: labels such as ``GPU3/mlx5_0``), ``device_key`` (the plan
and facts table: ``npus`` / ``gpus``), ``visibility`` (the variables the wrapper exports, all
to the same device list; the first is the one an instance's env may already carry),
``clear`` (variables the wrapper unsets: they would renumber the devices under it),
``launch_env`` (fixed launch variables), ``tool`` / ``driver`` (its command-line tool and driver, for messages), ``link_costs`` (the link-cell vocabulary of its
topology tool beyond the PCIe classes, as GPU<->NIC costs), ``process_query`` (the command that
lists the processes on the devices; the binder runs it), ``process_map`` (the command that maps
the tool's ids in that list to the plan's device ids, or None), ``irq_source`` (``device``: the accelerator's own IRQs;
``nic``: the paired RDMA NIC's completion IRQs), ``numa_bind`` (vLLM's NUMA binding -
``--numa-bind``, and its automatic form from 0.34 - runs on this vendor's platform: read from
the vLLM version table, ``vllm_flags.NUMA_BIND_VENDORS``, never kept here), ``nic_links`` (``matrix``: the tool prints GPU<->NIC cells; ``numa``:
the facts derive them from sysfs NUMA nodes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.model import vllm_flags


class Vendor(object):
    __slots__ = (
        "name",
        "device_word",
        "device_key",
        "visibility",
        "clear",
        "launch_env",
        "link_costs",
        "process_query",
        "process_map",
        "irq_source",
        "nic_links",
        "tool",
        "driver",
    )

    def __init__(self, name, **fields):
        self.name = name
        for key in self.__slots__[1:]:
            setattr(self, key, fields[key])

    @property
    def numa_bind(self):
        return vllm_flags.applies_to(vllm_flags.NUMA_BIND, self.name)

    @property
    def is_gpu(self):
        return self.device_key == "gpus"


VENDORS = {
    "ascend": Vendor(
        "ascend",
        device_word="NPU",
        device_key="npus",
        tool="npu-smi",
        driver="Ascend",
        visibility=("ASCEND_RT_VISIBLE_DEVICES",),
        clear=(),
        launch_env={},
        link_costs={},
        process_query=("npu-smi", "info"),
        process_map=("npu-smi", "info", "-m"),
        irq_source="device",
        nic_links=None,
    ),
    "nvidia": Vendor(
        "nvidia",
        device_word="GPU",
        device_key="gpus",
        tool="nvidia-smi",
        driver="NVIDIA",
        visibility=("CUDA_VISIBLE_DEVICES",),
        clear=(),
        # the plan's indexes are nvidia-smi's, which are PCI order; CUDA's default is not
        launch_env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
        link_costs={"NV#": 1},
        process_query=(
            "nvidia-smi",
            "--query-compute-apps=pid,gpu_bus_id,used_memory",
            "--format=csv,noheader,nounits",
        ),
        process_map=("nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"),
        irq_source="nic",
        nic_links="matrix",
    ),
    # vLLM's ROCm platform (vllm/platforms/rocm.py) reads CUDA_VISIBLE_DEVICES and refuses a
    # HIP_VISIBLE_DEVICES that differs from it: both are exported, equal. ROCR_VISIBLE_DEVICES
    # filters below HIP, so an inherited value would renumber the plan's indexes: unset.
    "amd": Vendor(
        "amd",
        device_word="GPU",
        device_key="gpus",
        tool="rocm-smi",
        driver="AMD ROCm",
        visibility=("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"),
        clear=("ROCR_VISIBLE_DEVICES",),
        launch_env={},
        link_costs={"XGMI": 1},
        # --showpids prints a count of GPUs per process, --showpidgpus their indexes
        process_query=("rocm-smi", "--showpidgpus"),
        process_map=None,
        irq_source="nic",
        nic_links="numa",
    ),
}
GPU_VENDORS = tuple(sorted(name for name, row in VENDORS.items() if row.is_gpu))


def get(name):
    """The row of vendor ``name``; None for ``none`` or an unknown name."""
    return VENDORS.get(name)


def of_plan(plan):
    """The vendor of a plan: its ``vendor`` key; plans made before it existed are read as
    they always were (``gpu_numa`` or only a ``gpus`` table: nvidia; else ascend)."""
    row = VENDORS.get(plan.get("vendor"))
    if row is not None:
        return row
    if plan.get("mode") == "gpu_numa" or (plan.get("gpus") and not plan.get("npus")):
        return VENDORS["nvidia"]
    return VENDORS["ascend"]


def is_gpu_vendor(name):
    return name in GPU_VENDORS


def link_cost_extra(cell):
    """Cost of a vendor-specific link cell (``NV12``, ``XGMI``), or None for another cell."""
    if cell.startswith("NV") and cell[2:].isdigit():
        return VENDORS["nvidia"].link_costs["NV#"]
    for row in VENDORS.values():
        if cell in row.link_costs:
            return row.link_costs[cell]
    return None
