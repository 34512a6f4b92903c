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

from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import nodemap
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError

TOPO_AFFINITY_MODE = "topo_affinity"
GLOBAL_SLICE_MODE = "global_slice"
ASCEND950_MODE = "ascend950"

DEVICE_BINDING_MODE = {"A2": TOPO_AFFINITY_MODE, "A3": GLOBAL_SLICE_MODE,
                       "310P": TOPO_AFFINITY_MODE, "A5": TOPO_AFFINITY_MODE}
NO_IRQ_BINDING_DEVICE_TYPES = ("A5",)

NON_ARM_SKIP = "CPU binding skipped: non-ARM CPU detected."
UNKNOWN_ARCH = "Unknown CPU architecture. arch=%s, action: disabling CPU binding."
NO_RUNNING_NPU = "Can not get running npu info."
NO_NUMA_NODE = "lscpu command output error, no NUMA node available. Please check!"
CONFLICT = "CPUs available in 'Cpus_allowed_list' conflict with NUMA affinity."
TOPO_FALLBACK = "NPU topo affinity not found. action: fallback to global-slice CPU binding."
INSUFFICIENT_SLICE = ("Insufficient CPUs for binding with CPU role reservations: "
                      "total_allowed=%d, total_npus=%d, min_per_npu=%d (<%d). "
                      "Need at least %d CPUs in cpuset.")
INVALID_NPU_ID = "Invalid NPU id %d, total_npus=%d."
A950_NO_AFFINITY = ("[cpu_bind_ascend_950] NPU topo affinity not found. "
                    "action: skip worker CPU binding.")
A950_BAD_TPC = ("[cpu_bind_ascend_950] unsupported Thread(s) per core: %s. "
                "action: skip worker CPU binding.")
A950_INVALID_AFFINITY = ("[cpu_bind_ascend_950] invalid topo affinity. npu=%s, cpus=%s. "
                         "action: skip worker CPU binding.")
A950_INSUFFICIENT = ("[cpu_bind_ascend_950] insufficient CPU clusters. numa=%s, clusters=%s, "
                     "npus=%s. action: skip worker CPU binding.")
A950_NO_UVB = "[cpu_bind_ascend_950] no available NUMA0 CPUs for uvb_poll_window_thread."
MODE_LOG = "[cpu_bind_mode] mode=%s rank=%s visible_npus=%s"
PLAN_HEADER = "The CPU allocation plan is as follows:"
GLOBAL_SLICE_LOG = ("[cpu_global_slice] rank:%s ASCEND_RT_VISIBLE_DEVICES=%s running_npu_list:%s "
                    "total_npus:%s allowed_cpus:%s base:%s extra:%s allowed_cpus_head:%s "
                    "allowed_cpus_tail:%s")


def arm_check(arch):
    """``(is_arm, warning)`` as vllm-ascend's ``is_arm_cpu`` decides from ``platform.machine()``."""
    arch = (arch or "").lower()
    if arch in ("x86_64", "amd64", "i386", "i686"):
        return False, None
    if arch in ("aarch64", "arm64") or arch.startswith("arm"):
        return True, None
    return False, UNKNOWN_ARCH % arch


