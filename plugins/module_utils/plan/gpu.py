# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU hosts (mode ``gpu_numa``): a NUMA-local CPU pool per GPU, its RDMA NIC, launch env.

- Pools come from the GPU's NUMA node (``numa_node`` from sysfs or the matrix's NUMA
  Affinity), intersected with the allowed CPUs, shared out evenly and disjointly among that
  node's GPUs in whole cores. The matrix's CPU Affinity column is only a last-resort hint:
  it is cut to the cpuset of whoever ran nvidia-smi.
- numa=off hosts: no NUMA pinning; each GPU gets an even, disjoint slice of the allowed CPUs.
- Pairing: global minimum-cost assignment over the matrix cells (assignment.pair), NICs
  ranked by PCI address (else name) so identical hosts put GPU k on the same rail. NICs whose
  port is known not to be ACTIVE are left out; at equal link cost the faster port wins.

Pure functions, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist, cpuset, smt
from ansible_collections.npuops.fleet.plugins.module_utils.errors import GpuPlanError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules, vendors
from ansible_collections.npuops.fleet.plugins.module_utils.plan import assignment

# Links at most this costly keep GPUDirect RDMA (NCCL's default GDR level is PXB).
GDR_MAX_COST = assignment.LINK_COSTS["PXB"]
_GPU_NAME = re.compile(r"^GPU\d+\Z")


def _cpus(value, source):
    """``cpuset.parse_option`` as a set (None stays None), failing as a GPU plan error."""
    try:
        cpus = cpuset.parse_option(value, source)
    except ParseError as err:
        raise GpuPlanError(str(err))
    return None if cpus is None else set(cpus)


def _core_groups(cpus, threads_per_core, cores=None):
    """Sorted CPUs -> groups of SMT siblings: from ``cores`` (the facts' ``cpu.smt_siblings``)
    when known; else, for facts without them, when the list is ``threads`` equal runs, each at
    one constant offset from the first (the usual "0-55,112-167" numbering); otherwise one
    CPU per group."""
    cpus = sorted(cpus)
    if cores:
        return smt.groups(cpus, cores)
    threads = threads_per_core if isinstance(threads_per_core, int) else 1
    if threads > 1 and cpus and len(cpus) % threads == 0:
        size = len(cpus) // threads
        parts = [cpus[k * size : (k + 1) * size] for k in range(threads)]
        regular = True
        for part in parts[1:]:
            offsets = set(b - a for a, b in zip(parts[0], part))
            regular = regular and len(offsets) == 1 and offsets.pop() > 0
        if regular:
            return [list(group) for group in zip(*parts)]
    return [[cpu] for cpu in cpus]


def _share(cpus, owners, threads_per_core, cores=None):
    """Split ``cpus`` evenly and disjointly among ``owners`` (in order), whole cores first;
    the first owners get one core more when it does not divide. {owner: set}."""
    groups = _core_groups(cpus, threads_per_core, cores)
    if len(groups) < len(owners) and len(cpus) >= len(owners):
        groups = [[cpu] for cpu in sorted(cpus)]  # fewer cores than owners: split siblings
    result = {}
    start = 0
    for num, owner in enumerate(owners):
        count = len(groups) // len(owners) + (1 if num < len(groups) % len(owners) else 0)
        result[owner] = set(cpu for group in groups[start : start + count] for cpu in group)
        start += count
    return result


def _select_nics(candidates, nics):
    """Apply the ``nics`` option (list of names or a regex string) to candidate names."""
    if nics is None:
        return list(candidates)
    if isinstance(nics, str):
        try:
            pattern = re.compile(nics)
        except re.error as err:
            raise GpuPlanError("nics: %r is not a valid regular expression: %s" % (nics, err))
        chosen = [name for name in candidates if pattern.fullmatch(name)]
        if candidates and not chosen:
            raise GpuPlanError("nics: no RDMA device matches %r (this host has %s)" % (nics, ", ".join(candidates)))
        return chosen
    if not isinstance(nics, (list, tuple)) or not all(isinstance(n, str) for n in nics):
        raise GpuPlanError("nics: must be a list of RDMA device names or a regex string")
    missing = [name for name in nics if name not in candidates]
    if missing:
        raise GpuPlanError(
            "nics: %s not found on this host (it has %s)"
            % (", ".join(missing), ", ".join(candidates) or "no RDMA devices")
        )
    return [name for name in candidates if name in nics]


