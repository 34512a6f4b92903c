# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm-ascend's in-process CPU allocator, reproduced exactly (defects included) as pure functions.

The reference (vllm_ascend/cpu_binding.py, commit 182b75ea84) computes the pools inside each
worker from live commands. Here the same algorithm runs over data, so an audit can say what the
in-process binding WILL do on a host. Known defects are kept on purpose (docs/policies.md):
next-NUMA extension with wrap-around that makes pools overlap, the ``len(defaultdict)`` modulus
that grows a phantom node on non-contiguous NUMA ids, positional roles on unsorted pools, the
``release=[[N]]`` log, the NUMA0 UVB reservation that starves Ascend 950 NPUs on NUMA0.

Errors carry the reference's texts. Where the reference would crash (KeyError, ValueError) we
raise PlanError saying so.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import defaultdict

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import nodemap
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types
from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import a5 as va_a5
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import log_lines as va_log
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan.log_lines import (  # noqa: F401 pylint: disable=unused-import
    allocate,
    check_pools,
    plan_line,
    plan_lines,
    pool_plan_line,
)
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan.a5 import (  # noqa: F401 pylint: disable=unused-import
    A950_BAD_TPC,
    A950_INSUFFICIENT,
    A950_INVALID_AFFINITY,
    A950_NO_AFFINITY,
    A950_NO_UVB,
    uvb_pool,
)

TOPO_AFFINITY_MODE = device_types.TOPO_AFFINITY
GLOBAL_SLICE_MODE = device_types.GLOBAL_SLICE
ASCEND950_MODE = "ascend950"

NON_ARM_SKIP = "CPU binding skipped: non-ARM CPU detected."
UNKNOWN_ARCH = "Unknown CPU architecture. arch=%s, action: disabling CPU binding."
NO_RUNNING_NPU = "Can not get running npu info."
NO_NUMA_NODE = "lscpu command output error, no NUMA node available. Please check!"
CONFLICT = "CPUs available in 'Cpus_allowed_list' conflict with NUMA affinity."
TOPO_FALLBACK = "NPU topo affinity not found. action: fallback to global-slice CPU binding."
INSUFFICIENT_SLICE = (
    "Insufficient CPUs for binding with CPU role reservations: "
    "total_allowed=%d, total_npus=%d, min_per_npu=%d (<%d). "
    "Need at least %d CPUs in cpuset."
)
INVALID_NPU_ID = "Invalid NPU id %d, total_npus=%d."
MODE_LOG = "[cpu_bind_mode] mode=%s rank=%s visible_npus=%s"
PLAN_HEADER = "The CPU allocation plan is as follows:"
GLOBAL_SLICE_LOG = (
    "[cpu_global_slice] rank:%s ASCEND_RT_VISIBLE_DEVICES=%s running_npu_list:%s "
    "total_npus:%s allowed_cpus:%s base:%s extra:%s allowed_cpus_head:%s "
    "allowed_cpus_tail:%s"
)


def arm_check(arch):
    """``(is_arm, warning)`` as vllm-ascend's ``is_arm_cpu`` decides from ``platform.machine()``."""
    arch = (arch or "").lower()
    if arch in ("x86_64", "amd64", "i386", "i686"):
        return False, None
    if arch in ("aarch64", "arm64") or arch.startswith("arm"):
        return True, None
    return False, UNKNOWN_ARCH % arch


def binding_mode(device_type):
    """The type's ``vllm_mode`` (A3 -> global_slice; A2, 310P, A5 and anything else ->
    topo_affinity)."""
    return device_types.row(device_type).vllm_mode


def visible_devices(env_value):
    """ASCEND_RT_VISIBLE_DEVICES as the reference reads it: None when unset/empty, else ints."""
    if not env_value:
        return None
    if not isinstance(env_value, str):
        # (hand-made facts: an environment variable is text)
        raise PlanError("ASCEND_RT_VISIBLE_DEVICES=%r is not text" % (env_value,))
    try:
        return [int(x) for x in env_value.split(",")]
    except ValueError:
        raise PlanError(
            "ASCEND_RT_VISIBLE_DEVICES=%r is not a comma-separated list of integers "
            "(vllm-ascend fails with ValueError)" % (env_value,)
        )


