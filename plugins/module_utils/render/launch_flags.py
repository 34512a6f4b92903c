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
- ``--device-ids`` (0.32+): indices into the visible list the wrapper exports; the worker of
  local rank r in DP engine d runs on ``D'[d*ws + r]``. The instance's devices are put in that
  order so the plan JSON, the units and the binder follow it.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors, vllm_flags

# vLLM's parser takes an underscore spelling of every option too (FlexibleArgumentParser)
DEVICE_IDS_FLAGS = ("--device-ids", "--device_ids")
NUMA_ON = ("--numa-bind", "--numa_bind")
NUMA_OFF = ("--no-numa-bind", "--no-numa_bind")
NUMA_LISTS = ("--numa-bind-nodes", "--numa-bind-cpus", "--numa_bind_nodes", "--numa_bind_cpus")
MAX_DEVICE_IDS = 4096
_INDEX = re.compile(r"^[0-9]{1,6}\Z")


def _version(vllm):
    return (vllm or {}).get("version")


def describe(view, vllm):
    """One line for the wrapper's header: the vLLM read and where."""
    if not vllm or not vllm.get("version"):
        return "version unknown"
    return "%s (%s)" % (vllm["version"], vllm.get("source") or "given")


def _flag_value(argv, names):
    """``(index, value)`` of the one ``--flag value`` / ``--flag=value`` in ``argv``, or None;
    WrapperError when it is given twice or has no value."""
    found = []
    index = 1
    while index < len(argv):
        arg = argv[index]
        for name in names:
            if arg == name:
                if index + 1 >= len(argv):
                    raise WrapperError("command[%d]: %s has no value" % (index, name))
                found.append((index, argv[index + 1]))
                index += 1
                break
            if arg.startswith(name + "="):
                found.append((index, arg[len(name) + 1:]))
                break
        index += 1
    if len(found) > 1:
        raise WrapperError("command: %s is given %d times (at %s); give it once"
                           % (names[0], len(found), ", ".join("[%d]" % i for i, _v in found)))
    return found[0] if found else None


def device_ids(argv):
    """The ``--device-ids`` of a command as a list of ints, or None when it has none.
    WrapperError naming the flag for a value the plan cannot follow."""
    found = _flag_value(argv, DEVICE_IDS_FLAGS)
    if found is None:
        return None
    index, value = found
    parts = [part.strip() for part in value.split(",")]
    if len(parts) > MAX_DEVICE_IDS or not value.strip():
        raise WrapperError("command[%d]: --device-ids %r: expected 1 to %d comma-separated "
                           "device indexes" % (index, value[:60], MAX_DEVICE_IDS))
    if not all(_INDEX.match(part) for part in parts):
        raise WrapperError("command[%d]: --device-ids %r: only device indexes can be followed "
                           "by the plan (vLLM also takes UUIDs, which the plan does not know); "
                           "give indexes into the instance's devices" % (index, value[:60]))
    ids = [int(part) for part in parts]
    if len(set(ids)) != len(ids):
        raise WrapperError("command[%d]: --device-ids %s lists an index twice (vLLM refuses "
                           "duplicates)" % (index, value))
    return ids


def device_order(command, visible, row):
    """The instance's devices in rank order: ``visible`` without ``--device-ids``, else
    ``[visible[i] for i in ids]`` (vLLM reads the ids as indices into the visibility variable,
    which the wrapper sets to ``visible``: EngineArgs._resolve_device_ids, v0.32.0-v0.34.0)."""
    ids = device_ids(list(command))
    if ids is None:
        return list(visible)
    out_of_range = [i for i in ids if i >= len(visible)]
    if out_of_range:
        raise WrapperError("command: --device-ids %s: index %d is out of range for the "
                           "instance's %d devices (%s=%s: vLLM reads the ids as indices into "
                           "it; device %s is the instance's --device-ids 0)"
                           % (",".join(str(i) for i in ids), out_of_range[0], len(visible),
                              row.visibility[0], ",".join(str(d) for d in visible), visible[0]))
    return [visible[i] for i in ids]


def check_device_ids(view, argv, vllm):
    """Refuse ``--device-ids`` on a vLLM known to lack it (it would exit on it)."""
    if _flag_value(argv, DEVICE_IDS_FLAGS) is None:
        return
    if vllm_flags.state(_version(vllm), vllm_flags.DEVICE_IDS) is False:
        raise WrapperError("command: --device-ids: vLLM %s has no --device-ids (vLLM %s+) and "
                           "would exit on it; choose the devices with npus instead"
                           % (describe(view, vllm), vllm_flags.BY_KEY[vllm_flags.DEVICE_IDS].since))


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
    on = [a for a in argv[1:] if a in NUMA_ON or a.startswith(tuple(n + "=" for n in NUMA_ON))
          or a in NUMA_LISTS or a.startswith(tuple(n + "=" for n in NUMA_LISTS))]
    off = [a for a in argv[1:] if a in NUMA_OFF]
    if binding == "vllm":
        if has is False:
            out["warnings"].append("vLLM %s has no --numa-bind (vLLM %s+): binding vllm passes "
                                   "no NUMA lists, vLLM starts unbound" % (describe(view, vllm), since))
            out["numa"] = "none (vLLM before %s)" % since
            return out
        if has is None:
            out["warnings"].append("vLLM version unknown: --numa-bind is passed for binding vllm, "
                                   "and a vLLM before %s exits on it; set vllm_version or make "
                                   "the instance's environment readable" % since)
        out["lists"] = True
        out["numa"] = "vllm (--numa-bind with the plan's nodes and CPUs)"
        return out
    if on:
        raise WrapperError("command: %s: vLLM's own NUMA binding would compete with binding: host "
                           "(the binder owns the CPUs and memory); remove it, or use "
                           "binding: vllm" % on[0])
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
            "(/path/venv/bin/vllm)" % (
                since, vllm_flags.BY_KEY[vllm_flags.NUMA_BIND_AUTO].since, cpulist.format(start),
                " - every CPU, so it would" if whole else
                (" - not every CPU, so it cannot" if hosts else "")))
    return out
