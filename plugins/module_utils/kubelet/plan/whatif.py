# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the kubelet's static CPU Manager and Topology Manager would give a pod, or why they
would refuse it - a reading of ``pkg/kubelet/cm/cpumanager`` (``cpu_assignment.go``
takeByTopologyNUMAPacked, ``policy_static.go`` allocateCPUs / generateCPUTopologyHints /
enforceSMTAlignment) and ``topologymanager`` (the merge: ``kubelet/plan/merge.py``), checked
against the kubelet's own table-driven cases (tests/fixtures/kubelet/, as data).

- ``Topo``: CPUs with their core, socket and NUMA node (``Topo.from_facts``: the facts' NUMA
  cpulists, SMT siblings and packages; ``Topo.from_spec``: the same keys in a test case);
- ``take_by_topology(topo, available, n)``: the packed allocation - whole NUMA nodes / sockets
  (the higher level first), then whole cores, then single CPUs, each level sorted by free CPUs
  ascending then id; ``free_cpus`` the order single CPUs are taken in;
- ``cpu_hints`` / ``device_hints``: the NUMA masks that can satisfy a request, preferred when
  they are as narrow as the request can be on an empty node;
- ``merge_hints`` (``kubelet/plan/merge``): the best merged hint of the node's kubelet version
  and whether the policy admits it (``none``: no merge, no alignment; ``best-effort`` always;
  ``restricted`` when preferred; ``single-numa-node`` when preferred and one node);
- ``whatif(topo, reserved, pod, ...)``: the pod's CPUs or the admission error
  (``SMTAlignmentError`` under ``full-pcpus-only``: a request that is not whole cores, or more
  CPUs than the free whole cores hold; ``TopologyAffinityError``).

- ``take_distributed``: takeByTopologyNUMADistributed (``distribute-cpus-across-numa``).

Not modelled: ``distribute-cpus-across-cores``,
``align-by-socket``, ``prefer-align-cpus-by-uncorecache``, init-container reuse, pod-level
resource managers, memory hints.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from itertools import combinations

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.merge import merge_hints
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules

MAX_MASK_NODES = 16  # 2^16 masks at most, as the kubelet's own limit keeps it small
LEVELS = {"core": 0, "socket": 1, "numa": 2}  # a level's index in a CPU's (core, socket, numa)


class Topo(object):
    """cpu -> (core, socket, numa); core ids are the lowest CPU of the core, as cAdvisor's."""

    def __init__(self, cpu_info):
        self.info = dict(cpu_info)
        self.cpus = set(self.info)
        self.sockets = sorted(set(v[1] for v in self.info.values()))
        self.numas = sorted(set(v[2] for v in self.info.values()))
        cores = set(v[0] for v in self.info.values())
        self.cpus_per_socket = len(self.cpus) // max(1, len(self.sockets))
        self.cpus_per_core = len(self.cpus) // max(1, len(cores))
        self.numa_first = len(self.sockets) >= len(self.numas)

    @classmethod
    def from_spec(cls, numa_nodes, smt_siblings=(), packages=None, sockets=None):
        """``packages``: NUMA node -> socket (a socket per node when None); ``sockets``:
        cpulist -> socket, for a node that holds several sockets."""
        core_of = {}
        for group in smt_siblings or []:
            ids = cpulist.parse(str(group))
            for cpu in ids:
                core_of[cpu] = ids[0]
        socket_of = {}
        for text, socket in (sockets or {}).items():
            for cpu in cpulist.parse(str(text)):
                socket_of[cpu] = int(socket)
        info = {}
        for node, text in numa_nodes.items():
            node = int(node)
            socket = (
                int((packages or {}).get(str(node), (packages or {}).get(node, node))) if packages is not None else node
            )
            for cpu in cpulist.parse(str(text)):
                info[cpu] = (core_of.get(cpu, cpu), socket_of.get(cpu, socket), node)
        return cls(info)

    @classmethod
    def from_facts(cls, topology):
        cpu = (topology or {}).get("cpu") or {}
        packages = rules.node_packages(topology)
        if packages is not None and any(p < 0 for p in packages.values()):
            packages = None  # firmware that names no package: a socket per node
        nodes = dict((str(n), cpulist.format(list(c))) for n, c in rules.node_cpus(topology).items() if c)
        return cls.from_spec(
            nodes, cpu.get("smt_siblings") or [], dict((str(k), v) for k, v in packages.items()) if packages else None
        )

    def cpus_in(self, free, level, unit):
        index = LEVELS[level]
        return set(c for c in free if self.info[c][index] == unit)

    def units(self, free, level, within=None):
        index = LEVELS[level]
        return sorted(set(self.info[c][index] for c in free if within is None or within(c)))