def running_npus(active, env_value=None):
    """The reference's running NPU list: ``active`` filtered by ASCEND_RT_VISIBLE_DEVICES, sorted."""
    running = set(active)
    visible = visible_devices(env_value)
    if visible is not None:
        running &= set(visible)
    if not running:
        raise PlanError(NO_RUNNING_NPU)
    return sorted(running)


def build_cpu_node_map(node_cpus, cpu_node=None):
    """``lscpu -e=CPU,NODE`` model: ``(cpu_node, numa_to_cpu)``.

    ``node_cpus`` maps node id -> CPU ids. CPUs are visited in ascending id (lscpu's order), so
    ``numa_to_cpu`` (a defaultdict of CpuSeq, as the reference's) has its keys in first-seen
    order; a missing node appears as an empty one when looked up. ``cpu_node``: the caller's
    ``nodemap.NodeMap(node_cpus)``, when it has one.
    """
    if cpu_node is None:
        cpu_node = nodemap.NodeMap(node_cpus)
    numa_to_cpu = defaultdict(cpuset.CpuSeq)
    numa_to_cpu.update(cpu_node.node_runs)
    if not numa_to_cpu:
        raise PlanError(NO_NUMA_NODE)
    return cpu_node, numa_to_cpu


def global_slice(
    running,
    allowed_cpus,
    total_logic_npus,
    npu_affinity,
    min_per_npu=5,
    log=None,
    rank=0,
    env_value=None,
    insufficient=INSUFFICIENT_SLICE,
):
    """Global slicing by logic id: remainder to the lowest ids, minimum checked on the base.
    ``insufficient``: the release's text of the error (0.18-0.21 word it differently)."""
    pools = {}
    if not running:
        return pools
    allowed = cpuset.sorted_unique(allowed_cpus)
    total_cpus = len(allowed)
    if total_cpus == 0:
        return pools
    if total_logic_npus > 0:
        total = total_logic_npus
    elif npu_affinity:
        total = len(npu_affinity)
    else:
        total = len(running)
    base = total_cpus // total
    extra = total_cpus % total
    if log is not None:
        log.append(
            GLOBAL_SLICE_LOG
            % (rank, env_value, list(running), total, total_cpus, base, extra, allowed[:16], allowed[-16:])
        )
    if base < min_per_npu:
        raise PlanError(insufficient % (total_cpus, total, base, min_per_npu, total * min_per_npu), cpu_shortage=True)
    for npu in running:
        if npu < 0 or npu >= total:
            raise PlanError(INVALID_NPU_ID % (npu, total))
        start = npu * base + (npu if npu < extra else extra)
        # (within the allowed CPUs: npu < total, and total * base + extra is their count)
        stop = start + base + (1 if npu < extra else 0)
        pools[npu] = allowed.part(start, stop)
    return pools


def extend_numa(cpu_list, cpu_node, numa_to_cpu, allowed_cpus, npu=None):
    """Next-NUMA extension, wrap-around and ``len(defaultdict)`` modulus included.

    A single-node list gets every allowed CPU of node ``(node + 1) % len(numa_to_cpu)``; the
    lookup of a missing node adds it to ``numa_to_cpu`` (the phantom node), so the modulus
    grows for later calls. A multi-node list comes back unchanged (unsorted).
    """
    cpu_list = cpuset.CpuSeq.from_cpus(cpu_list)
    if not cpu_list:
        return cpu_list
    nodes = va_a5.nodes_of(cpu_node, cpu_list, npu)
    if len(nodes) != 1:
        return cpu_list
    node = list(nodes)[0]
    next_node = (node + 1) % len(numa_to_cpu)
    return cpuset.sorted_unique(cpu_list + cpuset.keep(numa_to_cpu[next_node], allowed_cpus))


def average_distribute(pools, npu_list):
    """Cut the sorted pool of ``npu_list[0]`` into equal chunks; the last NPU takes the rest."""
    cpus = cpuset.sorted_all(pools[npu_list[0]])
    total, count = len(cpus), len(npu_list)
    per_npu = total // count
    result = {}
    for i, npu in enumerate(npu_list):
        end = (i + 1) * per_npu if i < count - 1 else total
        result[npu] = cpus.part(i * per_npu, end)
    return result