def _gpu_list(topology):
    gpus = topology.get("gpus")
    if not isinstance(gpus, list) or not gpus:
        tool = (vendors.get(topology.get("vendor")) or vendors.VENDORS["nvidia"]).tool
        raise GpuPlanError("the topology lists no GPUs (%s missing or unreadable?)" % tool)
    seen = {}
    for num, gpu in enumerate(gpus):
        if not isinstance(gpu, dict) or isinstance(gpu.get("index"), bool) or not isinstance(gpu.get("index"), int):
            raise GpuPlanError("topology gpus[%d]: needs an integer 'index'" % num)
        if gpu["index"] in seen:
            raise GpuPlanError("listed twice in the topology", gpu["index"])
        seen[gpu["index"]] = gpu
    return [seen[index] for index in sorted(seen)]


def _nic_numa(nic_entries, gpus, links):
    """NIC name -> NUMA node: sysfs when known, else that of a GPU it is PIX/PXB to."""
    result = {}
    for name, entry in nic_entries.items():
        node = entry.get("numa_node")
        if isinstance(node, int) and not isinstance(node, bool) and node >= 0:
            result[name] = node
            continue
        for gpu in gpus:
            cell = links.get(gpu["index"], {}).get(name)
            if assignment.link_cost(cell) <= GDR_MAX_COST and isinstance(gpu.get("_node"), int):
                result[name] = gpu["_node"]
                break
    return result


def plan_gpus(topology, nics=None, allowed=None, reserved=None):
    """Per-GPU ``{pool, numa_node, nic, link, bus_id, nic_bus_id}`` + node-wide env.

    ``topology``: facts (``cpu.allowed``, ``cpu.numa_nodes``, ``cpu.threads_per_core``,
    ``gpus[]`` with index/bus_id/numa_node/affinity/links, ``nics[]`` with name/bus_id/
    numa_node; optional ``numa_off: true``). ``nics``: restrict pairing to these RDMA names
    (list) or names fully matching a regex (string). ``allowed``/``reserved``: cpulists
    overriding ``cpu.allowed`` / kept out of every pool.

    Returns ``{"gpus": {"0": {...}}, "env": {"NCCL_IB_HCA": "=mlx5_0,mlx5_3"},
    "warnings": [...]}``. Raises PlanError naming the GPU when a pool cannot be made.
    """
    if not isinstance(topology, dict):
        raise GpuPlanError("topology must be a dict (the npu_topology facts)")
    warnings = []
    gpus = [dict(gpu) for gpu in _gpu_list(topology)]
    cpu = topology.get("cpu") or {}
    node_cpus = dict((node, set(cpus)) for node, cpus in rules.node_cpus(topology).items())
    allowed_set = _cpus(allowed if allowed is not None else cpu.get("allowed"), "allowed CPUs")
    if allowed_set is None:
        allowed_set = set().union(*node_cpus.values()) if node_cpus else None
    if not allowed_set:
        raise GpuPlanError(
            "no allowed CPUs: the topology has neither cpu.allowed nor NUMA node CPU lists", cpu_shortage=True
        )
    allowed_set -= _cpus(reserved, "reserved CPUs") or set()
    if not allowed_set:
        raise GpuPlanError("every allowed CPU is reserved")
    threads = cpu.get("threads_per_core")
    cores = rules.smt_cores(topology) or None

    numa_off = bool(topology.get("numa_off")) or all(gpu.get("numa_node") is None for gpu in gpus)
    pools = {}
    if numa_off:
        warnings.append(
            "numa=off or no GPU NUMA node known: no NUMA pinning; each GPU gets an even slice of the allowed CPUs"
        )
        for gpu in gpus:
            gpu["_node"] = None
        pools = _share(allowed_set, [gpu["index"] for gpu in gpus], threads, cores)
    else:
        pools = _numa_pools(gpus, node_cpus, allowed_set, threads, warnings, cores)
    for gpu in gpus:
        if not pools.get(gpu["index"]):
            raise GpuPlanError(
                "gets no CPU: %d allowed CPUs for %d GPUs" % (len(allowed_set), len(gpus)),
                gpu["index"],
                cpu_shortage=True,
            )

    pairing, link_cells, nic_bus = _pair(topology, gpus, nics, numa_off, warnings)

    result = {}
    for gpu in gpus:
        index = gpu["index"]
        nic = pairing.get(index)
        result[str(index)] = {
            "pool": cpulist.format(pools[index]),
            "numa_node": gpu["_node"],
            "nic": nic,
            "link": link_cells.get(index, {}).get(nic) if nic else None,
            "bus_id": gpu.get("bus_id"),
            "nic_bus_id": nic_bus.get(nic) if nic else None,
        }
    used = []
    for gpu in gpus:
        nic = pairing.get(gpu["index"])
        if nic and nic not in used:
            used.append(nic)
    env = {}
    if used:
        order = _nic_order(used, nic_bus)
        # one "=" makes the whole list exact-match (else mlx5_1 also selects mlx5_10..17)
        env["NCCL_IB_HCA"] = "=" + ",".join(order)
    return {"gpus": result, "env": env, "warnings": warnings}