class _Acc(object):
    def __init__(self, topo, available, n):
        self.topo, self.free, self.need, self.result = topo, set(available) & topo.cpus, n, set()

    def _sorted(self, level, within=None):
        units = self.topo.units(self.free, level, within)
        return sorted(units, key=lambda u: (len(self.topo.cpus_in(self.free, level, u)), u))

    def _nested(self, level, outer, outer_units):
        """The ``level`` units sorted within each of ``outer_units`` (units of ``outer``) in
        turn: the kubelet's sort of NUMA nodes within sockets, and the reverse."""
        index = LEVELS[outer]
        out = []
        for unit in outer_units:
            out.extend(self._sorted(level, lambda c, u=unit: self.topo.info[c][index] == u))
        return out

    def numas(self):
        if self.topo.numa_first:
            return self._sorted("numa")
        return self._nested("numa", "socket", self.sockets())

    def sockets(self):
        if not self.topo.numa_first:
            return self._sorted("socket")
        return self._nested("socket", "numa", self.numas())

    def cores(self):
        if self.topo.numa_first:
            return self._nested("core", "socket", self.sockets())
        return self._nested("core", "numa", self.numas())

    def cpus(self):
        out = []
        for core in self.cores():
            out.extend(sorted(self.topo.cpus_in(self.free, "core", core)))
        return out

    def take(self, cpus):
        self.result |= cpus
        self.free -= cpus
        self.need -= len(cpus)

    def take_full(self, level):
        topo = self.topo
        if level == "numa":
            units = [
                u
                for u in self.numas()
                if len(topo.cpus_in(self.free, "numa", u)) == len(topo.cpus_in(topo.cpus, "numa", u))
            ]
        elif level == "socket":
            units = [u for u in self.sockets() if len(topo.cpus_in(self.free, "socket", u)) == topo.cpus_per_socket]
        else:
            units = [u for u in self.cores() if len(topo.cpus_in(self.free, "core", u)) == topo.cpus_per_core]
        for unit in units:
            whole = topo.cpus_in(topo.cpus, level, unit)
            if self.need >= len(whole):
                self.take(whole)


def free_cpus(topo, available):
    """The order the kubelet takes single CPUs in (cpuAccumulator.freeCPUs)."""
    return _Acc(topo, available, 0).cpus()


def take_by_topology(topo, available, n):
    """``(cpus, None)`` or ``(None, error)``: takeByTopologyNUMAPacked."""
    acc = _Acc(topo, available, n)
    if acc.need < 1:
        return set(), None
    if acc.need > len(acc.free):
        return None, (
            "not enough cpus available to satisfy request: requested=%d, available=%d" % (n, len(set(available)))
        )
    for level in (("numa", "socket") if topo.numa_first else ("socket", "numa")) + ("core",):
        acc.take_full(level)
        if acc.need < 1:
            return acc.result, None
    for cpu in acc.cpus():
        acc.take(set([cpu]))
        if acc.need < 1:
            return acc.result, None
    return None, "failed to allocate cpus"


def _round3(value):
    """Go's math.Round(v*1000)/1000 for the non-negative values it is used on."""
    return math.floor(value * 1000 + 0.5) / 1000.0


def _balance(values):
    """cpu_assignment.go standardDeviation: both the mean and the result rounded to 3 decimals."""
    mean = _round3(sum(values) / float(len(values)))
    return _round3(math.sqrt(sum((v - mean) ** 2 for v in values) / float(len(values))))


def _numa_range(acc, group):
    """rangeNUMANodesNeededToSatisfy: (fewest, most) NUMA nodes worth trying."""
    topo = acc.topo
    groups = (len(topo.cpus) - 1) // group + 1
    per_node = (groups - 1) // len(topo.numas) + 1
    needed = (acc.need - 1) // group + 1
    return (needed - 1) // per_node + 1, min(needed, len(topo.units(acc.free, "numa")))


