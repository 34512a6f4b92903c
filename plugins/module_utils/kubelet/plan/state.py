# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the kubelet would refuse its own state files with a new configuration.

``reset_reasons(after, cpu_state, memory_state, all_cpus, version)`` -> one line per refusal,
empty when the kubelet starts on the files it has (a node already in the target state needs
no reset and no restart). The rules, at v1.26.0 to v1.35.0 (ported, not copied):

- cm/cpumanager/state/state_checkpoint.go ``restoreState``: the checkpoint's policyName must be
  the configured policy;
- cm/cpumanager/policy_static.go ``validateState``: an empty defaultCpuSet is a fresh state
  unless CPUs are assigned; without ``strict-cpu-reservation`` every reserved CPU must be in
  defaultCpuSet; with it (1.32 and later, ``kubelet/model/options``) none may be; no assigned
  cpuset may overlap defaultCpuSet; defaultCpuSet + the assigned CPUs (+ the reserved ones
  under strict) must be exactly the machine's CPUs;
- cm/memorymanager/state/state_checkpoint.go (policyName) and memorymanager/policy_static.go
  ``validateState``: the machine state the checkpoint holds must be the one the kubelet
  computes, whose ``systemReserved`` per NUMA node and memory type is ``reservedMemory``.
  (It also compares each node's total memory with the machine's, which drifts across reboots
  - k/k #131253 - and cannot be judged from here.)
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import options as ko
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import checks as kubelet_checks


def _set(text, source):
    try:
        return set(cpulist.parse(str(text or ""), source))
    except ParseError as err:
        raise PlanError(str(err))


def strict_on(config, version):
    """Whether ``strict-cpu-reservation`` is in force in ``config`` on ``version``."""
    options = (config or {}).get("cpuManagerPolicyOptions")
    if not isinstance(options, dict) or "strict-cpu-reservation" not in options:
        return False
    if version is not None and ko.option_maturity(ko.CPU_OPTIONS, "strict-cpu-reservation", version) is None:
        return False
    return kubelet_checks.go_bool(options["strict-cpu-reservation"]) is True


def _cpu_reasons(after, state, all_cpus, version):
    policy = (after or {}).get("cpuManagerPolicy") or "none"
    if state.get("policy") != policy:
        return [
            "cpuManagerPolicy %s -> %s: cpu_manager_state holds policy %s, which the "
            "kubelet refuses" % (state.get("policy"), policy, state.get("policy"))
        ]
    if policy != "static":
        return []
    reasons = []
    default = _set(state.get("default_cpus"), "cpu_manager_state defaultCpuSet")
    assigned = set()
    for pod, containers in sorted((state.get("entries") or {}).items()):
        for name, cpus in sorted(containers.items()):
            own = _set(cpus, "cpu_manager_state entries[%s][%s]" % (pod, name))
            if own & default:
                reasons.append(
                    "cpu_manager_state: pod %s container %s holds CPUs %s that are "
                    "also in defaultCpuSet" % (pod, name, cpulist.format(sorted(own & default)))
                )
            assigned |= own
    if not default:
        if assigned:
            reasons.append("cpu_manager_state: defaultCpuSet is empty while CPUs are assigned")
        return reasons
    reserved = _set((after or {}).get("reservedSystemCPUs"), "reservedSystemCPUs")
    strict = strict_on(after, version)
    fmt = cpulist.format
    if strict and reserved & default:
        reasons.append(
            "strict-cpu-reservation: reserved CPUs %s are in cpu_manager_state's "
            "defaultCpuSet %s (a checkpoint written without strict); the kubelet "
            "refuses it" % (fmt(sorted(reserved & default)), fmt(sorted(default)))
        )
    elif not strict and not reserved <= default:
        reasons.append(
            "reservedSystemCPUs %s are not all in cpu_manager_state's defaultCpuSet "
            "%s (assigned to pods, or a strict checkpoint): the static policy "
            "refuses it" % (fmt(sorted(reserved)), fmt(sorted(default)))
        )
    known = default | assigned | (reserved if strict else set())
    if all_cpus is not None and not reasons and known != set(all_cpus):
        reasons.append(
            "cpu_manager_state covers CPUs %s, the machine has %s%s"
            % (
                fmt(sorted(known)),
                fmt(sorted(all_cpus)),
                " (the reserved CPUs changed under strict-cpu-reservation)" if strict else "",
            )
        )
    return reasons


def _reserved_memory(after):
    out = {}
    for index, entry in enumerate((after or {}).get("reservedMemory") or []):
        if not isinstance(entry, dict):
            continue
        node = str(entry.get("numaNode"))
        for kind, value in sorted((entry.get("limits") or {}).items()):
            out.setdefault(node, {})[kind] = out.get(node, {}).get(kind, 0) + kubelet_checks.parse_quantity(
                value, "reservedMemory[%d].%s" % (index, kind)
            )
    return out


def _memory_reasons(after, state):
    policy = (after or {}).get("memoryManagerPolicy") or "None"
    if str(state.get("policy")) != policy:
        return [
            "memoryManagerPolicy %s -> %s: memory_manager_state holds policy %s, which "
            "the kubelet refuses" % (state.get("policy"), policy, state.get("policy"))
        ]
    if policy != "Static" or not state.get("nodes"):
        return []
    wanted = _reserved_memory(after)
    reasons = []
    for node, entry in sorted(state["nodes"].items()):
        memory = entry.get("memory") or {}
        for kind in sorted(set(memory) | set(wanted.get(node, {}))):
            have = (memory.get(kind) or {}).get("systemReserved", 0)
            want = wanted.get(node, {}).get(kind, 0)
            if have != want:
                reasons.append(
                    "memory_manager_state reserves %s of %s on NUMA node %s, "
                    "reservedMemory %s: the Static Memory Manager refuses a machine "
                    "state computed with another reservation"
                    % (kubelet_checks.format_quantity(have), kind, node, kubelet_checks.format_quantity(want))
                )
    for node in sorted(set(wanted) - set(state["nodes"])):
        reasons.append("reservedMemory names NUMA node %s, which memory_manager_state lacks" % node)
    return reasons


def reset_reasons(after, cpu_state, memory_state, all_cpus=None, version=None):
    """Why the state files must go before the kubelet starts with ``after`` (list of text).
    ``cpu_state`` / ``memory_state``: the parsed files, None when absent (a fresh start)."""
    reasons = []
    if cpu_state is not None:
        reasons.extend(_cpu_reasons(after, cpu_state, all_cpus, version))
    if memory_state is not None:
        reasons.extend(_memory_reasons(after, memory_state))
    return reasons
