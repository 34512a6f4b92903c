# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The strict allocator: NUMA-local, disjoint pools for every NPU of a host (docs/policies.md).

The plan is made over every NPU of the host and the caller keeps the ones it needs, so two
independent services never collide. The allocation works on "units": single CPUs, or for
Ascend 950 whole clusters aligned to the NUMA node's own cluster boundaries.

1. Home node of each NPU: the node holding most of its topo affinity (when one node holds a
   strict majority), else the NUMA node of its PCI device, else none.
2. A home node is shared out among the NPUs that call it home (equal shares in whole SMT
   cores, the remainder to the lowest logic ids). A node without room for all of them borrows
   the missing units from nodes no NPU calls home, nearest first (``rules.Nearness``: same
   package first, then the NUMA distance table, then the id), or the plan fails naming the
   NPU. The NPU's memory (``numa_nodes``) stays on its home node.
3. NPUs without a home (A3, no topo) slice the remaining unowned nodes by logic id, keeping
   each slice inside a node where the counts allow; when there is no room there they join the
   owned node with the most spare units.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import nodemap
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import smt
from ansible_collections.npuops.fleet.plugins.module_utils.model.rules import Nearness
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types

NO_NODE = -1  # pseudo node when the host reports no NUMA layout


def npu_home(affinity, pci_node, cpu_node, node_ids):
    """``(node, source)``: source is "affinity", "numa_node" or None (no locality known)."""
    if affinity:
        counts = cpu_node.counts(affinity)
        if counts:
            # the node with most of it, the lowest id among equals (the usual: one node)
            best = next(iter(counts)) if len(counts) == 1 else min(counts, key=lambda n: (-counts[n], n))
            # an affinity spread over several nodes (A3 prints the whole host) says nothing
            if counts[best] * 2 > len(affinity) and best in node_ids:
                return best, "affinity"
    if pci_node is not None and pci_node in node_ids:
        return pci_node, "numa_node"
    return None, None


def cluster_units(cpus, allowed_set, size):
    """Clusters of ``size`` CPUs cut from the node's own first CPU; only wholly allowed ones."""
    units = []
    for i in range(0, len(cpus) - size + 1, size):
        chunk = cpus[i : i + size]
        if all(c in allowed_set for c in chunk):
            units.append(chunk)
    return units


