# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role split of an NPU's CPU pool, as vllm-ascend does it, and the plan entry for one NPU.

A pool of at least 5 CPUs is split positionally: ``pool[0]`` / ``pool[1]`` take the SQ / CQ
IRQs, ``pool[2:-2]`` is main, ``pool[-2]`` the ACL thread and ``pool[-1]`` the release thread.
Positional means the order of the pool matters (vllm-ascend's multi-NUMA pools are unsorted),
so callers pass the pool in its positional order. Ascend 950 has no IRQ/ACL/release roles:
the whole cluster is main.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types

MIN_CPUS_PER_NPU = 5  # 2 IRQ + 1 main + 1 ACL + 1 release
MIN_CPUS_PER_NPU_WITHOUT_IRQ = 3  # 1 main + 1 ACL + 1 release
# the default of ``cluster_size``: the Ascend 950's row (the planners pass their type's)
ASCEND_950_PHYSICAL_CPUS_PER_CLUSTER = device_types.row("A5").cluster_cores

INSUFFICIENT_CPUS = "The number of CPUs is insufficient. Each NPU requires at least %d CPUs."


def min_cpus_per_npu(reserve_irq=True):
    """Smallest pool the role split accepts."""
    return MIN_CPUS_PER_NPU if reserve_irq else MIN_CPUS_PER_NPU_WITHOUT_IRQ


def cluster_size(threads_per_core, cores=ASCEND_950_PHYSICAL_CPUS_PER_CLUSTER):
    """Cluster size in logical CPUs: ``cores`` physical cores (the type's ``cluster_cores``;
    Ascend 950: 8), times threads per core.

    ``None`` when threads per core is not 1 or 2 (vllm-ascend then skips worker binding).
    """
    if threads_per_core in (1, 2) and not isinstance(threads_per_core, bool):
        return cores * threads_per_core
    return None


def split_roles(pool, reserve_irq=True, npu=None):
    """Positional role split of ``pool`` (CPU ids in positional order).

    Returns ``{"irq": CpuSeq, "main": CpuSeq, "acl": CpuSeq, "release": CpuSeq}``. Raises
    PlanError with vllm-ascend's text when the pool is too small.
    """
    pool = cpuset.CpuSeq.from_cpus(pool)
    minimum = min_cpus_per_npu(reserve_irq)
    if len(pool) < minimum:
        raise PlanError(INSUFFICIENT_CPUS % minimum, npu, cpu_shortage=True)
    if reserve_irq:
        return {"irq": pool[:2], "main": pool[2:-2], "acl": pool[-2:-1], "release": pool[-1:]}
    return {"irq": cpuset.EMPTY, "main": pool[:-2], "acl": pool[-2:-1], "release": pool[-1:]}


def check_pool_size(pool, npu=None):
    """The minimum ``split_roles`` checks (IRQ roles reserved), without building the roles."""
    if len(pool) < MIN_CPUS_PER_NPU:
        raise PlanError(INSUFFICIENT_CPUS % MIN_CPUS_PER_NPU, npu, cpu_shortage=True)


def check_pool_sizes(pools):
    """``check_pool_size`` of every ``{npu: pool}``, in the dict's order (the first short one
    raises, as ``split_roles`` over the pools would)."""
    for npu, pool in pools.items():
        check_pool_size(pool, npu)


def cluster_roles(pool):
    """Ascend 950: the whole cluster is main; no IRQ, ACL or release CPUs."""
    return {"irq": cpuset.EMPTY, "main": cpuset.CpuSeq.from_cpus(pool), "acl": cpuset.EMPTY, "release": cpuset.EMPTY}


def npu_entry(pool, roles, cpu_node):
    """The plan entry of one NPU: cpulists as strings, ``pool_order`` keeps the positions.

    ``irq`` keeps SQ first, CQ second; the other roles are sorted cpulists. ``cpu_node``: the
    host's nodemap.NodeMap.
    """
    return {
        "pool": cpuset.format(pool),
        "pool_order": cpuset.format_ordered(pool),
        "numa_nodes": sorted(cpu_node.nodes(pool)),
        "irq": cpuset.format_ordered(roles["irq"]),
        "main": cpuset.format(roles["main"]),
        "acl": cpuset.format(roles["acl"]),
        "release": cpuset.format(roles["release"]),
    }


def pool_entry(pool, cpu_node, cluster=False, npu=None):
    """``npu_entry`` of ``pool`` split by ``split_roles`` (IRQ CPUs reserved), or by
    ``cluster_roles``."""
    roles = cluster_roles(pool) if cluster else split_roles(pool, True, npu)
    return npu_entry(pool, roles, cpu_node)


def pool_entries(pools, npus, cpu_node, cluster=False):
    """``[pool_entry(pools[npu], cpu_node, cluster, npu) for npu in npus]``."""
    return [pool_entry(pools[npu], cpu_node, cluster, npu) for npu in npus]
