# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet CPU / Topology / Memory Manager profile of a Kubernetes node, from its plan.

``kubelet_profile(topology, plan, ...)`` -> ``{config, reserved_cpus, irq_cpus, irq_nodes,
banned_cpus, topology_reason, warnings, ...}``; ``config`` holds only the KubeletConfiguration
keys the profile owns:

- ``cpuManagerPolicy: static``; ``cpuManagerPolicyOptions``: ``full-pcpus-only`` where SMT is
  on (a Guaranteed pod then gets whole cores, the kubelet's SMTAlignmentError otherwise) and
  ``strict-cpu-reservation`` (KEP-4540: the reserved CPUs are kept for system daemons and
  interrupts, no pod runs there) where the kubelet is known to have it (1.32+);
- ``reservedSystemCPUs``: every planned IRQ CPU (NPU plans: each NPU's ``irq`` pair; GPU plans:
  the spare CPUs on each paired NIC's node, else its first core) plus the plan's reserved CPUs
  and the user's housekeeping CPUs, widened to whole cores;
- ``topologyManagerPolicy``: the strictest of single-numa-node, restricted, best-effort under
  which the kubelet what-if admits every pod shape of the plan (its instances' devices and
  CPUs, else ``pod_devices`` devices; ``plan/kubelet_policy_choice``), the reason and the
  what-if table in ``topology_reason`` / ``topology_policy_whatif``; ``prefer-closest-numa-nodes``
  with restricted; ``max-allowable-numa-nodes`` past the kubelet's 8 nodes;
  ``topologyManagerScope: pod`` (the pod's containers are aligned together);
- with ``memory_manager``: ``memoryManagerPolicy: Static`` and ``reservedMemory`` on one NUMA
  node whose sum equals kubeReserved + systemReserved + evictionHard memory.available, which
  the kubelet checks at start (values from ``current``, the configuration in effect, or the
  options).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules
from ansible_collections.npuops.fleet.plugins.module_utils.plan import kubelet_policy_choice

MAX_TOPOLOGY_NODES = 8        # the kubelet's topology manager limit without the option
DEFAULT_EVICTION = "100Mi"    # the kubelet's default evictionHard memory.available
_QUANTITY = re.compile(r"^([0-9]{1,15})(?:\.([0-9]{1,9}))?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?\Z")
_FACTOR = {None: 1, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15,
           "E": 10 ** 18, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40,
           "Pi": 2 ** 50, "Ei": 2 ** 60}
MI = 2 ** 20


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
    return "%dMi" % (value // MI) if value % MI == 0 else str(value)


def _cpus(text, source):
    try:
        return cpulist.parse(str(text or ""), source)
    except ParseError as err:
        raise PlanError(str(err))


def _whole_cores(cpus, cores):
    """``cpus`` plus every SMT sibling of each (the core's other threads)."""
    if not cores:
        return set(cpus)
    members = {}
    for cpu, core in cores.items():
        members.setdefault(core, []).append(cpu)
    out = set()
    for cpu in cpus:
        out.update(members.get(cores.get(cpu), [cpu]))
    return out


def _gpu_irq_cpus(plan, topology, node_cpus, cores, allowed):
    """The CPUs a GPU host's NIC IRQs go to: per paired NIC's node, the plan's spare CPUs there,
    else the node's first allowed core."""
    nic_node = dict((n.get("name"), n.get("numa_node")) for n in topology.get("nics") or []
                    if isinstance(n, dict))
    spare = set(_cpus((plan.get("cpu_budget") or {}).get("spare"), "plan cpu_budget spare"))
    out, nodes = set(), set()
    for key in sorted(plan.get("gpus") or {}, key=int):
        node = nic_node.get((plan["gpus"][key] or {}).get("nic"))
        if not isinstance(node, int) or isinstance(node, bool) or node in nodes:
            continue
        on_node = [c for c in node_cpus.get(node, []) if c in allowed]
        if not on_node:
            continue
        nodes.add(node)
        local_spare = sorted(spare.intersection(on_node))
        out.update(local_spare or _whole_cores([on_node[0]], cores))
    return out, nodes


def _npu_irq_cpus(plan):
    out, nodes = set(), set()
    for key, entry in sorted((plan.get("npus") or {}).items()):
        irq = _cpus(entry.get("irq"), "plan npus %s irq" % key)
        out.update(irq)
        if irq:
            nodes.update(n for n in entry.get("numa_nodes") or [] if isinstance(n, int))
    return out, nodes


def _memory(current, options, nodes_with_cpus, irq_nodes, warnings):
    def pick(section, key, option):
        if options.get(option) is not None:
            return options[option], "option %s" % option
        value = (current.get(section) or {}).get(key) if isinstance(current.get(section), dict) else None
        return value, "%s.%s" % (section, key)
    config = {"memoryManagerPolicy": "Static"}
    total = 0
    parts = []
    for section, key, option in (("kubeReserved", "memory", "kube_reserved_memory"),
                                 ("systemReserved", "memory", "system_reserved_memory"),
                                 ("evictionHard", "memory.available", "eviction_hard_memory")):
        value, source = pick(section, key, option)
        if value is None and section == "evictionHard":
            value, source = DEFAULT_EVICTION, "the kubelet's default evictionHard"
        if value is None:
            continue
        if str(value).endswith("%"):
            raise PlanError("%s: %s is a percentage; the Memory Manager needs an absolute "
                            "quantity to size reservedMemory" % (source, value))
        total += parse_quantity(value, source)
        parts.append("%s %s" % (source, value))
        if options.get(option) is not None:
            config.setdefault(section, {})[key] = str(value)
    if not any(s.startswith("kubeReserved") or s.startswith("systemReserved") or "reserved" in s
               for s in parts):
        warnings.append("Memory Manager: neither kubeReserved nor systemReserved memory is set; "
                        "reservedMemory holds only the eviction threshold")
    node = options.get("memory_reserved_node")
    if node is None:
        node = min(irq_nodes) if irq_nodes else min(nodes_with_cpus)
    config["reservedMemory"] = [{"numaNode": int(node), "limits": {"memory": format_quantity(total)}}]
    reason = "reservedMemory %s on NUMA node %s = %s" % (format_quantity(total), node, " + ".join(parts))
    return config, reason


def _version_at_least(version, major, minor):
    match = re.match(r"^v?([0-9]{1,3})\.([0-9]{1,3})", str(version or ""))
    return bool(match) and (int(match.group(1)), int(match.group(2))) >= (major, minor)


def kubelet_profile(topology, plan, housekeeping_cpus=None, pod_devices=None,
                    memory_manager=False, current=None, kubelet_version=None,
                    strict_cpu_reservation=None, memory=None):
    """The profile (see the module doc). ``memory``: the Memory Manager options
    (kube_reserved_memory, system_reserved_memory, eviction_hard_memory, memory_reserved_node)."""
    if not isinstance(topology, dict) or not isinstance(plan, dict):
        raise PlanError("kubelet profile: topology and plan must be the facts and the npu_cpu_plan result")
    if plan.get("skipped"):
        raise PlanError("kubelet profile: the plan was skipped (%s); plan with policy strict"
                        % plan.get("reason"))
    warnings = []
    node_cpus = dict((n, list(c)) for n, c in rules.node_cpus(topology).items())
    allowed = set(_cpus((topology.get("cpu") or {}).get("allowed") or
                        (topology.get("cpu") or {}).get("online"), "topology cpu.allowed"))
    cores = rules.smt_cores(topology)
    tpc = (topology.get("cpu") or {}).get("threads_per_core")
    smt = bool(cores) or (isinstance(tpc, int) and tpc > 1)
    if smt and not cores:
        warnings.append("SMT is on (%s threads per core) but the siblings are unknown: reserved "
                        "CPUs are not widened to whole cores; check them against "
                        "thread_siblings_list" % tpc)
    if plan.get("npus"):
        irq, irq_nodes = _npu_irq_cpus(plan)
    else:
        irq, irq_nodes = _gpu_irq_cpus(plan, topology, node_cpus, cores, allowed)
    extra = set(_cpus((plan.get("cpu_budget") or {}).get("reserved"), "plan cpu_budget reserved"))
    extra.update(_cpus(housekeeping_cpus, "housekeeping_cpus"))
    outside = sorted((irq | extra) - allowed)
    if outside:
        raise PlanError("reservedSystemCPUs: %s outside the host's CPUs %s"
                        % (cpulist.format(outside), cpulist.format(sorted(allowed))))
    reserved = _whole_cores(irq | extra, cores) & allowed
    if not reserved:
        reserved = _whole_cores([min(allowed)], cores)
        warnings.append("the plan has no IRQ or reserved CPUs; the static policy needs some: "
                        "reserved the first core %s" % cpulist.format(sorted(reserved)))
    cpu_options = {}
    if smt:
        cpu_options["full-pcpus-only"] = "true"
    strict = strict_cpu_reservation
    if strict is None:
        strict = _version_at_least(kubelet_version, 1, 32)
        if not strict:
            warnings.append("strict-cpu-reservation (KEP-4540) left out: kubelet version %s is "
                            "not known to be 1.32 or later; Burstable pods may run on the "
                            "reserved (IRQ) CPUs" % (kubelet_version or "unknown"))
    if strict:
        cpu_options["strict-cpu-reservation"] = "true"
    choice = kubelet_policy_choice.choose(topology, plan, reserved, pod_devices, full_pcpus_only=smt,
                                          version=kubelet_version, closest_numa=True)
    policy, reason = choice["policy"], choice["reason"]
    tm_options = {}
    if policy == "restricted":
        tm_options["prefer-closest-numa-nodes"] = "true"
    nodes_with_cpus = sorted(n for n, c in node_cpus.items() if c)
    if len(node_cpus) > MAX_TOPOLOGY_NODES:
        tm_options["max-allowable-numa-nodes"] = str(len(node_cpus))
    config = {"cpuManagerPolicy": "static",
              "reservedSystemCPUs": cpulist.format(sorted(reserved)),
              "topologyManagerPolicy": policy,
              "topologyManagerScope": "pod"}
    if cpu_options:
        config["cpuManagerPolicyOptions"] = cpu_options
    if tm_options:
        config["topologyManagerPolicyOptions"] = tm_options
    memory_reason = None
    if memory_manager:
        mem_config, memory_reason = _memory(current or {}, memory or {}, nodes_with_cpus or [0],
                                            irq_nodes, warnings)
        config.update(mem_config)
    free = dict((str(n), len([c for c in cpus if c in allowed and c not in reserved]))
                for n, cpus in sorted(node_cpus.items()))
    return {"config": config,
            "reserved_cpus": config["reservedSystemCPUs"],
            "irq_cpus": cpulist.format(sorted(irq)),
            "irq_nodes": sorted(irq_nodes),
            "banned_cpus": cpulist.format(sorted(allowed - reserved)),
            "exclusive_cpus_per_node": free,
            "topology_reason": reason,
            "device_groups": [{"name": row["name"], "numa_nodes": row["device_numa_nodes"]}
                              for row in choice["shapes"] if row["device_numa_nodes"] is not None],
            "topology_policy_whatif": choice["shapes"],
            "memory_reason": memory_reason,
            "smt": smt,
            "warnings": warnings}


def irq_targets_on_reserved(targets, reserved, node_cpus):
    """``(targets, warnings)``: IRQ targets (apply/irq.plan_targets) moved onto the kubelet's
    reserved CPUs of their NUMA node, so no IRQ lands on a CPU a pod gets exclusively. A target
    already on reserved CPUs stays; the others of a device take that node's reserved CPUs in
    turn; a node without reserved CPUs keeps its targets, with a warning."""
    reserved = set(reserved)
    node_of = {}
    for node, cpus in node_cpus.items():
        for cpu in cpus:
            node_of[cpu] = node
    out, warnings, turn = [], [], {}
    for target in targets:
        cpus = list(target["cpus"])
        if set(cpus) <= reserved:
            out.append(target)
            continue
        node = node_of.get(cpus[0]) if cpus else None
        local = sorted(c for c in reserved if node_of.get(c) == node)
        if not local:
            warnings.append("IRQ %s (%s): no reserved CPU on NUMA node %s; left on %s"
                            % (target["irq"], target["device"], node, cpulist.format(cpus)))
            out.append(target)
            continue
        index = turn.get((target["device"], node), 0)
        turn[(target["device"], node)] = index + 1
        out.append(dict(target, cpus=[local[index % len(local)]]))
    return out, warnings
