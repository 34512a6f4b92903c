# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a host CPU partition lives on a host, and the facts' ``cpu_partition`` section.

The paths are defined here, the lowest layer that reads them (``render/cpu_partition`` and
``apply/cpu_partition`` import them). ``gather(io)`` reads, through a HostIO:

- ``applied``: the partition's state file exists (``npu_cpu_partition`` applied it);
- ``kernel_cmdline_wanted``, ``reboot_pending``: the kernel arguments the partition asked for
  (``kernel_cmdline: true``) and whether the running kernel lacks one of them;
- ``slices``: for ``system.slice``, ``user.slice``, ``init.scope`` and ``npuops-vllm.slice``,
  the cgroup v2 ``cpuset.cpus`` (what ``AllowedCPUs=`` set; "" when unset) and
  ``cpuset.cpus.effective``;
- ``manager_affinity``: PID 1's ``Cpus_allowed_list`` (the manager's ``CPUAffinity=``);
- ``workqueue``, ``default_smp_affinity``: the two kernel masks, as cpulists;
- ``tuned_profile``: tuned's active profile (``/etc/tuned/active_profile``), None without;
- ``cmdline``: the ``isolcpus`` / ``nohz_full`` / ``rcu_nocbs`` values of the running kernel.

Nothing here raises: an unreadable source is null. Standard library only, Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.model.cpu_intruders import (  # noqa: F401
    STATE_FILE,
    VLLM_SLICE,
)
from ansible_collections.npuops.fleet.plugins.module_utils.parse import cpu_topology

DROPIN = "50-npuops-cpu-partition.conf"
UNIT_DIR = "/etc/systemd/system"
WORKQUEUE_MASK = "/sys/devices/virtual/workqueue/cpumask"
DEFAULT_SMP_AFFINITY = "/proc/irq/default_smp_affinity"
TUNED_ACTIVE = "/etc/tuned/active_profile"
TUNED_PROFILE = "npuops-cpu-partition"
# the units held on the housekeeping CPUs (cgroup v2) and the section their drop-in sets
HELD_UNITS = (("system.slice", "Slice"), ("user.slice", "Slice"), ("init.scope", "Scope"))
CGROUP = "/sys/fs/cgroup"
CMDLINE_KEYS = ("isolcpus", "nohz_full", "rcu_nocbs")
MAX_CMDLINE = 65536


def unit_dropin(unit):
    return "%s/%s.d/%s" % (UNIT_DIR, unit, DROPIN)


def system_slice_held(io):
    """True when the partition's drop-in holds system.slice (its cpuset is then not the CPUs
    a vLLM service gets: the facts' ``cpu.allowed`` reads the cgroup root instead)."""
    return bool(io.exists(unit_dropin("system.slice")))


def _cpulist(io, path):
    text = io.read_text(path)
    if text is None:
        return None
    try:
        return cpu_topology.parse_cpulist_file(text, path)
    except ParseError:
        return None


def _mask(io, path):
    text = io.read_text(path)
    if text is None:
        return None
    try:
        return cpulist.format(cpulist.from_mask(text.strip(), path))
    except ParseError:
        return None


def cmdline_isolation(text):
    """{key: value} of the isolation arguments on a kernel command line."""
    out = {}
    for word in (text or "")[:MAX_CMDLINE].split():
        key, sep, value = word.partition("=")
        if sep and key in CMDLINE_KEYS:
            out[key] = value
    return out


def gather(io):
    slices = {}
    for unit in [row[0] for row in HELD_UNITS] + [VLLM_SLICE]:
        base = "%s/%s" % (CGROUP, unit)
        slices[unit] = {
            "allowed": _cpulist(io, base + "/cpuset.cpus"),
            "effective": _cpulist(io, base + "/cpuset.cpus.effective"),
        }
    status = io.read_text("/proc/1/status")
    try:
        manager = cpu_topology.parse_status(status, "/proc/1/status") if status else None
    except ParseError:
        manager = None
    tuned = io.read_text(TUNED_ACTIVE)
    cmdline = cmdline_isolation(io.read_text("/proc/cmdline"))
    wanted = _wanted_cmdline(io)
    return {
        "applied": bool(io.exists(STATE_FILE)),
        "kernel_cmdline_wanted": wanted,
        "reboot_pending": bool(wanted)
        and any(cmdline.get(arg.partition("=")[0]) != arg.partition("=")[2] for arg in wanted),
        "slices": slices,
        "manager_affinity": manager,
        "workqueue": _mask(io, WORKQUEUE_MASK),
        "default_smp_affinity": _mask(io, DEFAULT_SMP_AFFINITY),
        "tuned_profile": tuned.strip() or None if tuned is not None else None,
        "cmdline": cmdline,
    }


def _wanted_cmdline(io):
    """The kernel arguments the applied partition asked for (its state file), or None."""
    text = io.read_text(STATE_FILE)
    try:
        wanted = json.loads(text[: 1 << 16]).get("kernel_cmdline") if text else None
    except (ValueError, AttributeError):
        return None
    if not isinstance(wanted, list) or not all(isinstance(w, str) for w in wanted):
        return None
    return wanted
