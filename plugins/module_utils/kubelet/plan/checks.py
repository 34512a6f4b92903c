# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks the kubelet runs at start, on the configuration it would read, per version.

``start_errors(config, version, numa_nodes, machine_nodes)`` -> ``[(key, message)]``: what a
kubelet of ``version`` (``kubelet/model/options`` rows) refuses in ``config`` (the effective
KubeletConfiguration: base file + drop-ins) on a host with ``numa_nodes`` NUMA nodes. Ported
(rules, not code) from, at v1.26.0 to v1.35.0:

- pkg/kubelet/apis/config/validation/validation.go: reservedSystemCPUs beside
  systemReservedCgroup / kubeReservedCgroup; the policy-options fields behind their gates;
  memoryManagerPolicy ``None`` / ``Static``;
- cm/cpumanager/policy_options.go ``CheckPolicyOptionAvailable``, ``NewStaticPolicyOptions``
  (values are Go ``strconv.ParseBool`` text; the conflicts), ``ValidateStaticPolicyOptions``;
- cm/topologymanager/policy_options.go (``max-allowable-numa-nodes`` an integer not below 8)
  and topology_manager.go ``NewManager`` (any policy but none on more nodes than the limit);
- cm/memorymanager/memory_manager.go ``validateReservedMemory``: per memory type (memory and
  each hugepages-<size>), the sum of ``reservedMemory`` over the nodes equals kubeReserved +
  systemReserved (+ the hard eviction threshold for memory), every node exists; and
  memorymanager/policy_static.go ``NewPolicyStatic``: some memory reserved;
- cm/container_manager_linux.go / eviction: ``evictionHard`` as the kubelet defaults it
  (``eviction_memory``).

``reservation(config, version)`` is the kubelet's node-allocatable reservation per memory type;
the profile sizes ``reservedMemory`` from it, so both sides use one rule.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import options as ko

