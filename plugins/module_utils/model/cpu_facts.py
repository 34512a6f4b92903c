# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``cpu`` section of the topology facts (``gather_cpu``), read through a HostIO.

- ``allowed``: the CPUs a systemd service gets (cgroup v2 ``system.slice``
  ``cpuset.cpus.effective``, else the root cpuset), else the gathering process's own
  ``Cpus_allowed_list`` (``allowed_self``), else the online CPUs; ``allowed_source`` says which.
- ``numa_nodes`` from sysfs, else ``lscpu -e``, else the ``lscpu`` summary.
- ``numa_distance`` from ``/sys/devices/system/node/node<N>/distance``, else ``numactl -H``;
  ``packages`` from ``physical_package_id``; ``smt_siblings`` from ``thread_siblings_list``;
  ``isolated`` / ``nohz_full`` from ``/sys/devices/system/cpu``. A missing source gives null and
  an ``errors`` entry; nothing here raises.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.model import cpu_partition_facts
from ansible_collections.npuops.fleet.plugins.module_utils.parse import cpu_topology

NODE_DIR = "/sys/devices/system/node"


def read_file(io, path, parser, errors):
    """``parser(text of path)``, None when the file is absent or does not parse (then an entry in
    ``errors`` names the file, unless ``errors`` is None)."""
    text = io.read_text(path)
    if text is None:
        return None
    try:
        return parser(text, path)
    except ParseError as err:
        if errors is not None:
            errors.append({"source": path, "msg": err.msg})
        return None


def int_file(io, path):
    """An integer sysfs file (numa_node); -1, missing or garbage -> None."""
    text = io.read_text(path)
    if text is None or not re.match(r"^\s*-?[0-9]{1,9}\s*\Z", text):  # bounded for int()
        return None
    value = int(text.strip())
    return value if value >= 0 else None


CPU_DIR = "/sys/devices/system/cpu"
# The CPUs a systemd service gets (what a vLLM unit may run on): the system.slice cpuset (cgroup v2), else the root
# cpuset (v2 root, v1 root); the gathering process's own Cpus_allowed_list is ``allowed_self``.
SERVICE_CPUSETS = (
    ("system.slice", "/sys/fs/cgroup/system.slice/cpuset.cpus.effective"),
    ("cgroup root", "/sys/fs/cgroup/cpuset.cpus.effective"),
    ("cgroup root", "/sys/fs/cgroup/cpuset/cpuset.effective_cpus"),
    ("cgroup root", "/sys/fs/cgroup/cpuset/cpuset.cpus"),
)


def _service_cpus(io, errors):
    """``(cpulist, source)`` of the first readable service cpuset, else ``(None, None)``.
    A system.slice held by the host CPU partition is skipped: the instances run in their own
    slice, which gets the root's CPUs (a plan made there would shrink to the housekeeping CPUs)."""
    held = cpu_partition_facts.system_slice_held(io)
    for source, path in SERVICE_CPUSETS:
        if held and source == "system.slice":
            continue
        value = read_file(io, path, cpu_topology.parse_cpulist_file, errors)
        if value:
            return value, source
    return None, None


def _distances(io, src, ids, timeout):
    """``cpu.numa_distance`` from sysfs rows, else ``numactl -H``; None (an error noted)."""
    rows = {}
    failed = None
    for node in ids:
        path = "%s/node%d/distance" % (NODE_DIR, node)
        text = io.read_text(path)
        if text is None:
            failed = "%s: not readable" % path
            break
        try:
            rows[node] = cpu_topology.parse_distance_row(text, path)
        except ParseError as err:
            failed = "%s: %s" % (path, err.msg)
            break
    if ids and failed is None:
        try:
            return cpu_topology.distance_table(rows, NODE_DIR + "/node*/distance")
        except ParseError as err:
            failed = "%s: %s" % (err.source, err.msg)
    res = io.run(list(cpu_topology.NUMACTL_ARGV), timeout=timeout)
    if res.ok:
        try:
            return cpu_topology.parse_numactl_distances(res.stdout)
        except ParseError as err:
            fallback = err.msg
    else:
        fallback = "not installed" if res.missing else res.failure()
    src.error(
        "cpu.numa_distance",
        "%s; %s: %s" % (failed or "no NUMA node in %s" % NODE_DIR, cpu_topology.SRC_NUMACTL, fallback),
    )
    return None


def _packages(io, src, nodes, warnings):
    """``{node: physical package id}`` of every node with CPUs (its first and last CPU)."""
    packages = {}
    for node, text in nodes.items():
        cpus = cpulist.parse(text)
        if not cpus:
            continue
        found = []
        for cpu in sorted(set((cpus[0], cpus[-1]))):
            path = "%s/cpu%d/topology/physical_package_id" % (CPU_DIR, cpu)
            text = io.read_text(path)
            value = int_file(io, path) if text is not None else None
            if value is None:
                src.error(
                    "cpu.packages",
                    "%s: %s"
                    % (
                        path,
                        "not readable" if text is None else ("%s (the firmware names no package)" % text.strip()[:20]),
                    ),
                )
                return None
            found.append(value)
        if len(set(found)) > 1:
            warnings.append(
                "NUMA node %s spans packages %s: taken as package %d" % (node, sorted(set(found)), found[0])
            )
        packages[str(node)] = found[0]
    return packages or None


