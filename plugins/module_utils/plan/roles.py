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

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import nodemap
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
    """Positional role split of ``pool`` (a list of CPU ids in positional order).

    Returns ``{"irq": [...], "main": [...], "acl": [...], "release": [...]}``. Raises
    PlanError with vllm-ascend's text when the pool is too small.
    """
    minimum = min_cpus_per_npu(reserve_irq)
    if len(pool) < minimum:
        raise PlanError(INSUFFICIENT_CPUS % minimum, npu, cpu_shortage=True)
    if isinstance(pool, cpuset.CpuSeq) and len(pool.runs) == 1:
        # one contiguous run (the usual pool): the positions are plain arithmetic
        first, last = pool.runs[0]
        if reserve_irq:
            return {"irq": cpuset.CpuSeq(((first, first + 1),)),
                    "main": cpuset.CpuSeq(((first + 2, last - 2),)), "acl": [last - 1],
                    "release": [last]}
        return {"irq": [], "main": cpuset.CpuSeq(((first, last - 2),)), "acl": [last - 1],
                "release": [last]}
    if reserve_irq:
        return {"irq": pool[:2], "main": pool[2:-2], "acl": [pool[-2]], "release": [pool[-1]]}
    return {"irq": [], "main": pool[:-2], "acl": [pool[-2]], "release": [pool[-1]]}


def check_pool_size(pool, npu=None):
    """The minimum ``split_roles`` checks (IRQ roles reserved), without building the roles."""
    if len(pool) < MIN_CPUS_PER_NPU:
        raise PlanError(INSUFFICIENT_CPUS % MIN_CPUS_PER_NPU, npu, cpu_shortage=True)


def check_pool_sizes(pools):
    """``check_pool_size`` of every ``{npu: pool}``, in the dict's order (the first short one
    raises, as ``split_roles`` over the pools would)."""
    for npu, pool in pools.items():
        if (pool.size if pool.__class__ is cpuset.CpuSeq else len(pool)) < MIN_CPUS_PER_NPU:
            check_pool_size(pool, npu)


def cluster_roles(pool):
    """Ascend 950: the whole cluster is main; no IRQ, ACL or release CPUs."""
    return {"irq": [], "main": list(pool), "acl": [], "release": []}


def npu_entry(pool, roles, cpu_node):
    """The plan entry of one NPU: cpulists as strings, ``pool_order`` keeps the positions.

    ``irq`` keeps SQ first, CQ second; the other roles are sorted cpulists. ``pool`` and the
    roles may be lists or CpuSeq, ``cpu_node`` a dict or a nodemap.NodeMap.
    """
    nodes = sorted(nodemap.nodes_of(cpu_node, pool))
    if isinstance(pool, cpuset.CpuSeq):
        order = cpulist.format_runs(pool.runs)
        return {
            "pool": order if pool.normal else cpulist.format_runs(pool.sorted_unique().runs),
            "pool_order": order,
            "numa_nodes": nodes,
            "irq": _role_text(roles["irq"], True),
            "main": _role_text(roles["main"], False),
            "acl": _role_text(roles["acl"], False),
            "release": _role_text(roles["release"], False),
        }
    return {
        "pool": cpuset.format(pool),
        "pool_order": cpuset.format_ordered(pool),
        "numa_nodes": nodes,
        "irq": cpuset.format_ordered(roles["irq"]),
        "main": cpuset.format(roles["main"]),
        "acl": cpuset.format(roles["acl"]),
        "release": cpuset.format(roles["release"]),
    }


def pool_entry(pool, cpu_node, cluster=False, npu=None):
    """``npu_entry(pool, split_roles(pool, True, npu), cpu_node)``, or with ``cluster_roles``
    (``pool_entries`` of one NPU)."""
    return pool_entries({npu: pool}, [npu], cpu_node, cluster)[0]


_TEXT = cpuset.DECIMAL
_DASHED = cpuset.DASHED  # "N-": a range's text is one concatenation
_SMALL = len(_TEXT)  # ids with a text in _TEXT