def candidate_npus(all_logic_npus, running, npu_affinity, allowed_set, hidden=True):
    """Running NPUs plus hidden NPUs whose topo affinity overlaps the allowed CPUs (vllm-project/vllm-ascend#8792,
    0.19.1rc1 on); ``hidden`` False: the running NPUs only, as 0.18.x."""
    if not hidden:
        return list(running)
    running_set = set(running)
    return [
        npu for npu in all_logic_npus if npu in running_set or cpuset.overlaps(npu_affinity.get(npu, []), allowed_set)
    ]


def topo_affinity(
    running, all_logic_npus, npu_affinity, allowed_cpus, cpu_node, numa_to_cpu, extend=extend_numa, hidden=True
):
    """Affinity pools: base = affinity on allowed CPUs, next-NUMA extension, grouping.

    ``numa_to_cpu`` is mutated exactly as the reference mutates its defaultdict. ``extend``
    is replaceable so that upstream's tests, which mock the extension, port as they are.
    """
    allowed_set = cpuset.sorted_unique(allowed_cpus)
    pools = {}
    for npu in candidate_npus(all_logic_npus, running, npu_affinity, allowed_set, hidden):
        base = cpuset.keep(npu_affinity.get(npu, []), allowed_set)
        if not base:
            raise PlanError(CONFLICT, npu)
        pools[npu] = extend(base, cpu_node, numa_to_cpu, allowed_set, npu)
    groups = {}
    for npu, cpus in pools.items():
        groups.setdefault(cpuset.CpuSeq.from_cpus(cpus).runs, []).append(npu)
    final = {}
    for npu_list in groups.values():
        if len(npu_list) == 1:
            final[npu_list[0]] = pools[npu_list[0]]
        else:
            final.update(average_distribute(pools, npu_list))
    result = {}
    for npu in running:
        if npu not in final:
            raise PlanError("NPU is not in 'npu-smi info -m' (vllm-ascend fails with KeyError)", npu)
        result[npu] = final[npu]
    return result


def ascend950(
    running,
    all_logic_npus,
    npu_affinity,
    allowed_cpus,
    cpu_node,
    numa_to_cpu,
    threads_per_core,
    uvb_cpus,
    cores=cpu_roles.ASCEND_950_PHYSICAL_CPUS_PER_CLUSTER,
):
    """Ascend 950 clusters (``a5.ascend950`` over this module's candidates)."""
    candidates = candidate_npus(all_logic_npus, running, npu_affinity, set(allowed_cpus))
    return va_a5.ascend950(
        running,
        candidates,
        npu_affinity,
        allowed_cpus,
        cpu_node,
        numa_to_cpu,
        threads_per_core,
        uvb_cpus,
        cores,
    )


CURRENT_RULES = {"hidden": True, "a5": "cluster"}
BIND_FAILED = "Bind cpus failed in rank%s: %s Skip binding cpu."


def bind_failure(rank, npu, pools):
    """The worker's warning when rank ``rank`` (binding ``npu``, None when the running list has
    no entry ``rank``) fails in print_plan, or None when it binds (KeyError / IndexError)."""
    if npu is None:
        return BIND_FAILED % (rank, "list index out of range")
    if npu not in pools:
        return BIND_FAILED % (rank, npu)
    return None