def _smt_siblings(io, src, cpus):
    """The sibling groups (cpulists) of ``thread_siblings_list`` with more than one CPU;
    ``[]`` when no CPU has a sibling; None (an error noted) when a CPU's list is unreadable."""
    seen = set()
    groups = []
    for cpu in cpus:
        if cpu in seen:
            continue
        path = "%s/cpu%d/topology/thread_siblings_list" % (CPU_DIR, cpu)
        text = io.read_text(path)
        try:
            group = cpulist.parse(text.strip(), path) if text is not None else None
        except ParseError as err:
            src.error("cpu.smt_siblings", err.msg)
            return None
        if not group or cpu not in group:
            why = "not readable" if text is None else "does not list cpu%d" % cpu
            src.error("cpu.smt_siblings", "%s: %s" % (path, why))
            return None
        seen.update(group)
        if len(group) > 1:
            groups.append(cpulist.format(group))
    return groups


def _kernel_cpulist(io, src, name):
    path = "%s/%s" % (CPU_DIR, name)
    text = io.read_text(path)
    if text is None:
        src.error(path, "not readable")
        return None
    try:
        return cpu_topology.parse_kernel_cpulist(text, path)
    except ParseError as err:
        src.error(path, err.msg)
        return None


def gather_cpu(io, src, timeout, warnings):
    """``(cpu facts, parsed lscpu or None)``. ``src``: the command results of the gather
    (``parse(name, parser)``, ``error(source, msg)``, ``errors``); ``warnings`` is appended to."""
    errors = src.errors
    allowed_self = read_file(io, cpu_topology.SRC_STATUS, cpu_topology.parse_status, errors)
    online = read_file(io, cpu_topology.SRC_ONLINE, cpu_topology.parse_cpulist_file, errors)
    lscpu = src.parse("lscpu", cpu_topology.parse_lscpu)
    nodes, source = {}, "none"
    ids = cpu_topology.node_ids(io.listdir(NODE_DIR))
    for node in ids:
        path = "%s/node%d/cpulist" % (NODE_DIR, node)
        value = read_file(io, path, cpu_topology.parse_cpulist_file, errors)
        nodes[node] = value if value is not None else ""
    if nodes:
        nodes, source = cpu_topology.sorted_nodes(nodes), "sysfs"
    else:
        by_e = src.parse("lscpu_e", cpu_topology.parse_lscpu_e)
        if by_e:
            nodes, source = by_e, "lscpu-e"
        elif lscpu and lscpu["numa_nodes"]:
            nodes, source = lscpu["numa_nodes"], "lscpu"
    if online is None and lscpu:
        online = lscpu["online"]
    allowed, allowed_source = _service_cpus(io, errors)
    if allowed is None:
        allowed, allowed_source = allowed_self, "self"
    if allowed is None:
        allowed, allowed_source = online, "online"
    if allowed is None and not nodes:
        src.error(
            "cpu",
            "no CPU information could be read from this host (lscpu, "
            "/proc/self/status, /sys/devices/system/cpu, /sys/devices/system/node)",
        )
        allowed_source = None
    if allowed and allowed_self and allowed_source != "self":
        narrower = set(cpulist.parse(allowed)) - set(cpulist.parse(allowed_self))
        if narrower:
            warnings.append(
                "the gathering process may run on CPUs %s only (its own cpuset, "
                "cpu.allowed_self); a service gets %s (%s, cpu.allowed), which "
                "plans use" % (allowed_self, allowed, allowed_source)
            )
    cpus = set()
    for text in nodes.values():
        cpus.update(cpulist.parse(text))
    if online:
        cpus.update(cpulist.parse(online))
    return {
        "allowed": allowed,
        "allowed_self": allowed_self,
        "allowed_source": allowed_source,
        "online": online,
        "threads_per_core": lscpu["threads_per_core"] if lscpu else None,
        "numa_nodes": nodes,
        "numa_source": source,
        "model": lscpu["model"] if lscpu else None,
        "numa_distance": _distances(io, src, ids, timeout) if nodes else None,
        "packages": _packages(io, src, nodes, warnings) if nodes else None,
        "smt_siblings": _smt_siblings(io, src, sorted(cpus)) if cpus else None,
        "isolated": _kernel_cpulist(io, src, "isolated") if cpus else None,
        "nohz_full": _kernel_cpulist(io, src, "nohz_full") if cpus else None,
    }, lscpu