def _remainder_plan(after, combo, remainder, group):
    """(balance, subset) of the best subset of ``combo`` to take the remainder groups from."""
    candidates = [n for n in combo if after[n] >= group]
    best = (float("inf"), None)
    for size in range(len(candidates), 0, -1):
        for subset in combinations(candidates, size):
            if sum(after[n] for n in subset) < remainder:
                continue
            left, local = remainder, dict(after)
            while left > 0:
                moved = False
                for node in subset:
                    if left == 0:
                        break
                    if local[node] >= group:
                        local[node] -= group
                        left -= group
                        moved = True
                if not moved:
                    break
            balance = _balance(list(local.values()))
            if balance < best[0]:
                best = (balance, subset)
    return best


def take_distributed(topo, available, n, group=1):
    """``(cpus, None)`` or ``(None, error)``: takeByTopologyNUMADistributed
    (distribute-cpus-across-numa; ``group`` the CPUs handed out together - a core's threads
    under full-pcpus-only). The fewest NUMA nodes that take an even share each, the remainder
    where it leaves the free CPUs most balanced; packed when no such set exists."""
    if n % group:
        return take_by_topology(topo, available, n)
    acc = _Acc(topo, available, n)
    if acc.need < 1:
        return set(), None
    if acc.need > len(acc.free):
        return None, (
            "not enough cpus available to satisfy request: requested=%d, available=%d" % (n, len(set(available)))
        )
    numas = acc.numas()
    free_on = dict((node, len(topo.cpus_in(acc.free, "numa", node))) for node in numas)
    low, high = _numa_range(acc, group)
    for size in range(low, high + 1):
        best = (float("inf"), None, None)
        for combo in combinations(numas, size):
            if best[0] == 0:
                break
            if sum(free_on[c] for c in combo) < n or sum(free_on[c] // group for c in combo) * group < n:
                continue
            share = (n // size // group) * group
            if any(free_on[c] < share for c in combo):
                continue
            after = dict(free_on)
            for node in combo:
                after[node] -= share
            remainder = n - share * size
            if remainder == 0:
                local = (_balance(list(after.values())), None)
            else:
                local = _remainder_plan(after, combo, remainder, group)
            if local[0] < best[0]:
                best = (local[0], local[1], combo)
        if best[2] is None:
            continue
        share = (n // size // group) * group
        for node in best[2]:
            got, dummy = take_by_topology(topo, topo.cpus_in(acc.free, "numa", node), share)
            acc.take(got)
        remainder = n - share * size
        while remainder > 0:
            moved = False
            for node in best[1] or ():
                if remainder == 0:
                    break
                here = topo.cpus_in(acc.free, "numa", node)
                if len(here) < group:
                    continue
                got, dummy = take_by_topology(topo, here, group)
                acc.take(got)
                remainder -= group
                moved = True
            if not moved:
                break
        if acc.need != 0:
            return None, "accounting error, not enough CPUs allocated, remaining: %d" % acc.need
        return acc.result, None
    return take_by_topology(topo, available, n)


def _masks(nodes):
    nodes = sorted(nodes)
    if len(nodes) > MAX_MASK_NODES:
        raise PlanError("what-if: %d NUMA nodes, more than the %d it enumerates" % (len(nodes), MAX_MASK_NODES))
    for size in range(1, len(nodes) + 1):
        for combo in combinations(nodes, size):
            yield frozenset(combo)


def cpu_hints(topo, available, request):
    """[(mask, preferred)] as generateCPUTopologyHints: a mask whose available CPUs cover the
    request; preferred when it has as few nodes as the smallest mask whose CPUs (all of them,
    free or not) could."""
    total, free = {}, {}
    for cpu, (dummy, dummy2, node) in topo.info.items():
        total[node] = total.get(node, 0) + 1
    for cpu in available:
        node = topo.info.get(cpu, (0, 0, None))[2]
        if node is not None:
            free[node] = free.get(node, 0) + 1
    hints, minimum = [], len(topo.numas)
    for mask in _masks(topo.numas):
        if sum(total.get(n, 0) for n in mask) >= request:
            minimum = min(minimum, len(mask))
        if sum(free.get(n, 0) for n in mask) >= request:
            hints.append(mask)
    return [(mask, len(mask) == minimum) for mask in hints]


def device_hints(nodes, device_nodes, free_device_nodes, request):
    """[(mask, preferred)] for ``request`` devices: ``device_nodes`` every healthy device's
    node, ``free_device_nodes`` the unallocated ones'. None (no preference) when no device has
    a NUMA node, as the device manager does."""
    if not any(n is not None and n >= 0 for n in device_nodes):
        return None
    hints, minimum = [], len(nodes)
    for mask in _masks(nodes):
        if sum(1 for n in device_nodes if n in mask) >= request:
            minimum = min(minimum, len(mask))
        if sum(1 for n in free_device_nodes if n in mask) >= request:
            hints.append(mask)
    return [(mask, len(mask) == minimum) for mask in hints]


def allocate(topo, available, n, mask, distribute=False, group=1):
    """allocateCPUs: the hint's nodes first, the rest from anywhere; each take packed, or
    distributed over NUMA nodes (``distribute``: distribute-cpus-across-numa, in groups of
    ``group`` CPUs)."""

    def take(cpus, count):
        if distribute:
            return take_distributed(topo, cpus, count, group)
        return take_by_topology(topo, cpus, count)

    result = set()
    if mask is not None:
        aligned = set(c for c in available if topo.info[c][2] in mask)
        got, err = take(aligned, min(n, len(aligned)))
        if err:
            return None, err
        result |= got
    rest, err = take(set(available) - result, n - len(result))
    if err:
        return None, err
    return result | rest, None


def _refused(reason, shown=None):
    return {"admitted": False, "cpus": None, "numa_nodes": shown, "reason": reason, "hint": None}


def whatif(
    topo,
    reserved,
    cpus,
    devices=None,
    policy="restricted",
    full_pcpus_only=False,
    assigned=(),
    version=None,
    distances=None,
    closest_numa=False,
    distribute_numa=False,
):
    """A Guaranteed pod asking ``cpus`` exclusive CPUs and ``devices`` ({"nodes": [each
    healthy device's node], "free": [the free ones' nodes], "count": n}) on a node whose
    kubelet (``version``) reserves ``reserved`` and already gave ``assigned`` CPUs away;
    ``closest_numa``: prefer-closest-numa-nodes with ``distances`` ({node: {node: int}});
    ``distribute_numa``: the CPU Manager's distribute-cpus-across-numa.

    -> {admitted, cpus, numa_nodes, reason, hint: {numa_nodes, preferred} or None}."""
    reserved, assigned = set(reserved), set(assigned)
    available = topo.cpus - reserved - assigned
    if full_pcpus_only:  # policy_static.go enforceSMTAlignment
        if cpus % topo.cpus_per_core:
            return _refused(
                "SMTAlignmentError: requested %d cpus not multiple cpus per core = %d" % (cpus, topo.cpus_per_core)
            )
        # the reserved CPUs' whole cores do not count as free physical CPUs
        cores = set(topo.info[c][0] for c in reserved)
        physical = len([c for c in available if topo.info[c][0] not in cores])
        if cpus > physical:
            return _refused(
                "SMTAlignmentError: not enough free physical CPUs: available physical "
                "CPUs = %d, requested CPUs = %d, CPUs per core = %d" % (physical, cpus, topo.cpus_per_core)
            )
    providers = [cpu_hints(topo, available, cpus)]
    if devices and devices.get("count"):
        providers.append(
            device_hints(
                topo.numas,
                devices.get("nodes") or [],
                devices.get("free", devices.get("nodes")) or [],
                devices["count"],
            )
        )
    mask, preferred, admit = merge_hints(
        policy, providers, topo.numas, version=version, distances=distances, closest_numa=closest_numa
    )
    shown = sorted(mask) if mask is not None else None
    hint = {"numa_nodes": shown, "preferred": preferred} if policy != "none" else None
    if not admit:
        out = _refused(
            "TopologyAffinityError: the best merged hint (NUMA %s, %s) is not admitted "
            "by %s"
            % (",".join(map(str, shown)) if shown else "any", "preferred" if preferred else "not preferred", policy),
            shown,
        )
        out["hint"] = hint
        return out
    got, err = allocate(topo, available, cpus, mask, distribute_numa, topo.cpus_per_core if full_pcpus_only else 1)
    if err:
        out = _refused(err, shown)
        out["hint"] = hint
        return out
    return {
        "admitted": True,
        "cpus": cpulist.format(sorted(got)),
        "numa_nodes": sorted(set(topo.info[c][2] for c in got)),
        "reason": None,
        "hint": hint,
    }
