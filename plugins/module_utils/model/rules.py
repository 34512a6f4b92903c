# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules every layer above the parsers shares, each written once: the NUMA node CPUs of a
topology, what a healthy chip is (and so the soft-share capacity), the natural sort order of
device names, and the diagnosis of facts gathered inside a cut cpuset.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist, cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types

# Each physical chip (die, with single-die mode on A3) is advertised as this many devices.
SHARE_DEV_COUNT = 100

# The device plugin's getDevState(): DCMI health 0 (npu-smi "OK") and 1 (general alarm,
# npu-smi "Warning") are Healthy; every other state is Unhealthy.
HEALTH_OK, HEALTH_WARNING, HEALTH_BAD = "ok", "warning", "unhealthy"

_DIGITS = re.compile(r"(\d+)")


def natural_key(name):
    """Sort key that orders ``mlx5_2`` before ``mlx5_10`` and ``GPU9`` before ``GPU10``."""
    # a digit run longer than any id sorts last (int() is not asked for 5,000 digits)
    return [
        (int(part) if len(part) <= 18 else float("inf")) if part.isdigit() else part
        for part in _DIGITS.split(str(name))
    ]


def health_state(health):
    """``ok``, ``warning`` (a general alarm: still Healthy to the device plugin, worth a look)
    or ``unhealthy`` for an npu-smi Health value; None when the health is not known."""
    if health is None:
        return None
    text = str(health).strip().lower()
    return text if text in (HEALTH_OK, HEALTH_WARNING) else HEALTH_BAD


def is_healthy(health):
    """True when the device plugin would report a chip with this npu-smi Health as Healthy."""
    return health_state(health) in (HEALTH_OK, HEALTH_WARNING)


def _chip_groups(npus, device_type, single_die_mode):
    """Health lists per advertised chip. A multi-die type (A3) without single-die mode: one
    chip per package."""
    if device_types.row(device_type).multi_die and not single_die_mode:
        groups = {}
        order = []
        for npu in npus:
            key = npu.get("npu_id")
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(npu.get("health"))
        return [groups[key] for key in order]
    return [[npu.get("health")] for npu in npus]


def softshare_capacity(npus, device_type, single_die_mode=True):
    """Soft-share capacity of one host, as the device plugin advertises it to kubelet.

    ``npus``: the facts' ``npus`` list (one entry per logic NPU, i.e. per die on A3), each
    with ``health``. Every healthy chip is 100 devices; an unhealthy chip makes all its 100
    devices Unhealthy (-100). On A3, single-die mode (``-useSingleDieMode=true``, required for
    soft share on A3 inference hosts) counts each die as a chip; without it the two dies of a
    package are one chip, healthy only when both dies are.
    """
    groups = _chip_groups(list(npus or []), device_type, single_die_mode)
    healthy = sum(1 for healths in groups if all(is_healthy(h) for h in healths))
    return {"chips_total": len(groups), "chips_healthy": healthy, "capacity": healthy * SHARE_DEV_COUNT}


def node_cpus(topology, source="topology cpu.numa_nodes"):
    """``{node id (int): CpuSeq}`` of ``cpu.numa_nodes``, memory-only nodes included (empty).

    Raises PlanError naming the node when an id is not an integer or a cpulist is malformed.
    """
    raw = ((topology or {}).get("cpu") or {}).get("numa_nodes") or {}
    if not isinstance(raw, dict):
        raise PlanError("%s must map node ids to cpulists, got %r" % (source, raw))
    nodes = {}
    for key, text in raw.items():
        try:
            node = int(key)
        except (TypeError, ValueError):
            raise PlanError("%s: node id %r is not an integer" % (source, key))
        try:
            nodes[node] = cpuset.parse_option(text or "", "%s[%s]" % (source, key))
        except ParseError as err:
            raise PlanError(str(err))
    return nodes


def cpuset_hint(topology):
    """What to do when the facts were gathered inside a cpuset smaller than the host, or None.

    ``cpu.allowed`` is what a service gets (schema 2: the system.slice or root cpuset, else the
    gathering process's Cpus_allowed_list): inside a job's cgroup (a Slurm or Kubernetes job,
    a container, ``taskset``) it names that job's CPUs, not the host's.
    """
    cpu = (topology or {}).get("cpu") if isinstance(topology, dict) else None
    if not isinstance(cpu, dict):
        return None
    nodes = cpu.get("numa_nodes") if isinstance(cpu.get("numa_nodes"), dict) else {}
    try:
        allowed = set(cpulist.parse(str(cpu.get("allowed") or "")))
        # the host's CPUs: online ones and those of its NUMA nodes (sysfs, not the cgroup)
        online = set(cpulist.parse(str(cpu.get("online") or "")))
        for text in nodes.values():
            online.update(cpulist.parse(str(text or "")))
    except ParseError:
        return None
    if not allowed or not online or not allowed < online:
        return None
    source = cpu.get("allowed_source")
    what = "Cpus_allowed_list" if source in (None, "self") else "the %s cpuset" % source
    return (
        "the facts were gathered in a cpuset of %d CPU%s (%s %s; the host "
        "has %d online: %s): gather the facts outside the job's cgroup, or pass "
        "allowed_cpus (role variable npuops_cpu_allowed) with the CPUs the service may use"
        % (
            len(allowed),
            "" if len(allowed) == 1 else "s",
            what,
            cpulist.format(allowed),
            len(online),
            cpulist.format(online),
        )
    )


def _int_key(value):
    if isinstance(value, bool):
        raise ValueError
    return int(value)