def _proportional(sizes, count):
    """Largest-remainder apportionment of ``count`` NPUs over nodes of the given sizes."""
    total = sum(sizes)
    counts = [count * s // total for s in sizes]
    if sum(counts) == count:
        return counts  # no remainder to hand out (nodes of one size)
    order = sorted(range(len(sizes)), key=lambda i: (-(count * sizes[i] % total), i))
    for i in order[: count - sum(counts)]:
        counts[i] += 1
    return counts


def _what(min_units, cluster):
    if cluster:
        return "CPU clusters of %d CPUs" % cluster
    return "allowed CPUs (at least %d per NPU)" % min_units


def allocate_units(npus, homes, node_units, min_units, cluster=None, claimed=(), nearness=None, cores=None):
    """Units per NPU: ``{npu: [unit, ...]}`` (own node's units first, then borrowed ones).

    ``homes`` maps npu -> home node or None; ``node_units`` maps node -> ordered units;
    ``claimed`` are nodes that NPUs left out of this plan call home (never borrowed from);
    ``nearness``: the donor order (``rules.Nearness``; default nearest id); ``cores``: SMT
    cores of CPU units in core order (shares and borrowing in whole cores).
    Raises PlanError naming the NPU when a node lacks room and nothing can be borrowed.
    """
    if nearness is None:
        nearness = Nearness()
    owners = {}
    homeless = []
    for npu in npus:
        node = homes.get(npu)
        if node is None or node not in node_units:
            homeless.append(npu)
        else:
            owners.setdefault(node, []).append(npu)
    # units are CpuSeq, never changed in place (cut by slicing, grown by "+"),
    # so the dicts below share them with node_units instead of copying them
    free = {n: u for n, u in node_units.items() if n not in owners and n not in claimed}
    free_ids = sorted(free)
    pools_of = {n: node_units[n] for n in owners}
    warnings = []
    for node in sorted(owners):
        need = min_units * len(owners[node]) - len(pools_of[node])
        if need <= 0:
            continue
        spare = sum(len(free[m]) for m in free_ids)
        if spare < need:
            raise PlanError(
                "NUMA node %s has %d %s for %d NPU(s) %s that need %d each (%d in all), and "
                "nodes no NPU calls home have only %d spare"
                % (
                    node,
                    len(node_units[node]),
                    _what(min_units, cluster),
                    len(owners[node]),
                    owners[node],
                    min_units,
                    min_units * len(owners[node]),
                    spare,
                ),
                owners[node][0],
                cpu_shortage=True,
            )
        for donor in sorted(free_ids, key=lambda m: nearness.key(node, m)):
            take = free[donor][: need if not cores else _whole(free[donor], need, cores)]
            free[donor] = free[donor][len(take) :]
            pools_of[node] = pools_of[node] + take
            need -= len(take)
            if take:
                warnings.append(
                    "NUMA node %s lacks room for NPU(s) %s: borrowed %d unit(s) from "
                    "node %s" % (node, owners[node], len(take), donor)
                )
            if need <= 0:
                break
    shares = {}
    if homeless:
        shares.update(_place_homeless(homeless, free, free_ids, owners, pools_of, min_units, cluster, warnings, cores))
    for node in sorted(owners):
        shares.update(smt.split(pools_of[node], sorted(owners[node]), cores))
    return shares, warnings


def _whole(units, need, cores):
    """The count of the first CPUs of ``units`` that covers ``need`` in whole cores."""
    count = 0
    for group in smt.groups(units, cores):
        if count >= need:
            break
        count += len(group)
    return count


def _place_homeless(homeless, free, free_ids, owners, pools_of, min_units, cluster, warnings, cores=None):
    nodes, sizes = [], []
    for node in free_ids:
        size = len(free[node])
        if size:
            nodes.append(node)
            sizes.append(size)
    total = sum(sizes)
    count = len(homeless)
    if total >= min_units * count:
        counts = _proportional(sizes, count)
        shares = {}
        if all(c == 0 or s // c >= min_units for s, c in zip(sizes, counts)):
            start = 0
            for node, node_count in zip(nodes, counts):
                if node_count:
                    shares.update(smt.split(free[node], homeless[start : start + node_count], cores))
                start += node_count
            return shares
        # node sizes too uneven for node-local slices: one global slice by logic id
        flat = free[nodes[0]][:0]
        for node in nodes:
            flat = flat + free[node]
        warnings.append("NPU(s) %s without NUMA locality sliced across NUMA nodes" % (homeless,))
        return smt.split(flat, homeless, cores)
    for npu in homeless:
        room = [n for n in sorted(owners) if len(pools_of[n]) >= min_units * (len(owners[n]) + 1)]
        if not room:
            raise PlanError(
                "no NUMA locality (no topo affinity, no PCI numa_node) and no NUMA node has room: "
                "nodes without NPUs have %d spare %s, need %d" % (total, _what(min_units, cluster), min_units),
                npu,
                cpu_shortage=True,
            )
        best = min(room, key=lambda n: (-len(pools_of[n]) / (len(owners[n]) + 1), n))
        owners[best].append(npu)
        warnings.append("NPU %s has no NUMA locality: placed on NUMA node %s" % (npu, best))
    return {}


def uvb_reserve(node_units, homes, npus):
    """Ascend 950 UVB poll-thread set: one whole cluster that starves no NPU.

    The last cluster of the lowest NUMA node when that node keeps at least one cluster per NPU
    calling it home; else the first cluster of the lowest node no NPU calls home; else none.
    Returns ``(node, cluster)`` or ``(None, None)``.
    """
    if not node_units:
        return None, None
    homed = {}
    for npu in npus:
        if homes.get(npu) is not None:
            homed[homes[npu]] = homed.get(homes[npu], 0) + 1
    first = min(node_units)
    if len(node_units[first]) > homed.get(first, 0):
        return first, node_units[first][-1]
    for node in sorted(node_units):
        if node not in homed and node_units[node]:
            return node, node_units[node][0]
    return None, None


def _in_scope(npus, homes, node_units):
    """NPUs to plan over, and the nodes that NPUs left out call home.

    An NPU whose home node has no allowed unit belongs to another cpuset: it is left out
    (whatever was requested, so that every cpuset sharer computes the same plan).
    """
    active, claimed = [], set()
    for npu in npus:
        node = homes.get(npu)
        if node is None or node_units.get(node):
            active.append(npu)
        else:
            claimed.add(node)
    return active, claimed


def plan_strict(
    npus,
    affinity,
    pci_nodes,
    node_cpus,
    allowed_set,
    device_type=None,
    threads_per_core=None,
    requested=None,
    cpu_node=None,
    nearness=None,
    cores=None,
):
    """Strict pools for every NPU in ``npus`` (all logic ids of the host).

    NPUs whose home node has no allowed CPU (another cpuset serves them) are left out, but
    their node stays theirs: nobody borrows from it. A ``requested`` NPU left out fails.

    ``affinity``: npu -> CPU list (topo), ``pci_nodes``: npu -> node or None, ``node_cpus``:
    node -> sorted CPU ids of the whole node (empty nodes dropped), ``allowed_set``: CPUs the
    plan may use (reserved ones already removed). Returns mode, pools (positional lists),
    cluster_roles (True: Ascend 950, ``cpu_roles.cluster_roles``; False: every pool has been
    checked for ``cpu_roles.split_roles``), homes {npu: [node, source]}, uvb (list or None),
    warnings. CPU lists are cpuset.CpuSeq or sequences of ids; the pools come back as CpuSeq.
    ``cpu_node``: the NodeMap of ``node_cpus`` when the caller
    has one (saves building it twice). ``nearness``: ``rules.Nearness`` (borrowing order);
    ``cores``: ``rules.smt_cores`` (pools in whole cores, IRQ CPUs on one core, ACL and release
    on two).
    """
    warnings = []
    allowed_set = cpuset.sorted_unique(allowed_set)
    given = node_cpus
    node_cpus = {n: c for n, c in node_cpus.items() if c}
    if not node_cpus:
        node_cpus = {NO_NODE: allowed_set}
        warnings.append("no NUMA layout known: every NPU sliced by logic id over the allowed CPUs")
    if cpu_node is None or len(node_cpus) != len(given):
        cpu_node = nodemap.NodeMap(node_cpus)
    node_ids = set(node_cpus)
    homes = {}
    sources = {}
    for npu in npus:
        homes[npu], sources[npu] = npu_home(affinity.get(npu), pci_nodes.get(npu), cpu_node, node_ids)
    kind = device_types.row(device_type)
    is_950 = kind.roles == device_types.CLUSTER
    uvb = None
    if is_950:
        size = cpu_roles.cluster_size(threads_per_core, kind.cluster_cores)
        if size is None:
            raise PlanError(
                "%s needs Thread(s) per core 1 or 2 to size CPU clusters, got %r" % (kind.label, threads_per_core)
            )
        node_units = dict((n, cluster_units(c, allowed_set, size)) for n, c in node_cpus.items())
        uvb_node, uvb = uvb_reserve(node_units, homes, npus)
        if uvb is None:
            warnings.append("no whole CPU cluster left for the UVB poll threads; they stay unbound")
        else:
            node_units[uvb_node] = [u for u in node_units[uvb_node] if u is not uvb]
        active, claimed = _in_scope(npus, homes, node_units)
        shares, more = allocate_units(active, homes, node_units, 1, size, claimed, nearness)
        pools = dict(
            (npu, cpuset.CpuSeq.from_cpus([c for unit in units for c in unit])) for npu, units in shares.items()
        )
        mode = "ascend950"
    else:
        node_units = {n: cpuset.keep(cpus, allowed_set) for n, cpus in node_cpus.items()}
        if cores:
            node_units = dict((n, smt.core_order(u, cores)) for n, u in node_units.items())
        active, claimed = _in_scope(npus, homes, node_units)
        pools, more = allocate_units(
            active, homes, node_units, cpu_roles.MIN_CPUS_PER_NPU, None, claimed, nearness, cores
        )
        cpu_roles.check_pool_sizes(pools)
        if cores:
            pools = dict((npu, smt.spread_roles(pool, cores)) for npu, pool in pools.items())
        mode = "topo_affinity" if any(h is not None for h in homes.values()) else "global_slice"
    warnings.extend(more)
    left_out = [npu for npu in npus if npu not in pools]
    if left_out:
        warnings.append("NPU(s) %s left out: their NUMA node has no allowed CPU" % (left_out,))
    for npu in requested or ():
        if npu not in pools:
            node = homes[npu]
            raise PlanError(
                "its NUMA node %s (from %s) has no allowed CPUs; plan it where its "
                "node's CPUs are allowed, or give it allowed_cpus on that node" % (node, sources[npu]),
                npu,
                cpu_shortage=True,
            )
    return {
        "mode": mode,
        "pools": pools,
        "planned_over": active,
        "cluster_roles": is_950,
        "uvb": uvb,
        "warnings": warnings,
        "homes": {npu: [homes[npu], sources[npu]] for npu in npus},
    }