def plan_vllm_ascend(
    arch,
    device_type,
    allowed_cpus,
    node_cpus,
    all_logic_npus,
    running,
    npu_affinity,
    threads_per_core=None,
    env_value=None,
    cpu_node=None,
    rules=None,
    texts=None,
    ranks=None,
):
    """What vllm-ascend's binding computes for the workers of ``running`` (logic ids).

    Returns a dict: skipped, reason, mode, pools {npu: positional list}, cluster_roles (True:
    Ascend 950 clusters, ``cpu_roles.cluster_roles``; False: every pool has been checked for
    ``cpu_roles.split_roles``), reserve_irq, uvb, log, warnings. The log holds, per rank, the
    lines that worker would print. ``cpu_node``: the caller's ``nodemap.NodeMap(node_cpus)``,
    if any. ``rules``/``texts``: a release's (``releases.select``; default the
    current allocator). ``ranks``: ``[(rank, npu or None)]`` the log is written for (default
    rank r binds ``running[r]``).
    """
    rules = rules or CURRENT_RULES
    texts = texts or {}
    kind = device_types.row(device_type)
    a5 = rules["a5"] if kind.vllm_950_path else None
    out = {
        "skipped": False,
        "reason": None,
        "mode": None,
        "pools": {},
        "cluster_roles": a5 == "cluster",
        "reserve_irq": a5 not in ("cluster", "global"),
        "uvb": None,
        "log": [],
        "warnings": [],
    }
    is_arm, warning = arm_check(arch)
    if warning and "unknown_arch" in texts:
        warning = texts["unknown_arch"] % (arch or "").lower()
    if not is_arm:
        out["skipped"] = True
        out["reason"] = warning or NON_ARM_SKIP
        if warning:
            out["warnings"].append(warning)
        out["log"].append(out["reason"])
        return out
    cpu_node, numa_to_cpu = build_cpu_node_map(node_cpus, cpu_node)
    mode = GLOBAL_SLICE_MODE if a5 == "global" else binding_mode(device_type)
    is_950 = a5 == "cluster"
    out["mode"] = ASCEND950_MODE if is_950 else mode
    log = out["log"]
    head = [MODE_LOG % (mode, 0, list(running))]
    if is_950:
        out["uvb"] = uvb_pool(numa_to_cpu, allowed_cpus)
        if not out["uvb"]:
            head.append(A950_NO_UVB)
        pools, warning = ascend950(
            running,
            all_logic_npus,
            npu_affinity,
            allowed_cpus,
            cpu_node,
            numa_to_cpu,
            threads_per_core,
            out["uvb"],
            kind.cluster_cores,
        )
        if pools is None:
            out["skipped"] = True
            out["reason"] = warning
            out["warnings"].append(warning)
            log.extend(head)
            log.append(warning)
            return out
    elif mode == GLOBAL_SLICE_MODE or not npu_affinity:
        if mode != GLOBAL_SLICE_MODE:
            fallback = texts.get("fallback", TOPO_FALLBACK)
            out["mode"] = GLOBAL_SLICE_MODE
            out["warnings"].append(fallback)
            head.append(fallback)
        slice_log = []
        pools = global_slice(
            running,
            allowed_cpus,
            len(all_logic_npus),
            npu_affinity,
            cpu_roles.min_cpus_per_npu(out["reserve_irq"]),
            slice_log,
            0,
            env_value,
            texts.get("slice", INSUFFICIENT_SLICE),
        )
        head.extend(slice_log)
    else:
        pools = topo_affinity(
            running, all_logic_npus, npu_affinity, allowed_cpus, cpu_node, numa_to_cpu, hidden=rules["hidden"]
        )
    if not pools:
        # global_slice built nothing (empty cpuset): the reference then fails printing the plan.
        raise PlanError(
            "no allowed CPUs: vllm-ascend builds no pool and fails with KeyError when it prints the plan",
            cpu_shortage=True,
        )
    roles_type = device_type if a5 == "cluster" else None
    if a5 == "global":
        for npu, pool in pools.items():
            cpu_roles.split_roles(pool, False, npu)
    else:
        va_log.check_pools(pools, roles_type)
    out["pools"] = pools
    _rank_log(log, head, pools, running, ranks, roles_type, a5 == "global")
    return out


def _rank_log(log, head, pools, running, ranks, roles_type, no_irq):
    """Per rank: the head lines with its rank, the plan header, its NPU's line (or the
    worker's warning where print_plan fails)."""
    templates = va_log.rank_templates(head)
    npus = running if ranks is None else [npu for _rank, npu in ranks]
    bound = [npu for npu in npus if npu is not None and npu in pools]
    if no_irq:
        lines = [va_log.plan_line(npu, cpu_roles.split_roles(pools[npu], False, npu), None) for npu in bound]
    else:
        lines = va_log.plan_lines(bound, pools, roles_type)
    if len(bound) != len(npus):
        # some rank fails in print_plan: its warning takes the place of its line
        lines.reverse()
        lines = [
            lines.pop() if npu is not None and npu in pools else bind_failure(rank, npu, pools)
            for rank, npu in enumerate(npus)
        ]
    append = log.append
    for rank, line in enumerate(lines):
        rank_text = str(rank)
        for before, after in templates:
            append(before if after is None else before + rank_text + after)
        append(PLAN_HEADER)
        append(line)
