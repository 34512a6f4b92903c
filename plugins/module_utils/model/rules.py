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

# Each physical chip (die, with single-die mode on A3) is advertised as this many devices.
SHARE_DEV_COUNT = 100

# The device plugin's getDevState(): DCMI health 0 (npu-smi "OK") and 1 (general alarm,
# npu-smi "Warning") are Healthy; every other state is Unhealthy.
HEALTH_OK, HEALTH_WARNING, HEALTH_BAD = "ok", "warning", "unhealthy"

_DIGITS = re.compile(r"(\d+)")


def natural_key(name):
    """Sort key that orders ``mlx5_2`` before ``mlx5_10`` and ``GPU9`` before ``GPU10``."""
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(str(name))]


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
    """Health lists per advertised chip. A3 without single-die mode: one chip per package."""
    if device_type == "A3" and not single_die_mode:
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
    return {"chips_total": len(groups), "chips_healthy": healthy,
            "capacity": healthy * SHARE_DEV_COUNT}


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

    ``cpu.allowed`` is the gathering process's Cpus_allowed_list: inside a job's cgroup (a
    Slurm or Kubernetes job, ``taskset``) it names that job's CPUs, not the host's.
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
    return ("the facts were gathered in a cpuset of %d CPU%s (Cpus_allowed_list %s; the host "
            "has %d online: %s): gather the facts outside the job's cgroup, or pass "
            "allowed_cpus (role variable npuops_cpu_allowed) with the CPUs the service may use"
            % (len(allowed), "" if len(allowed) == 1 else "s", cpulist.format(allowed),
               len(online), cpulist.format(online)))