def _numa_pools(gpus, node_cpus, allowed_set, threads, warnings, cores=None):
    """GPU index -> set of CPUs from its NUMA node; nodes shared evenly by their GPUs."""
    for gpu in gpus:
        node = gpu.get("numa_node")
        if isinstance(node, bool) or not (isinstance(node, int) and node >= 0):
            node = None
        if node is None and gpu.get("affinity"):
            hint = _cpus(gpu["affinity"], "GPU %s affinity" % gpu["index"])
            holders = [n for n, cpus in node_cpus.items() if hint and hint <= cpus]
            if len(holders) == 1:
                node = holders[0]
                warnings.append("GPU %s: NUMA node unknown, taken as %d from its CPU Affinity" % (gpu["index"], node))
        gpu["_node"] = node
    by_node = {}
    for gpu in gpus:
        by_node.setdefault(gpu["_node"], []).append(gpu["index"])
    owned = set(node for node in by_node if node is not None)
    pools = {}
    homeless = list(by_node.get(None, []))
    for node in sorted(owned):
        members = by_node[node]
        if node not in node_cpus:
            if node_cpus:
                raise GpuPlanError(
                    "is on NUMA node %d, which the host's node list (%s) lacks"
                    % (node, ",".join(str(n) for n in sorted(node_cpus))),
                    members[0],
                )
            # no NUMA layout in the facts at all: fall back to the matrix CPU Affinity
            local = set()
            for gpu in gpus:
                if gpu["index"] in members and gpu.get("affinity"):
                    local |= _cpus(gpu["affinity"], "GPU %s affinity" % gpu["index"])
            local &= allowed_set
            warnings.append(
                "NUMA node %d: CPU list unknown; using the GPUs' CPU Affinity "
                "(may be cut to the caller's cpuset)" % node
            )
        else:
            local = node_cpus[node] & allowed_set
        if len(local) < len(members):
            if not local:
                warnings.append(
                    "NUMA node %d has no allowed CPU: GPU %s pooled off-node"
                    % (node, ",".join(str(m) for m in members))
                )
                homeless.extend(members)
                continue
            raise GpuPlanError(
                "NUMA node %d has %d allowed CPUs for %d GPUs" % (node, len(local), len(members)),
                members[len(local)],
                cpu_shortage=True,
            )
        pools.update(_share(local, members, threads, cores))
    if homeless:
        spare = set(allowed_set)
        for node in owned:
            spare -= node_cpus.get(node, set())
        homeless.sort()
        if len(spare) < len(homeless):
            raise GpuPlanError(
                "has no NUMA-local allowed CPU and only %d CPUs lie outside the GPUs' nodes" % len(spare),
                homeless[0],
                cpu_shortage=True,
            )
        warnings.append(
            "GPU %s: no usable NUMA node; pooled on CPUs of nodes without GPUs" % ",".join(str(g) for g in homeless)
        )
        pools.update(_share(spare, homeless, threads, cores))
    return pools


def _nic_order(names, nic_bus):
    """Canonical NIC order: PCI address when every NIC has one, else natural name order."""
    if names and all(nic_bus.get(name) for name in names):
        return sorted(names, key=lambda name: (nic_bus[name].lower(), rules.natural_key(name)))
    return sorted(names, key=rules.natural_key)


def _rate(nic):
    """A NIC's port rate in Gb/s, or None when unknown."""
    rate = nic.get("rate")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0:
        return None
    return rate