def binding_mode(device_type):
    """A3 -> global_slice; A2, 310P, A5 and anything else -> topo_affinity."""
    return DEVICE_BINDING_MODE.get(device_type, TOPO_AFFINITY_MODE)


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
        raise PlanError("ASCEND_RT_VISIBLE_DEVICES=%r is not a comma-separated list of integers "
                        "(vllm-ascend fails with ValueError)" % (env_value,))


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
    ``numa_to_cpu`` (a defaultdict, as in the reference) has its keys in first-seen order.
    When every node's CPUs are a cpuset.CpuSeq, ``cpu_node`` is a nodemap.NodeMap and the
    ``numa_to_cpu`` values are CpuSeq (a missing node still appears as an empty one).
    ``cpu_node``: the caller's ``nodemap.node_map(node_cpus)``, when it has one.
    """
    if node_cpus and all(isinstance(c, cpuset.CpuSeq) for c in node_cpus.values()):
        if cpu_node.__class__ is not nodemap.NodeMap:
            cpu_node = nodemap.NodeMap(node_cpus)
        numa_to_cpu = defaultdict(cpuset.CpuSeq)
        numa_to_cpu.update(cpu_node.node_runs)
        if not numa_to_cpu:
            raise PlanError(NO_NUMA_NODE)
        return cpu_node, numa_to_cpu
    cpu_node = {}
    for node, cpus in node_cpus.items():
        cpu_node.update(dict.fromkeys(cpus, node))
    numa_to_cpu = defaultdict(list)
    for cpu in sorted(cpu_node):
        numa_to_cpu[cpu_node[cpu]].append(cpu)
    if not numa_to_cpu:
        raise PlanError(NO_NUMA_NODE)
    return cpu_node, numa_to_cpu


def _nodes_of(cpu_node, cpus, npu):
    """The set of NUMA nodes of ``cpus`` (the reference's ``{cpu_node[c] for c in ...}``)."""
    if isinstance(cpu_node, nodemap.NodeMap):
        if cpus.__class__ is cpuset.CpuSeq and len(cpus.runs) == 1:
            # the usual base: one run inside one node
            node = cpu_node.run_node(cpus.runs[0][0], cpus.runs[0][1])
            if node is not None:
                return set([node])
        missing = cpu_node.first_missing(cpus)
        if missing is not None:
            raise PlanError("CPU %s is on no NUMA node in lscpu's output (vllm-ascend fails with "
                            "KeyError)" % missing, npu)
        return cpu_node.nodes(cpus)
    try:
        return set(map(cpu_node.__getitem__, cpus))
    except KeyError as err:
        raise PlanError("CPU %s is on no NUMA node in lscpu's output (vllm-ascend fails with "
                        "KeyError)" % err.args[0], npu)


def global_slice(running, allowed_cpus, total_logic_npus, npu_affinity, min_per_npu=5,
                 log=None, rank=0, env_value=None):
    """Global slicing by logic id: remainder to the lowest ids, minimum checked on the base."""
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
        log.append(GLOBAL_SLICE_LOG % (rank, env_value, list(running), total, total_cpus, base,
                                       extra, allowed[:16], allowed[-16:]))
    if base < min_per_npu:
        raise PlanError(INSUFFICIENT_SLICE % (total_cpus, total, base, min_per_npu,
                                              total * min_per_npu), cpu_shortage=True)
    cut = allowed.part if allowed.__class__ is cpuset.CpuSeq else (lambda a, b: allowed[a:b])
    # one run of allowed CPUs (the usual host): each slice is plain arithmetic
    first = allowed.runs[0][0] if allowed.__class__ is cpuset.CpuSeq and \
        len(allowed.runs) == 1 else None
    seq = cpuset.CpuSeq
    for npu in running:
        if npu < 0 or npu >= total:
            raise PlanError(INVALID_NPU_ID % (npu, total))
        start = npu * base + (npu if npu < extra else extra)
        # (within the allowed CPUs: npu < total, and total * base + extra is their count)
        stop = start + base + (1 if npu < extra else 0)
        if first is not None and 0 < stop - start < total_cpus:
            pools[npu] = seq(((first + start, first + stop - 1),))
        else:
            pools[npu] = cut(start, stop)
    return pools


def extend_numa(cpu_list, cpu_node, numa_to_cpu, allowed_cpus, npu=None):
    """Next-NUMA extension, wrap-around and ``len(defaultdict)`` modulus included.

    A single-node list gets every allowed CPU of node ``(node + 1) % len(numa_to_cpu)``; the
    lookup of a missing node adds it to ``numa_to_cpu`` (the phantom node), so the modulus
    grows for later calls. A multi-node list comes back unchanged (unsorted).
    """
    if cpu_list.__class__ is cpuset.CpuSeq and len(cpu_list.runs) == 1 and \
            cpu_node.__class__ is nodemap.NodeMap and allowed_cpus.__class__ is cpuset.CpuSeq:
        # the usual base: one run inside one node (the steps below, without their dispatch)
        node = cpu_node.run_node(cpu_list.runs[0][0], cpu_list.runs[0][1])
        if node is not None:
            next_node = (node + 1) % len(numa_to_cpu)
            return cpuset.sorted_unique(cpuset.concat(
                cpu_list, cpuset.keep(numa_to_cpu[next_node], allowed_cpus.sorted_unique())))
    if not cpu_list:
        return []
    nodes = _nodes_of(cpu_node, cpu_list, npu)
    if len(nodes) != 1:
        return cpu_list
    node = list(nodes)[0]
    next_node = (node + 1) % len(numa_to_cpu)
    allowed = cpuset.as_set(allowed_cpus)
    extended = cpuset.concat(cpu_list, cpuset.keep(numa_to_cpu[next_node], allowed))
    return cpuset.sorted_unique(extended)


def average_distribute(pools, npu_list):
    """Cut the sorted pool of ``npu_list[0]`` into equal chunks; the last NPU takes the rest."""
    cpus = cpuset.sorted_all(pools[npu_list[0]])
    total, count = len(cpus), len(npu_list)
    per_npu = total // count
    result = {}
    cut = cpus.part if cpus.__class__ is cpuset.CpuSeq else (lambda a, b: cpus[a:b])
    for i, npu in enumerate(npu_list):
        end = (i + 1) * per_npu if i < count - 1 else total
        result[npu] = cut(i * per_npu, end)
    return result


def candidate_npus(all_logic_npus, running, npu_affinity, allowed_set):
    """Running NPUs plus hidden NPUs whose topo affinity overlaps the allowed CPUs."""
    running_set = set(running)
    return [npu for npu in all_logic_npus
            if npu in running_set or cpuset.overlaps(npu_affinity.get(npu, []), allowed_set)]


def topo_affinity(running, all_logic_npus, npu_affinity, allowed_cpus, cpu_node, numa_to_cpu,
                  extend=extend_numa):
    """Affinity pools: base = affinity on allowed CPUs, next-NUMA extension, grouping.

    ``numa_to_cpu`` is mutated exactly as the reference mutates its defaultdict. ``extend``
    is replaceable so that upstream's tests, which mock the extension, port as they are.
    """
    allowed_set = cpuset.as_set(allowed_cpus)
    pools = {}
    # NPUs of one node share their affinity: its pool is made once while numa_to_cpu keeps its
    # size (a phantom node, added by a lookup, changes the modulus and so the key)
    extended = {} if extend is extend_numa else None
    for npu in candidate_npus(all_logic_npus, running, npu_affinity, allowed_set):
        affinity = npu_affinity.get(npu, [])
        if extended is not None and affinity.__class__ is cpuset.CpuSeq:
            key = (affinity.runs, len(numa_to_cpu))
            pool = extended.get(key)
            if pool is not None:
                pools[npu] = pool
                continue
        else:
            key = None
        base = cpuset.keep(affinity, allowed_set)
        if not base:
            raise PlanError(CONFLICT, npu)
        pools[npu] = extend(base, cpu_node, numa_to_cpu, allowed_set, npu)
        if key is not None:
            extended[key] = pools[npu]
    groups = {}
    for npu, cpus in pools.items():
        key = cpus.runs if cpus.__class__ is cpuset.CpuSeq else cpuset.seq_key(cpus)
        groups.setdefault(key, []).append(npu)
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


def uvb_pool(numa_to_cpu, allowed_cpus):
    """Ascend 950 UVB poll-thread pool: NUMA0's allowed CPUs minus CPU 0 (lscpu order)."""
    allowed_set = set(allowed_cpus)
    return [c for c in numa_to_cpu.get(0, []) if c in allowed_set and c != 0]


def ascend950(running, all_logic_npus, npu_affinity, allowed_cpus, cpu_node, numa_to_cpu,
              threads_per_core, uvb_cpus):
    """Ascend 950 clusters. Returns ``(pools, warning)``; pools None means the worker skips."""
    if not npu_affinity:
        return None, A950_NO_AFFINITY
    size = cpu_roles.cluster_size(threads_per_core)
    if size is None:
        return None, A950_BAD_TPC % (threads_per_core,)
    allowed_set = set(allowed_cpus)
    uvb_set = set(uvb_cpus)
    numa_to_npus = {}
    for npu in candidate_npus(all_logic_npus, running, npu_affinity, allowed_set):
        base = [c for c in npu_affinity.get(npu, []) if c in allowed_set]
        nodes = _nodes_of(cpu_node, base, npu)
        if len(nodes) != 1:
            return None, A950_INVALID_AFFINITY % (npu, base)
        numa_to_npus.setdefault(nodes.pop(), []).append(npu)
    final = {}
    for node, npu_list in numa_to_npus.items():
        cpus = [c for c in sorted(numa_to_cpu.get(node, []))
                if c in allowed_set and c not in uvb_set]
        clusters = [cpus[i:i + size] for i in range(0, len(cpus) - len(cpus) % size, size)]
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


def allocate(pools, device_type):
    """Role split for every kept NPU (the minimum is checked on each, as the reference does)."""
    roles = {}
    if device_type in NO_IRQ_BINDING_DEVICE_TYPES:
        for npu, pool in pools.items():
            roles[npu] = cpu_roles.cluster_roles(pool)
        return roles
    for npu, pool in pools.items():
        roles[npu] = cpu_roles.split_roles(pool, True, npu)
    return roles


def plan_line(npu, roles, device_type):
    """The per-NPU plan log line, formats as the reference (``release=[[N]]`` included)."""
    main = cpuset.join_ids(roles["main"])
    if device_type in NO_IRQ_BINDING_DEVICE_TYPES:
        return "Ascend 950 NPU%s: worker=[%s]" % (npu, main)
    acl = " ".join(map(str, roles["acl"]))
    rel = str(roles["release"]) if roles["release"] else ""
    return "NPU%s: main=[%s]  acl=[%s]  release=[%s]" % (npu, main, acl, rel)


def pool_plan_line(npu, pool, device_type):
    """``plan_line(npu, allocate({npu: pool}, device_type)[npu], device_type)``
    (``plan_lines`` of one NPU)."""
    return plan_lines([npu], {npu: pool}, device_type)[0]


def plan_lines(npus, pools, device_type):
    """``[pool_plan_line(npu, pools[npu], device_type) for npu in npus]``.

    A CpuSeq pool (already checked by ``allocate``'s minimum) is formatted from its runs
    without building the role lists (ids below 2048: their text is looked up): this runs once
    per rank of every plan.
    """
    lines = []
    append = lines.append
    general = device_type in NO_IRQ_BINDING_DEVICE_TYPES
    for npu in npus:
        pool = pools[npu]
        if general or pool.__class__ is not cpuset.CpuSeq:
            append(plan_line(npu, allocate({npu: pool}, device_type)[npu], device_type))
            continue
        runs = pool.runs
        if len(runs) == 1:
            first, last = runs[0]
            main = " ".join(_TEXT[first + 2:last - 1]) if 0 <= first and last < _SMALL else \
                cpuset.join_run(first + 2, last - 2)
            acl, release = last - 1, last
        elif runs[0][1] - runs[0][0] >= 2 and runs[-1][1] - runs[-1][0] >= 2:
            # pool[2:-2] cuts only the ends of the first and the last run
            acl, release = runs[-1][1] - 1, runs[-1][1]
            main = cpuset.join_runs(((runs[0][0] + 2, runs[0][1]),) + runs[1:-1] +
                                    ((runs[-1][0], acl - 1),))
        else:
            main = cpuset.join_ids(pool[2:-2])
            acl, release = pool.last_two()
        # acl is printed as its ids, release as the repr of its one-CPU list
        if 0 <= acl < _SMALL and 0 <= release < _SMALL and npu.__class__ is int and \
                0 <= npu < _SMALL:
            append("".join(("NPU", _TEXT[npu], ": main=[", main, "]  acl=[", _TEXT[acl],
                            "]  release=[[", _TEXT[release], "]]")))
        else:
            append("NPU%s: main=[%s]  acl=[%d]  release=[[%d]]" % (npu, main, acl, release))
    return lines


_TEXT = cpuset.DECIMAL
_SMALL = len(_TEXT)  # ids with a text in _TEXT


def check_pools(pools, device_type):
    """``allocate``'s checks without the role lists: every pool's minimum, in pool order."""
    if device_type not in NO_IRQ_BINDING_DEVICE_TYPES:
        cpu_roles.check_pool_sizes(pools)


def plan_vllm_ascend(arch, device_type, allowed_cpus, node_cpus, all_logic_npus, running,
                     npu_affinity, threads_per_core=None, env_value=None, cpu_node=None):
    """What vllm-ascend's binding computes for the workers of ``running`` (logic ids).

    Returns a dict: skipped, reason, mode, pools {npu: positional list}, cluster_roles (True:
    Ascend 950 clusters, ``cpu_roles.cluster_roles``; False: every pool has been checked for
    ``cpu_roles.split_roles``), uvb, log, warnings. The log holds, per rank, the lines that
    worker would print. ``cpu_node``: the caller's ``nodemap.node_map(node_cpus)``, if any.
    """
    out = {"skipped": False, "reason": None, "mode": None, "pools": {},
           "cluster_roles": device_type in NO_IRQ_BINDING_DEVICE_TYPES,
           "uvb": None, "log": [], "warnings": []}
    is_arm, warning = arm_check(arch)
    if not is_arm:
        out["skipped"] = True
        out["reason"] = warning or NON_ARM_SKIP
        if warning:
            out["warnings"].append(warning)
        out["log"].append(out["reason"])
        return out
    cpu_node, numa_to_cpu = build_cpu_node_map(node_cpus, cpu_node)
    mode = binding_mode(device_type)
    is_950 = device_type == "A5"
    out["mode"] = ASCEND950_MODE if is_950 else mode
    log = out["log"]
    head = [MODE_LOG % (mode, 0, list(running))]
    if is_950:
        out["uvb"] = uvb_pool(numa_to_cpu, allowed_cpus)
        if not out["uvb"]:
            head.append(A950_NO_UVB)
        pools, warning = ascend950(running, all_logic_npus, npu_affinity, allowed_cpus, cpu_node,
                                   numa_to_cpu, threads_per_core, out["uvb"])
        if pools is None:
            out["skipped"] = True
            out["reason"] = warning
            out["warnings"].append(warning)
            log.extend(head)
            log.append(warning)
            return out
    elif mode == GLOBAL_SLICE_MODE or not npu_affinity:
        if mode != GLOBAL_SLICE_MODE:
            out["mode"] = GLOBAL_SLICE_MODE
            out["warnings"].append(TOPO_FALLBACK)
            head.append(TOPO_FALLBACK)
        slice_log = []
        pools = global_slice(running, allowed_cpus, len(all_logic_npus), npu_affinity,
                             cpu_roles.MIN_CPUS_PER_NPU, slice_log, 0, env_value)
        head.extend(slice_log)
    else:
        pools = topo_affinity(running, all_logic_npus, npu_affinity, allowed_cpus, cpu_node,
                              numa_to_cpu)
    if not pools:
        # global_slice built nothing (empty cpuset): the reference then fails printing the plan.
        raise PlanError("no allowed CPUs: vllm-ascend builds no pool and fails with KeyError "
                        "when it prints the plan", cpu_shortage=True)
    check_pools(pools, device_type)
    out["pools"] = pools
    templates = _rank_templates(head)
    append = log.append
    for rank, line in enumerate(plan_lines(running, pools, device_type)):
        rank_text = _TEXT[rank] if rank < _SMALL else str(rank)
        for before, after in templates:
            append(before if after is None else before + rank_text + after)
        append(PLAN_HEADER)
        append(line)
    return out


def _rank_templates(head):
    """The head lines as ``(before, after)``: rank r prints ``before + str(r) + after``.

    Only the mode and slice lines carry a rank (rank 0 in ``head``); the others come back as
    ``(line, None)`` and every rank prints them unchanged.
    """
    templates = []
    for line in head:
        cut = -1
        if line.startswith("[cpu_bind_mode] "):
            found = line.find(" rank=0 ")
            if found >= 0:
                cut = found + len(" rank=")
        elif line.startswith("[cpu_global_slice] rank:0 "):
            cut = len("[cpu_global_slice] rank:")
        if cut < 0:
            templates.append((line, None))
        else:
            # the "0" at ``cut`` is the rank
            templates.append((line[:cut], line[cut + 1:]))
    return templates
