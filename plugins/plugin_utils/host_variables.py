# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate role's checks of single ``npuops_*`` variables (controller side).

Ansible's argument spec checks a variable's type and choices, but converts what a ``str``
option is given into text: ``npuops_cpu_reserved: [0, 1]`` passes as ``"[0, 1]"`` and the
planner refuses it later, naming its own option, after an earlier stage has written. The rules
here close that gap and check what needs the host's facts, each message naming the variable:

- ``problems(values, spec)``: no facts needed. A ``str`` variable given a list, a mapping or a
  boolean; a mode variable (``MODES``) given a number; a cpulist variable (``CPULISTS``) that is
  not a cpulist; an integer below its
  least value (``LEAST``); a switch whose value this version cannot act on (``NOT_YET``).
- ``problems(values, spec, topology)``: also the values against the host's facts: CPUs that
  are not online, reserved CPUs that leave none to plan, device ids (``npuops_npus``) and RDMA
  NICs (``npuops_nics``) the host does not have, more devices per pod than the host has.

``values`` maps a variable name to its value (None: not set, as Ansible's argument spec
treats it); ``spec`` is the union argument spec the validate role checks (name -> option).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors

# Variables whose value is a cpulist ("0-3,8"; a single CPU id as a number is one too).
CPULISTS = ("npuops_cpu_allowed", "npuops_cpu_reserved", "npuops_irq_reserved_cpus", "npuops_k8s_housekeeping_cpus")
# Variables whose value is an octal file mode ("0750"): YAML reads an unquoted 0750 as the number
# 488, which Ansible would then pass on as the text "488" (and 0644 as "420", a valid but other mode).
MODES = ("npuops_softshare_mode",)
# The least value of an integer variable (what the module or Ansible keyword behind it takes).
LEAST = {
    "npuops_facts_timeout": 1,  # npu_topology_facts: a positive number of seconds
    "npuops_frontend_cpus": 0,  # npu_cpu_plan: a non-negative integer
    "npuops_k8s_pod_devices": 0,  # 0 = every device
    "npuops_k8s_drain_timeout": 1,
    "npuops_k8s_kubelet_start_timeout": 1,
    "npuops_k8s_memory_reserved_node": 0,  # a NUMA node id (null = the module's choice)
    "npuops_vllm_restart_throttle": 0,  # the handler's throttle: 0 = no limit
}
# Documented switches this version cannot act on: name -> (refused value, why). A row goes when
# a role acts on its switch (and the switch's option moves into that role's argument spec).
NOT_YET = {}
_KIND = {list: "a list", tuple: "a list", dict: "a mapping", bool: "a boolean"}


def host_devices(topology):
    """(device ids, device word) of a host's ``npu_topology`` facts."""
    topology = topology or {}
    if vendors.is_gpu_vendor(topology.get("vendor")):
        return sorted(int(g["index"]) for g in topology.get("gpus") or [] if "index" in g), "GPU"
    ids = []
    for npu in topology.get("npus") or []:
        logic = npu.get("logic_id", npu.get("npu_id"))
        if logic is not None:
            ids.append(int(logic))
    return sorted(set(ids)), "NPU"