def numa_distance(topology):
    """``{node: {node: distance}}`` (ints) of ``cpu.numa_distance``, or None when absent or
    malformed (a distance that is not a positive integer, a node missing from a row)."""
    raw = ((topology or {}).get("cpu") or {}).get("numa_distance")
    if not isinstance(raw, dict) or not raw:
        return None
    try:
        # keys are decimal text (facts) or ints; the values must be positive ints already;
        # every row names the same nodes as the table
        table = {}
        for key, row in raw.items():
            if len(row) != len(raw):
                return None
            distances = [row[other] for other in raw]
            if any(value.__class__ is not int or value <= 0 for value in distances):
                return None
            table[int(key)] = dict(zip(map(int, raw), distances))
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return table


def node_packages(topology):
    """``{node: package id}`` (ints) of ``cpu.packages``, or None when absent or malformed."""
    raw = ((topology or {}).get("cpu") or {}).get("packages")
    if not isinstance(raw, dict) or not raw:
        return None
    try:
        return dict((_int_key(n), _int_key(p)) for n, p in raw.items())
    except (TypeError, ValueError):
        return None


class Nearness(object):
    """How near NUMA node ``b`` is to node ``a``: the sort key ``(other package, distance, b)``.

    The one rule for "nearest node" (strict borrowing, frontend pools): a node of the same
    package first, then the SLIT distance (``cpu.numa_distance``), then the lower id. Without a
    distance table the distance is ``|a - b|`` (nearest id, the rule before the table was read);
    without packages every node counts as the same package. A table or package map that does
    not cover every CPU node is not used (``warnings`` says so).
    """

    __slots__ = ("_distance", "_source", "_nodes", "packages", "_warnings")

    def __init__(self, distance=None, packages=None, nodes=(), source=None):
        """``distance`` / ``packages``: the parsed maps (``numa_distance``, ``node_packages``);
        ``source``: a topology whose distance table is parsed on first use instead."""
        self._warnings = []
        self._nodes = set(nodes)
        self._source = source
        self._distance = None
        if source is None and distance is not None:
            self._cover(distance)
        if packages is not None and not self._nodes <= set(packages):
            self._warnings.append(
                "cpu.packages lacks NUMA node(s) %s: packages not used" % sorted(self._nodes - set(packages))
            )
            packages = None
        self.packages = packages

    def _cover(self, distance):
        if not self._nodes <= set(distance):
            self._warnings.append(
                "cpu.numa_distance lacks NUMA node(s) %s: nearest node by id" % sorted(self._nodes - set(distance))
            )
            return
        self._distance = distance

    def _read(self):
        """The table of the source topology, parsed on first use."""
        if self._source is not None:
            source, self._source = self._source, None
            found = numa_distance(source)
            if found is not None:
                self._cover(found)

    @property
    def distance(self):
        """``{node: {node: distance}}`` or None (read from the topology on first use)."""
        self._read()
        return self._distance

    @property
    def warnings(self):
        """What was not used and why (reads the table)."""
        self._read()
        return self._warnings

    def read_warnings(self):
        """``warnings`` without reading a table nobody asked for."""
        return self._warnings

    @classmethod
    def of(cls, topology, nodes):
        return cls(None, node_packages(topology), nodes, source=topology)

    def key(self, a, b):
        """Sort key of node ``b`` seen from node ``a`` (smaller is nearer); a node the table or
        the package map does not know (the planner's pseudo node) counts by id."""
        packages = self.packages
        other = 0
        if packages is not None and a in packages and b in packages and packages[a] != packages[b]:
            other = 1
        self._read()
        distance = self._distance
        if distance is not None and a in distance and b in distance:
            return (other, distance[a][b], b)
        return (other, abs(a - b), b)

    def keys_from(self, a, nodes):
        """``[key(a, b)[:2] for b in nodes]``: ``(other package, distance)`` of each node."""
        return [self.key(a, b)[:2] for b in nodes]

    def same_package(self, a, b):
        """True when both nodes are on one package (or a package is unknown)."""
        packages = self.packages
        return packages is None or a not in packages or b not in packages or packages[a] == packages[b]


def smt_cores(topology):
    """``{cpu: core id}`` from ``cpu.smt_siblings`` (the groups of SMT siblings, each a cpulist;
    the core id is the group's lowest CPU). CPUs without a sibling are not listed. None when
    the siblings are unknown or malformed (never guessed from CPU numbering)."""
    raw = ((topology or {}).get("cpu") or {}).get("smt_siblings")
    if not isinstance(raw, list):
        return None
    cores = {}
    try:
        for text in raw:
            group = cpulist.parse(str(text))
            for cpu in group:
                if cpu in cores:
                    return None
                cores[cpu] = group[0]
    except ParseError:
        return None
    return cores


def cpu_fact(topology, key):
    """A cpulist fact of ``cpu`` (``isolated``, ``nohz_full``...) as a sorted CpuSeq; an absent,
    null or malformed value gives an empty CpuSeq."""
    text = ((topology or {}).get("cpu") or {}).get(key)
    if not text or not isinstance(text, str):
        return cpuset.EMPTY
    try:
        return cpuset.parse(text, "cpu." + key)
    except ParseError:
        return cpuset.EMPTY


def foreign_host(what, recorded, hostname):
    """A message when ``what`` (a plan, a topology) was made on another host than
    ``hostname``, else None. A document that names no host (older plans) is not refused."""
    if (
        not isinstance(recorded, str)
        or not recorded
        or not hostname
        or recorded.split(".")[0] == hostname.split(".")[0]
    ):
        return None  # (a hostname that is not text is the schema's message: model/schema)
    return (
        "%s was made for host %s, not this host (%s): pass the plan of this host, or set "
        "allow_foreign_plan: true when that is intended (a sandbox replaying a recorded host)"
        % (what, recorded, hostname)
    )