def pool_entries(pools, npus, cpu_node, cluster=False, mains=None):
    """``[pool_entry(pools[npu], cpu_node, cluster, npu) for npu in npus]``; ``mains``: the
    caller's ``{npu: pools[npu][2:-2]}`` CpuSeq, or None.

    A CpuSeq pool with a NodeMap is formatted straight from its runs in one pass, without the
    role lists (ids below 2048: their text is looked up, not formatted): this runs for every
    NPU of every plan. Other shapes take the general path.
    """
    entries = []
    append = entries.append
    fast = not cluster and cpu_node.__class__ is nodemap.NodeMap
    for npu in npus:
        pool = pools[npu]
        if not fast or pool.__class__ is not cpuset.CpuSeq:
            roles = cluster_roles(pool) if cluster else split_roles(pool, True, npu)
            append(npu_entry(pool, roles, cpu_node))
            continue
        if pool.size < MIN_CPUS_PER_NPU:
            check_pool_size(pool, npu)
        runs = pool.runs
        first, last = runs[0][0], runs[-1][1]
        node = cpu_node.run_node(first, last) if pool.normal else None
        # (an ascending pool lies between its first and its last CPU)
        nodes = [node] if node is not None else cpu_node.node_list(runs)
        if len(runs) == 1 and 0 <= first and last < _SMALL:
            # one contiguous run of at least 5 CPUs: the roles are plain arithmetic
            text = _DASHED[first] + _TEXT[last]
            append({"pool": text, "pool_order": text, "numa_nodes": nodes,
                    "irq": _DASHED[first] + _TEXT[first + 1],
                    "main": _TEXT[first + 2] if first + 2 == last - 2 else
                    _DASHED[first + 2] + _TEXT[last - 2],
                    "acl": _TEXT[last - 1], "release": _TEXT[last]})
        elif len(runs) == 2 and pool.normal and runs[1][0] == last - 1 and \
                runs[0][1] >= first + 2 and 0 <= first and last < _SMALL:
            # a pool whose main lost its end to a frontend (frontend.carved_pool): SQ, CQ and
            # main in the first run, ACL and release the second
            end = runs[0][1]
            text = _DASHED[first] + _TEXT[end] + "," + _DASHED[last - 1] + _TEXT[last]
            append({"pool": text, "pool_order": text, "numa_nodes": nodes,
                    "irq": _DASHED[first] + _TEXT[first + 1],
                    "main": _TEXT[end] if first + 2 == end else _DASHED[first + 2] + _TEXT[end],
                    "acl": _TEXT[last - 1], "release": _TEXT[last]})
        elif pool.normal and 0 <= first and last < _SMALL:
            # ascending over several runs (``last`` the highest): every text from the runs
            order = cpuset.runs_text(runs)
            # (pool.first_two() and pool.last_two(), inline: this runs for every carved pool)
            lo, hi = runs[0]
            sq_cpu, cq_cpu = (lo, lo + 1) if hi > lo else (lo, runs[1][0])
            lo, hi = runs[-1]
            acl, release = (hi - 1, hi) if hi > lo else (runs[-2][1], hi)
            append({"pool": order, "pool_order": order, "numa_nodes": nodes,
                    # a range when SQ and CQ are neighbours (both in the first run)
                    "irq": (_DASHED[sq_cpu] if cq_cpu == sq_cpu + 1 else _TEXT[sq_cpu] + ",") +
                    _TEXT[cq_cpu],
                    "main": cpuset.runs_text((mains[npu] if mains else
                                              pool.part(2, pool.size - 2)).runs),
                    "acl": _TEXT[acl], "release": _TEXT[release]})
        else:
            append(_large_entry(pool, nodes))
    return entries


def _large_entry(pool, nodes):
    """``pool_entry`` of a CpuSeq pool (of at least 5 CPUs), the general way."""
    runs = pool.runs
    order = cpulist.format_runs(runs)
    sq_cpu, cq_cpu = pool.first_two()
    acl, release = pool.last_two()
    return {
        "pool": order if pool.normal else cpulist.format_runs(pool.sorted_unique().runs),
        "pool_order": order,
        "numa_nodes": nodes,
        # positional: SQ first; a range only when both sit in the first run
        "irq": ("%d-%d" if runs[0][1] > runs[0][0] else "%d,%d") % (sq_cpu, cq_cpu),
        "main": cpulist.format_runs(pool[2:-2].sorted_unique().runs),
        "acl": str(acl),
        "release": str(release),
    }


def _role_text(ids, positional):
    """cpuset.format_ordered / cpuset.format of a role, without the dispatch for the usual
    shapes (a CpuSeq, or the one-CPU list of ACL / release)."""
    if ids.__class__ is cpuset.CpuSeq:
        return cpulist.format_runs(ids.runs if positional else ids.sorted_unique().runs)
    if ids.__class__ is list and len(ids) == 1:
        return str(ids[0])
    return cpuset.format_ordered(ids) if positional else cpuset.format(ids)