def _show(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _ids(ids):
    """[0..15] for a run, else the list."""
    if ids and ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 2:
        return "[%d..%d]" % (ids[0], ids[-1])
    return "[%s]" % ", ".join(str(i) for i in ids)


def _type_problem(name, value, option):
    kind = _KIND.get(type(value))
    if option.get("type") != "str" or kind is None:
        return None
    if name in CPULISTS:
        hint = "a cpulist is one string such as '0-3,8' (quote it in YAML)"
    elif isinstance(value, bool):
        hint = "YAML reads yes/no/on/off unquoted as booleans: quote it"
    else:
        hint = "quote it in YAML"
    return "%s: must be a string, got %s %s; %s" % (name, kind, _show(value), hint)


def _mode_problem(name, value):
    """An unquoted 0644 reached Ansible as 420: name both readings when both are modes."""
    readings = []
    if 0 <= value <= 0o7777:
        readings.append("0%o" % value)
    written = str(value)
    if 3 <= len(written) <= 4 and not set(written) - set("01234567"):
        readings.append(written)
    how = "write the mode in quotes"
    if readings:
        how += ", e.g. %s" % " or ".join("'%s'" % r for r in readings)
    if value >= 0 and value <= 0o7777:
        how = "YAML reads an unquoted 0%o as %d; %s" % (value, value, how)
    return "%s: must be a quoted octal mode such as '0750', got the number %d; %s" % (name, value, how)


def _cpus(name, value):
    """The CPU ids of a cpulist variable's value; ParseError naming the variable."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return cpulist.parse(value, name)


def _facts_cpus(text):
    """The CPU ids of a facts cpulist; None when the facts do not know them (the planner and
    the facts' own schema check report unreadable facts)."""
    if not text or not isinstance(text, str):
        return None
    try:
        return set(cpulist.parse(text, "facts"))
    except ParseError:
        return None


def problems(values, spec, topology=None):
    """Every problem of the single variables, in name order (see the module docstring)."""
    out = []
    cpus = {}
    for name in sorted(values):
        value = values[name]
        if value is None or name not in spec:
            continue
        problem = _type_problem(name, value, spec[name])
        if problem:
            out.append(problem)
            continue
        if name in MODES and isinstance(value, int) and not isinstance(value, bool):
            out.append(_mode_problem(name, value))
            continue
        if name in CPULISTS:
            try:
                cpus[name] = _cpus(name, value)
            except ParseError as err:
                out.append("%s (a cpulist such as '0-3,8')" % err)
        if name in LEAST and isinstance(value, int) and not isinstance(value, bool) and value < LEAST[name]:
            out.append("%s: must be %d or more, got %d" % (name, LEAST[name], value))
        if name in NOT_YET and value == NOT_YET[name][0]:
            out.append("%s: %s" % (name, NOT_YET[name][1]))
    if topology is not None:
        out.extend(_against_facts(values, cpus, topology))
    return out


def _against_facts(values, cpus, topology):
    out = []
    cpu = topology.get("cpu") or {}
    online = cpu.get("online")
    online_ids = _facts_cpus(online)
    for name in CPULISTS:
        outside = sorted(set(cpus.get(name) or ()) - online_ids) if online_ids else []
        if outside:
            out.append(
                "%s: CPU%s %s %s not on this host (its online CPUs are %s)"
                % (
                    name,
                    "s" if len(outside) > 1 else "",
                    cpulist.format(outside),
                    "are" if len(outside) > 1 else "is",
                    online,
                )
            )
    reserved = cpus.get("npuops_cpu_reserved")
    if reserved:
        if "npuops_cpu_allowed" in cpus and cpus["npuops_cpu_allowed"]:
            allowed, where = cpus["npuops_cpu_allowed"], "npuops_cpu_allowed (%s)" % values["npuops_cpu_allowed"]
        elif _facts_cpus(cpu.get("allowed")):
            allowed, where = _facts_cpus(cpu["allowed"]), "the CPUs this host allows (%s)" % cpu["allowed"]
        else:
            allowed = None
        if allowed and not set(allowed) - set(reserved):
            out.append(
                "npuops_cpu_reserved: %s covers every CPU of %s: nothing is left to plan"
                % (values["npuops_cpu_reserved"], where)
            )
    devices, word = host_devices(topology)
    npus = values.get("npuops_npus")
    if isinstance(npus, list) and npus:
        ids = [
            int(n)
            for n in npus
            if (isinstance(n, int) and not isinstance(n, bool)) or (isinstance(n, str) and n.isdecimal() and len(n) < 6)
        ]
        unknown = [n for n in ids if n not in devices]
        if unknown:
            out.append(
                "npuops_npus: %s %s %s not on this host (its %ss are %s)"
                % (
                    word if len(unknown) == 1 else word + "s",
                    ", ".join(str(n) for n in unknown),
                    "is" if len(unknown) == 1 else "are",
                    word,
                    _ids(devices),
                )
            )
    nics = values.get("npuops_nics")
    if isinstance(nics, list) and nics and isinstance(topology.get("nics"), list):
        names = sorted(str(n.get("name")) for n in topology["nics"] if isinstance(n, dict))
        unknown = [str(n) for n in nics if str(n) not in names]
        if unknown:
            out.append(
                "npuops_nics: %s %s not an RDMA device of this host (it has %s)"
                % (", ".join(unknown), "is" if len(unknown) == 1 else "are", ", ".join(names) or "none")
            )
    per_pod = values.get("npuops_k8s_pod_devices")
    if isinstance(per_pod, int) and not isinstance(per_pod, bool) and per_pod > len(devices):
        out.append("npuops_k8s_pod_devices: %d is more than the %d %ss of this host" % (per_pod, len(devices), word))
    return out
