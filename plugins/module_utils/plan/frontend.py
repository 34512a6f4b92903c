# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rest of the process tree (strict and gpu_numa plans): each instance's ``frontend`` - the
CPUs of its API server, EngineCore and tokenizer processes - and the host's ``cpu_budget``.

1. Free CPUs: the allowed CPUs no worker pool (nor the 950 UVB set) holds, minus isolated /
   nohz_full CPUs (never frontend nor spare: they stay ``reserved``).
2. Free nodes are the nodes no device calls home. A free node goes to the devices nearest to
   it, nearness by ``rules.Nearness`` (same package first, then the distance table, then the
   id); a device takes, among the nodes it is nearest to, the ones nearest to it (equally near
   ones all), never a node of another package while a node of its own package has free CPUs.
   A node is shared out in whole SMT cores among the devices that take it (consecutive shares,
   the remainder one core each to the lowest ids). Sharing per device, not per instance, keeps
   independent plans of the services of one host disjoint: an instance's share depends only
   on its own devices.
3. An instance's frontend is the union of its devices' shares, nearest first, cut to
   ``frontend_cpus`` CPUs (whole cores) when that is given.
4. An instance whose devices got no share (no free CPU: A3, 16 NPUs over 640 CPUs) carves
   ``2 + number of devices`` cores (vLLM's tuning guide) from its workers' main CPUs, evenly,
   from the end of each main (next to the ACL CPU), each worker keeping at least one unit
   (a core; Ascend 950: a whole cluster).
5. ``cpu_budget``: ``workers`` (every planned pool, UVB included), ``frontend`` (instances'
   frontends and the shares of devices in no instance), ``reserved`` (``reserved_cpus`` and
   isolated CPUs no worker holds), ``spare`` (the rest: left to the OS and NIC IRQs); together
   exactly the allowed CPUs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset, smt
from ansible_collections.npuops.fleet.plugins.module_utils.cpus.cpuset import EMPTY, CpuSeq

# vLLM's tuning guide: at least 2 + N physical cores for the front end of N accelerators
FRONTEND_BASE_CORES = 2


def union(seqs):
    """The sorted set of the CPUs of several sequences."""
    runs = []
    for seq in seqs:
        runs.extend(CpuSeq.from_cpus(seq).runs)
    return cpuset.union_runs(runs)


def free_shares(devices, anchors, home_nodes, free_by_node, nearness, cores):
    """``{device: [(key, node, CpuSeq), ...]}``: each device's shares of the free nodes (step 2).

    A free node (no device calls it home) goes to the devices nearest to it (``rules.Nearness``
    from the device's home: a device of the node's own package first). A device takes, among
    the nodes it is nearest to, the ones nearest to it, and never a node of another package
    while a node of its own package has free CPUs. A node is shared out among the devices
    that take it. ``anchors``: a function device -> its home node as a list, or its pool's
    nodes when it has no home; ``home_nodes``: the nodes devices call home (never
    candidates)."""
    candidates = [n for n in sorted(free_by_node) if n not in home_nodes and free_by_node[n].size]
    if not candidates:
        return {}
    # devices of one home node (one anchors tuple) see the same keys: work per group
    groups = {}
    for dev in devices:
        nodes = tuple(anchors(dev))
        if nodes:
            groups.setdefault(nodes, []).append(dev)
    if not groups:
        return {}
    # group -> [(other package, distance) of each candidate] from its nearest anchor; the
    # first part of a key is 0 exactly when the node shares a package with an anchor
    found = []
    for nodes, members in groups.items():
        keys = nearness.keys_from(nodes[0], candidates)
        for anchor in nodes[1:]:
            keys = list(map(min, keys, nearness.keys_from(anchor, candidates)))
        found.append((keys, members))
    # the key of the groups nearest to each candidate
    nearest = list(map(min, *[keys for keys, dummy in found])) if len(found) > 1 else found[0][0]
    wants = {}  # candidate -> [(device, its key), ...]
    for keys, members in found:
        mine = [at for at, key in enumerate(keys) if key == nearest[at]]
        if not mine:
            continue
        if min(keys)[0] == 0:
            # a free node of its own package: never one of another package
            mine = [at for at in mine if keys[at][0] == 0]
            if not mine:
                continue
        best = min([keys[at] for at in mine])
        for at in mine:
            if keys[at] == best:
                wants.setdefault(candidates[at], []).extend([(dev, best) for dev in members])
    shares = {dev: [] for dev in devices}
    for node in candidates:
        wanters = wants.get(node)
        if not wanters:
            continue
        wanters.sort()
        key_of = dict(wanters)
        for dev, share in smt.split(free_by_node[node], [dev for dev, dummy in wanters], cores).items():
            if share.size:
                shares[dev].append((key_of[dev], node, share))
    return shares


def carve(mains, members, need, cores, unit=None):
    """``{device: CpuSeq}`` carved from the end of each member's main CPUs: ``need`` units in
    all (cores; ``unit`` CPUs each when given, the 950 clusters), spread evenly over the members
    (the remainder one each to the lowest ids), each member keeping at least one unit; a
    member short of units passes its part to the others. ``mains``: device -> main CPUs in
    positional order (CPUs that may not go to a frontend already removed)."""
    units = {}
    sizes = smt.core_sizes(cores)
    for dev in members:
        main = mains.get(dev) or EMPTY
        if unit:
            chunks = [main[i : i + unit] for i in range(0, len(main) - unit + 1, unit)]
        elif cores:
            # whole cores only: a core whose sibling is an IRQ, ACL or release CPU stays
            chunks = [g for g in smt.groups(main, cores) if len(g) == sizes.get(cores.get(g[0]), 1)]
        else:
            chunks = [[cpu] for cpu in main]
        units[dev] = chunks
    room = dict((dev, max(len(units[dev]) - 1, 0)) for dev in members)
    quota, got = _quotas(room, members, need)
    carved = {}
    for dev in members:
        count = quota[dev]
        if count:
            taken = units[dev][len(units[dev]) - count :]
            carved[dev] = CpuSeq.from_cpus(sorted(cpu for chunk in taken for cpu in chunk))
    return carved, got


def carved_pool(pool, main, carved):
    """``(pool, main)`` of a worker less its ``carved`` main CPUs: its IRQ, ACL and release
    CPUs keep their places (``pool[:2]`` and ``pool[-2:]``)."""
    if pool.normal:
        # (an ascending pool, each id once: removing main CPUs keeps the others in place)
        pool = cpuset.subtract(pool, carved)
    else:
        pool = pool[:2] + cpuset.subtract(pool[2:-2], carved) + pool[-2:]
    return pool, cpuset.subtract(main, carved)


def _quotas(room, members, need):
    """``(quota per member, units placed)``: ``need`` spread evenly, each member at most its
    ``room``; a full member's part goes to the others."""
    quota = dict.fromkeys(members, 0)
    left = need
    while left > 0:
        open_members = [dev for dev in members if quota[dev] < room[dev]]
        if not open_members:
            break
        share, extra = divmod(left, len(open_members))
        for index, dev in enumerate(open_members):
            give = min(share + (1 if index < extra else 0), room[dev] - quota[dev])
            quota[dev] += give
            left -= give
    return quota, need - left


def instance_frontend(members, shares, cap, cores):
    """The frontend of one instance from its devices' shares, nearest first, cut to ``cap``
    CPUs in whole cores. Returns ``(CpuSeq sorted, nodes, capped-off CpuSeq)``."""
    parts = sorted((key, node, dev, share) for dev in members for key, node, share in shares.get(dev, ()))
    if not parts:
        return EMPTY, [], EMPTY
    # the shares one after another (CpuSeq "+" of them all, joined once)
    ordered = parts[0][3] if len(parts) == 1 else CpuSeq.from_runs([run for part in parts for run in part[3].runs])
    if cap is None or cap >= len(ordered):
        # every share kept (each holds CPUs): all their nodes, nothing capped off
        return ordered.sorted_unique(), sorted({part[1] for part in parts}), EMPTY
    kept = smt.take(ordered, cap, cores) if cap > 0 else EMPTY
    kept_set = kept.sorted_unique() if len(kept) else EMPTY
    nodes = sorted(
        set(node for dummy, node, dummy, share in parts if len(kept_set) and cpuset.overlaps(share, kept_set))
    )
    return kept_set, nodes, cpuset.subtract(ordered.sorted_unique(), kept_set)


def place(devices, pools, home_of, host, instances, mains=None, cluster=None, extra=EMPTY):
    """Frontends of ``instances`` and the free shares of every device.

    ``devices``: every planned device (sorted ids); ``pools``: device -> pool CpuSeq
    (disjoint, inside the allowed CPUs); ``home_of``: device -> home node or None; ``host``:
    the ``layout.HostCpus`` of the plan (its NUMA nodes and NodeMap, the allowed CPUs with
    reserved removed, the nearness order, SMT cores, isolated / nohz_full CPUs, the
    ``frontend_cpus`` cap); ``instances``: ``[(name, [device, ...])]`` or None; ``mains``: a
    function device -> its main CPUs in positional order (the carve source; default the pool);
    ``cluster``: the 950 cluster size (carve whole clusters); ``extra``: other worker CPUs (UVB).

    Returns ``{"instances": {name: {frontend, frontend_nodes, frontend_source}},
    "carved": {device: CpuSeq}, "device_frontend": {device: CpuSeq}, "capped": CpuSeq,
    "workers": CpuSeq (before carving), "warnings": [...]}``.
    """
    cpu_node, allowed = host.cpu_node, host.allowed
    nearness, cores, isolated, cap = host.nearness, host.cores, host.isolated, host.frontend_cap
    threads_per_core = host.threads_per_core
    warnings = []
    if sum([pools[dev].size for dev in devices]) + extra.size == allowed.size:
        # the pools (disjoint, inside the allowed CPUs) hold every allowed CPU: nothing free
        workers, free = allowed, EMPTY
    else:
        workers = union([pools[dev] for dev in devices] + [extra])
        free = cpuset.subtract(allowed, workers)
    cut = EMPTY
    if isolated.size and free.size:
        cut = cpuset.keep(free, isolated)
        if len(cut):
            free = cpuset.subtract(free, isolated)
    free_by_node = {}
    if free.size:
        for node, cpus in cpu_node.split(free).items():
            free_by_node[node] = smt.core_order(cpus, cores)
    shares = {}
    if free_by_node:
        homes = {dev: home_of(dev) for dev in devices}
        home_nodes = set(h for h in homes.values() if h is not None)

        def anchors(dev):
            home = homes[dev]
            return [home] if home is not None else sorted(cpu_node.nodes(pools[dev]))

        shares = free_shares(devices, anchors, home_nodes, free_by_node, nearness, cores)
    in_instance = set()
    result = {}
    carved = {}
    capped = []
    mains = mains or (lambda dev: pools[dev])
    tpc = threads_per_core if isinstance(threads_per_core, int) and threads_per_core > 0 else 1
    for name, members in instances or ():
        members = [dev for dev in members if dev in pools]
        in_instance.update(members)
        want_cores = FRONTEND_BASE_CORES + len(members)
        frontend, nodes, rest = instance_frontend(members, shares, cap, cores)
        capped.append(rest)
        source = "free"
        if not frontend.size and (cap is None or cap > 0) and members:
            # no free CPU near these devices: carve from the workers' main CPUs
            need = want_cores if cores else want_cores * tpc
            unit = None
            if cluster:
                unit = cluster
                need = -(-want_cores * tpc // cluster)
            elif cap is not None:
                # the cap counts CPUs; with siblings known the carve counts cores
                need = min(need, cap // tpc if cores else cap)
            sources = {dev: mains(dev) for dev in members}
            if isolated.size:
                sources = {dev: cpuset.subtract(cpus, isolated) for dev, cpus in sources.items()}
            taken, got = carve(sources, members, need, cores, unit)
            carved.update(taken)
            frontend = union(taken.values())
            nodes = sorted(cpu_node.nodes(frontend)) if frontend.size else []
            source = "carved" if frontend.size else "none"
            what = "cluster(s)" if unit else ("core(s)" if cores else "CPU(s)")
            if got:
                warnings.append(
                    "instance %s: no free CPU near its devices; its frontend (%d %s: "
                    "%s) is carved from its workers' main CPUs" % (name, got, what, cpuset.format(frontend))
                )
            if got < need:
                warnings.append(
                    "instance %s: its workers' main CPUs leave room for %d of the %d "
                    "frontend %s wanted" % (name, got, need, what)
                )
        elif not frontend.size:
            source = "none"
        have = smt.count(frontend, cores) if cores else frontend.size // tpc
        if source != "none" and have < want_cores:
            warnings.append(
                "instance %s: frontend %s has %d physical core(s); vLLM's tuning guide "
                "asks for 2 + %d = %d for the API server and EngineCore"
                % (name, cpuset.format(frontend), have, len(members), want_cores)
            )
        result[name] = {"frontend": frontend, "frontend_nodes": nodes, "frontend_source": source}
    device_frontend = {}
    for dev, mine in shares.items():
        if mine and dev not in in_instance:
            device_frontend[dev] = union([share for dummy, dummy, share in mine])
    if cut.size:
        warnings.append(
            "isolated / nohz_full CPUs %s lie outside the worker pools: kept out of "
            "the frontend and spare CPUs (cpu_budget.reserved)" % cpuset.format(cut)
        )
    return {
        "instances": result,
        "carved": carved,
        "device_frontend": device_frontend,
        "capped": union(capped),
        "workers": workers,
        "warnings": warnings,
    }


def budget(allowed_all, workers, frontend, reserved, isolated, held=None):
    """``{workers, frontend, reserved, spare}`` cpulists partitioning ``allowed_all``.

    ``reserved``: the ``reserved_cpus`` option (or None); isolated CPUs that no worker or
    frontend holds join it. ``held``: ``workers | frontend`` when the caller has it (the two
    disjoint and inside ``allowed_all``: frontends carved from the workers)."""
    if workers is allowed_all and not frontend.size and not reserved and not isolated.size:
        return {"workers": cpuset.format(workers), "frontend": "", "reserved": "", "spare": ""}
    if held is None:
        workers = cpuset.keep(workers, allowed_all)
        held = workers
        if frontend.size:
            frontend = cpuset.keep(frontend, allowed_all)
            held = union([workers, frontend])
            if held.size != workers.size + frontend.size:
                # (not disjoint, as they usually are: a CPU of both counts as a worker)
                frontend = cpuset.subtract(frontend, workers)
    kept = EMPTY
    if reserved or isolated.size:
        kept = union([reserved or EMPTY, isolated])
        kept = cpuset.subtract(cpuset.keep(kept, allowed_all), held)
        held = union([held, kept])
    spare = cpuset.subtract(allowed_all, held)
    return {
        "workers": cpuset.format(workers),
        "frontend": cpuset.format(frontend),
        "reserved": cpuset.format(kept),
        "spare": cpuset.format(spare),
    }