_QUANTITY = re.compile(r"^([0-9]{1,15})(?:\.([0-9]{1,9}))?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?\Z")
_FACTOR = {
    None: 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
MI = 2**20
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_HUGEPAGES = re.compile(r"^hugepages-[0-9]{1,6}(Ki|Mi|Gi)\Z")


def parse_quantity(text, source):
    """A Kubernetes memory quantity (``1Gi``, ``500M``, ``1.5Gi``, bytes) -> bytes (int)."""
    match = _QUANTITY.match(str(text).strip()) if text is not None else None
    if match is None:
        raise PlanError("%s: %r is not a memory quantity such as 1Gi or 500Mi" % (source, text))
    whole, frac, unit = match.groups()
    factor = _FACTOR[unit]
    value = int(whole) * factor
    if frac:
        value += -(-int(frac) * factor // 10 ** len(frac))  # rounded up, as the kubelet does
    return value


def format_quantity(value):
    return "%dMi" % (value // MI) if value and value % MI == 0 else str(value)


def go_bool(value):
    """Go's strconv.ParseBool of an option value: True / False, None when it refuses it."""
    text = "true" if value is True else "false" if value is False else str(value)
    return True if text in _TRUE else False if text in _FALSE else None


def _mapping(config, key):
    value = (config or {}).get(key)
    return value if isinstance(value, dict) else {}


def eviction_memory(config, version):
    """``(text, source)``: the hard eviction threshold on memory.available the kubelet counts."""
    hard = (config or {}).get("evictionHard")
    if hard is None:
        return ko.DEFAULT_EVICTION_MEMORY, "the kubelet's default evictionHard"
    if not isinstance(hard, dict):
        raise PlanError("evictionHard: %r is not a mapping" % (hard,))
    if hard.get("memory.available") is not None:
        return str(hard["memory.available"]), "evictionHard.memory.available"
    merge = go_bool((config or {}).get("mergeDefaultEvictionSettings")) is True
    if merge and version is not None and version >= ko.FIELDS["mergeDefaultEvictionSettings"][0]:
        return ko.DEFAULT_EVICTION_MEMORY, "the default merged in by mergeDefaultEvictionSettings"
    return "0", "evictionHard without memory.available (the kubelet counts 0; %s)" % ko.EVICTION_SOURCE


def reservation(config, version):
    """``({type: bytes}, [parts])``: kubeReserved + systemReserved per memory type (memory and
    hugepages-*), plus the hard eviction threshold on memory - the kubelet's
    nodeAllocatableReservation as the Memory Manager reads it."""
    out, parts = {}, []
    for section in ("kubeReserved", "systemReserved"):
        for kind, value in sorted(_mapping(config, section).items()):
            if kind != "memory" and not _HUGEPAGES.match(str(kind)):
                continue
            source = "%s.%s" % (section, kind)
            if str(value).endswith("%"):
                raise PlanError(
                    "%s: %s is a percentage; the Memory Manager needs an absolute quantity" % (source, value)
                )
            out[kind] = out.get(kind, 0) + parse_quantity(value, source)
            parts.append("%s %s" % (source, value))
    text, source = eviction_memory(config, version)
    if text.endswith("%"):
        raise PlanError(
            "%s: %s is a percentage of the node's memory; give an absolute "
            "eviction_hard_memory (npuops_k8s_eviction_hard_memory) so "
            "reservedMemory can match it" % (source, text)
        )
    out["memory"] = out.get("memory", 0) + parse_quantity(text, source)
    parts.append("%s %s" % (source, text))
    return out, parts


def _reserved_memory(config, machine_nodes, errors):
    """{type: bytes} summed over reservedMemory's nodes; errors for nodes the host lacks."""
    total = {}
    entries = (config or {}).get("reservedMemory") or []
    if not isinstance(entries, list):
        errors.append(("reservedMemory", "must be a list of {numaNode, limits}"))
        return total
    for index, entry in enumerate(entries):
        node = (entry or {}).get("numaNode") if isinstance(entry, dict) else None
        if machine_nodes is not None and node not in machine_nodes:
            errors.append(
                (
                    "reservedMemory",
                    "entry %d references NUMA node %r that does not exist on this machine" % (index, node),
                )
            )
        for kind, value in sorted(_mapping(entry, "limits").items()):
            total[kind] = total.get(kind, 0) + parse_quantity(value, "reservedMemory[%d].%s" % (index, kind))
    return total


def _memory_errors(config, version, machine_nodes, errors):
    policy = (config or {}).get("memoryManagerPolicy") or "None"
    if policy not in ko.MEMORY_POLICIES:
        errors.append(("memoryManagerPolicy", "%r is neither None nor Static" % policy))
        return
    if policy != "Static":
        return
    try:
        wanted, dummy = reservation(config, version)
        found = reserved_memory_errors(wanted, config.get("reservedMemory") or [], machine_nodes)
    except PlanError as err:
        errors.append(("reservedMemory", str(err)))
        return
    errors.extend(("reservedMemory", msg) for msg in found)


def reserved_memory_errors(wanted, entries, machine_nodes, static=True):
    """``validateReservedMemory`` and ``NewPolicyStatic``'s check: ``wanted`` {type: bytes} (the
    node-allocatable reservation) against ``entries`` (reservedMemory) over ``machine_nodes``;
    ``static``: the Static policy's own check too (some memory reserved)."""
    errors = []
    have = _reserved_memory({"reservedMemory": entries}, machine_nodes, errors)
    found = [msg for dummy, msg in errors]
    if found:
        return found  # the kubelet stops at the node it does not know
    for kind in sorted(set(wanted) | set(have)):
        if kind != "memory" and not _HUGEPAGES.match(str(kind)):
            continue
        if wanted.get(kind, 0) != have.get(kind, 0):
            found.append(
                "the total %s of %s over the NUMA nodes is not the %s the kubelet "
                "reserves for it (kubeReserved + systemReserved%s)"
                % (
                    format_quantity(have.get(kind, 0)),
                    kind,
                    format_quantity(wanted.get(kind, 0)),
                    " + evictionHard memory.available" if kind == "memory" else "",
                )
            )
    if static and not found and not have.get("memory"):
        found.append("the Static Memory Manager needs some memory reserved for the system")
    return found


def _option_errors(config, field, version, gates, errors):
    options = _mapping(config, field)
    if not options:
        return {}
    gate = ko.FIELD_GATES[field]
    if not ko.gate_enabled(gate, version, gates):
        errors.append((field, "needs the feature gate %s on kubelet %s" % (gate, ko.show(version))))
    values = {}
    for name, value in sorted(options.items()):
        missing = ko.missing_gates(field, name, version, gates)
        if missing is None:
            errors.append(("%s.%s" % (field, name), "kubelet %s does not know this option" % ko.show(version)))
            continue
        for needed in missing:
            if needed != gate:
                errors.append(
                    (
                        "%s.%s" % (field, name),
                        "is %s on kubelet %s and needs the "
                        "feature gate %s" % (ko.option_maturity(field, name, version), ko.show(version), needed),
                    )
                )
        if name == "max-allowable-numa-nodes":
            text = str(value)
            if not re.match(r"^[0-9]{1,4}\Z", text) or int(text) < ko.TOPOLOGY_NODE_LIMIT:
                errors.append(
                    ("%s.%s" % (field, name), "%r is not an integer of at least %d" % (value, ko.TOPOLOGY_NODE_LIMIT))
                )
            else:
                values[name] = int(text)
        elif go_bool(value) is None:
            errors.append(("%s.%s" % (field, name), "%r is not a boolean the kubelet reads" % (value,)))
        else:
            values[name] = go_bool(value)
    return values


def start_errors(config, version, numa_nodes, machine_nodes=None):
    """What a kubelet of ``version`` (None: the oldest known) refuses in ``config`` at start."""
    version = version or ko.OLDEST
    config = config or {}
    gates = _mapping(config, "featureGates")
    errors = []
    reserved = config.get("reservedSystemCPUs")
    if reserved not in (None, ""):
        if config.get("systemReservedCgroup") or config.get("kubeReservedCgroup"):
            errors.append(
                (
                    "reservedSystemCPUs",
                    "cannot be used with systemReservedCgroup or kubeReservedCgroup (%s)" % ko.SRC_VALIDATION,
                )
            )
        try:
            cpulist.parse(str(reserved), "reservedSystemCPUs")
        except ParseError as err:
            errors.append(("reservedSystemCPUs", str(err)))
    for key, allowed in (
        ("cpuManagerPolicy", ko.CPU_POLICIES),
        ("topologyManagerPolicy", ko.TOPOLOGY_POLICIES),
        ("topologyManagerScope", ko.TOPOLOGY_SCOPES),
    ):
        if config.get(key) is not None and config.get(key) not in allowed:
            errors.append((key, "%r is not one of %s" % (config.get(key), ", ".join(allowed))))
    cpu = {}
    if (config.get("cpuManagerPolicy") or "none") == "static":
        cpu = _option_errors(config, ko.CPU_OPTIONS, version, gates, errors)
    topo = _option_errors(config, ko.TOPOLOGY_OPTIONS, version, gates, errors)
    policy = config.get("topologyManagerPolicy") or "none"
    on = set(name for name, value in cpu.items() if value is True)
    if policy == "single-numa-node":
        on.add("topologyManagerPolicy=single-numa-node")
    for first, second, dummy, source in ko.conflicts(version):
        if first in on and second in on:
            errors.append(
                ("cpuManagerPolicyOptions", "%s and %s cannot be used together (%s)" % (first, second, source))
            )
    limit = topo.get("max-allowable-numa-nodes", ko.TOPOLOGY_NODE_LIMIT)
    if policy != "none" and numa_nodes > limit:
        errors.append(
            (
                "topologyManagerPolicy",
                "%s on %d NUMA nodes: the Topology Manager allows %d (%s)" % (policy, numa_nodes, limit, ko.SRC_TM),
            )
        )
    _memory_errors(config, version, machine_nodes, errors)
    return errors