def _pair(topology, gpus, nics_option, numa_off, warnings):
    """{gpu index: nic name}, {gpu index: {nic: cell}}, {nic: bus id}."""
    link_cells = {}
    for gpu in gpus:
        links = gpu.get("links") or {}
        if not isinstance(links, dict):
            raise GpuPlanError("'links' must map peers to matrix cells", gpu["index"])
        link_cells[gpu["index"]] = dict((str(k), v) for k, v in links.items() if not _GPU_NAME.match(str(k)))
    nic_entries = {}
    for num, nic in enumerate(topology.get("nics") or []):
        if not isinstance(nic, dict) or not isinstance(nic.get("name"), str):
            raise GpuPlanError("topology nics[%d]: needs a 'name'" % num)
        nic_entries[nic["name"]] = nic
    if not nic_entries:  # facts without sysfs NICs: the matrix columns still name them
        for cells in link_cells.values():
            for name in cells:
                nic_entries.setdefault(name, {"name": name})
    nic_bus = dict((name, (entry.get("bus_id") or None)) for name, entry in nic_entries.items())
    candidates = _nic_order(list(nic_entries), nic_bus)
    chosen = _select_nics(candidates, nics_option)
    if not chosen:
        if nic_entries or nics_option is not None:
            warnings.append("no RDMA NIC to pair with the GPUs")
        return {}, link_cells, nic_bus
    down = [
        name
        for name in chosen
        if isinstance(nic_entries[name].get("state"), str) and nic_entries[name]["state"] != "ACTIVE"
    ]
    if down:
        warnings.append(
            "RDMA NIC(s) %s not ACTIVE (%s): left out of the GPU pairing"
            % (", ".join(down), ", ".join(sorted(set(nic_entries[n]["state"] for n in down))))
        )
        chosen = [name for name in chosen if name not in down]
        if not chosen:
            warnings.append("no RDMA NIC to pair with the GPUs")
            return {}, link_cells, nic_bus
    nic_numa = {} if numa_off else _nic_numa(nic_entries, gpus, link_cells)
    # at equal link cost the faster port: its rate rank breaks ties below the link cost
    rates = sorted(set(r for r in (_rate(nic_entries[n]) for n in chosen) if r is not None), reverse=True)
    slower = (
        dict(
            (name, rates.index(_rate(nic_entries[name])) if _rate(nic_entries[name]) is not None else len(rates))
            for name in chosen
        )
        if len(rates) > 1
        else {}
    )
    scale = len(gpus) * (len(rates) + 1) + 1 if slower else 1
    costs = {}
    links = {}
    crossed = set()
    for gpu in gpus:
        for name in chosen:
            cost = assignment.link_cost(link_cells[gpu["index"]].get(name))
            node = gpu["_node"]
            if (
                not numa_off
                and node is not None
                and nic_numa.get(name) is not None
                and nic_numa[name] != node
                and cost < assignment.LINK_COSTS["SYS"]
            ):
                # a cross-node path the matrix printed as NODE (seen on real hosts)
                crossed.add(name)
                cost = assignment.LINK_COSTS["SYS"]
            links[(gpu["index"], name)] = cost
            costs[(gpu["index"], name)] = cost * scale + slower.get(name, 0)
    if crossed:
        warnings.append(
            "the matrix shows %s as near GPUs on another NUMA node; costed as SYS "
            "for those GPUs" % ", ".join(_nic_order(sorted(crossed), nic_bus))
        )
    pairing = assignment.pair(costs, [gpu["index"] for gpu in gpus], chosen)
    vendor = vendors.get(topology.get("vendor"))
    if vendor is not None and vendor.nic_links == "numa":
        # the tool prints no GPU<->NIC path (rocm-smi): the cells are NUMA nodes, not PCIe
        warnings.append(
            "%s reports no GPU<->NIC PCIe path: NICs paired by NUMA node; check on "
            "the host that each pair is PXB or closer for GPUDirect RDMA" % vendor.tool
        )
        return pairing, link_cells, nic_bus
    for gpu in gpus:
        nic = pairing[gpu["index"]]
        if links[(gpu["index"], nic)] > GDR_MAX_COST:
            cell = link_cells[gpu["index"]].get(nic) or "unknown"
            warnings.append(
                "GPU %s: paired NIC %s is %s, farther than PXB: NCCL will not use "
                "GPUDirect RDMA on it" % (gpu["index"], nic, cell)
            )
    return pairing, link_cells, nic_bus
