# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm-ascend's Ascend 950 cluster builder (0.23.0rc1 on), reproduced exactly: the UVB pool
that reserves NUMA0, the clusters cut from every allowed CPU of an NPU's node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles

A950_NO_AFFINITY = "[cpu_bind_ascend_950] NPU topo affinity not found. action: skip worker CPU binding."
A950_BAD_TPC = "[cpu_bind_ascend_950] unsupported Thread(s) per core: %s. action: skip worker CPU binding."
A950_INVALID_AFFINITY = "[cpu_bind_ascend_950] invalid topo affinity. npu=%s, cpus=%s. action: skip worker CPU binding."
A950_INSUFFICIENT = (
    "[cpu_bind_ascend_950] insufficient CPU clusters. numa=%s, clusters=%s, npus=%s. action: skip worker CPU binding."
)
A950_NO_UVB = "[cpu_bind_ascend_950] no available NUMA0 CPUs for uvb_poll_window_thread."


def nodes_of(cpu_node, cpus, npu):
    """The set of NUMA nodes of ``cpus`` (the reference's ``{cpu_node[c] for c in ...}``)."""
    missing = cpu_node.first_missing(cpus)
    if missing is not None:
        raise PlanError("CPU %s is on no NUMA node in lscpu's output (vllm-ascend fails with KeyError)" % missing, npu)
    return cpu_node.nodes(cpus)


def uvb_pool(numa_to_cpu, allowed_cpus):
    """Ascend 950 UVB poll-thread pool: NUMA0's allowed CPUs minus CPU 0 (lscpu order)."""
    return cpuset.subtract(cpuset.keep(numa_to_cpu.get(0, cpuset.EMPTY), allowed_cpus), [0])


def ascend950(
    running,
    candidates,
    npu_affinity,
    allowed_cpus,
    cpu_node,
    numa_to_cpu,
    threads_per_core,
    uvb_cpus,
    cores=cpu_roles.ASCEND_950_PHYSICAL_CPUS_PER_CLUSTER,
):
    """Ascend 950 clusters. Returns ``(pools, warning)``; pools None means the worker skips.
    ``candidates``: ``candidate_npus``; ``cores``: physical cores per cluster (the device type's ``cluster_cores``)."""
    if not npu_affinity:
        return None, A950_NO_AFFINITY
    size = cpu_roles.cluster_size(threads_per_core, cores)
    if size is None:
        return None, A950_BAD_TPC % (threads_per_core,)
    allowed_set = cpuset.sorted_unique(allowed_cpus)
    numa_to_npus = {}
    for npu in candidates:
        base = cpuset.keep(npu_affinity.get(npu, cpuset.EMPTY), allowed_set)
        nodes = nodes_of(cpu_node, base, npu)
        if len(nodes) != 1:
            return None, A950_INVALID_AFFINITY % (npu, base)
        numa_to_npus.setdefault(nodes.pop(), []).append(npu)
    final = {}
    for node, npu_list in numa_to_npus.items():
        cpus = cpuset.subtract(
            cpuset.keep(cpuset.sorted_all(numa_to_cpu.get(node, cpuset.EMPTY)), allowed_set), uvb_cpus
        )
        clusters = [cpus[i : i + size] for i in range(0, len(cpus) - len(cpus) % size, size)]
        npu_list = sorted(npu_list)
        if len(clusters) < len(npu_list):
            return None, A950_INSUFFICIENT % (node, len(clusters), npu_list)
        for index, npu in enumerate(npu_list):
            final[npu] = clusters[index]
    pools = {}
    for npu in running:
        if npu not in final:
            raise PlanError("NPU is not in 'npu-smi info -m' (vllm-ascend fails with KeyError)", npu)
        pools[npu] = final[npu]
    return pools, None
