# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vLLM flags a wrapper adds or reads, by the instance's vLLM version (``vllm_flags``).

- NUMA: vLLM's own binding (``--numa-bind``, 0.20+; automatic from 0.34 when the launching
  process may run on every CPU) wraps EngineCore and each worker in ``numactl`` with a memory
  policy of its own. With ``binding: host`` the plan owns the CPUs and memory, so a vLLM that
  has the flag gets ``--no-numa-bind``; a vLLM without it gets nothing (it cannot bind, and it
  exits on an unknown argument). An unknown version gets nothing and a warning that says
  whether a 0.34+ vLLM could bind by itself there (only when the instance starts on every CPU).
- ``--device-ids`` (0.24+): indices into the visible list the wrapper exports; the worker of
  local rank r in DP engine d runs on ``D'[d*ws + r]``. The instance's devices are put in that
  order so the plan JSON, the units and the binder follow it.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors, vllm_flags

NUMA_ON = ("--numa-bind", "--numa_bind")
NUMA_OFF = ("--no-numa-bind", "--no-numa_bind")
NUMA_LISTS = ("--numa-bind-nodes", "--numa-bind-cpus", "--numa_bind_nodes", "--numa_bind_cpus")


def _version(vllm):
    return (vllm or {}).get("version")


def describe(view, vllm):
    """One line for the wrapper's header: the vLLM read and where."""
    if not vllm or not vllm.get("version"):
        return "version unknown"
    return "%s (%s)" % (vllm["version"], vllm.get("source") or "given")


def device_order(command, visible, row):
    """The instance's devices in rank order (``vllm_flags.device_order``); WrapperError naming
    ``--device-ids`` for a value the plan cannot follow."""
    try:
        return vllm_flags.device_order(list(command), visible, row.visibility[0])
    except ValueError as err:
        raise WrapperError(str(err))


def check_device_ids(view, argv, vllm):
    """Refuse ``--device-ids`` on a vLLM known to lack it (it would exit on it)."""
    try:
        if vllm_flags.flag_value(argv, vllm_flags.DEVICE_IDS_FLAGS) is None:
            return
    except ValueError as err:
        raise WrapperError(str(err))
    if vllm_flags.state(_version(vllm), vllm_flags.DEVICE_IDS) is False:
        raise WrapperError(
            "command: --device-ids: vLLM %s has no --device-ids (vLLM %s+) and "
            "would exit on it; choose the devices with npus instead"
            % (describe(view, vllm), vllm_flags.BY_KEY[vllm_flags.DEVICE_IDS].since)
        )


def _host_cpus(view):
    return set(view.get("host_cpus") or [])


def numa_flags(view, argv, binding, vllm, start):
    """What the wrapper does about vLLM's NUMA binding: ``{add, lists, numa, warnings}`` -
    ``add`` the flags appended, ``lists`` True when the plan's nodes and CPUs are passed
    (``binding: vllm``), ``numa`` what the instance really gets (for the module's result and
    the audit)."""
    row = vendors.get(view["vendor"])
    out = {"add": [], "lists": False, "warnings": [], "numa": None}
    if row is None or not row.numa_bind:
        out["numa"] = "none (vLLM's NUMA binding does not run on %s)" % view["vendor"]
        return out
    since = vllm_flags.BY_KEY[vllm_flags.NUMA_BIND].since
    has = vllm_flags.state(_version(vllm), vllm_flags.NUMA_BIND)
    on = [
        a
        for a in argv[1:]
        if a in NUMA_ON
        or a.startswith(tuple(n + "=" for n in NUMA_ON))
        or a in NUMA_LISTS
        or a.startswith(tuple(n + "=" for n in NUMA_LISTS))
    ]
    off = [a for a in argv[1:] if a in NUMA_OFF]
    if binding == "vllm":
        if has is False:
            out["warnings"].append(
                "vLLM %s has no --numa-bind (vLLM %s+): binding vllm passes "
                "no NUMA lists, vLLM starts unbound" % (describe(view, vllm), since)
            )
            out["numa"] = "none (vLLM before %s)" % since
            return out
        if has is None:
            out["warnings"].append(
                "vLLM version unknown: --numa-bind is passed for binding vllm, "
                "and a vLLM before %s exits on it; set vllm_version or make "
                "the instance's environment readable" % since
            )
        out["lists"] = True
        out["numa"] = "vllm (--numa-bind with the plan's nodes and CPUs)"
        return out
    if on:
        raise WrapperError(
            "command: %s: vLLM's own NUMA binding would compete with binding: host "
            "(the binder owns the CPUs and memory); remove it, or use "
            "binding: vllm" % on[0]
        )
    if off:
        out["numa"] = "off (--no-numa-bind, from the command)"
    elif has:
        out["add"] = [vllm_flags.NO_NUMA_BIND]
        out["numa"] = "off (--no-numa-bind)"
    elif has is False:
        out["numa"] = "none (vLLM before %s has no NUMA binding)" % since
    else:
        out["numa"] = "unknown (version unknown: no flag passed)"
        hosts = _host_cpus(view)
        whole = bool(hosts) and hosts <= set(start)
        out["warnings"].append(
            "vLLM version unknown: --no-numa-bind left out (a vLLM before %s exits on it). "
            "vLLM %s+ binds NUMA by itself when started on every CPU of the host: this instance "
            "starts on %s%s; set vllm_version, or name the environment in the command "
            "(/path/venv/bin/vllm)"
            % (
                since,
                vllm_flags.BY_KEY[vllm_flags.NUMA_BIND_AUTO].since,
                cpulist.format(start),
                " - every CPU, so it would" if whole else (" - not every CPU, so it cannot" if hosts else ""),
            )
        )
    return out
