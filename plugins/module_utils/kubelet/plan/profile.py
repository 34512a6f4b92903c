# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet CPU / Topology / Memory Manager profile of a Kubernetes node, from its plan.

``kubelet_profile(topology, plan, ...)`` -> ``{config, reserved_cpus, irq_cpus, irq_nodes,
banned_cpus, topology_reason, warnings, ...}``; ``config`` holds only the KubeletConfiguration
keys the profile owns:

Every option is written only where the node's kubelet accepts it: ``kubelet/model/options``
is the one table of what each version knows and which feature gate it needs. An option behind
a gate that is off by default is left out with a warning, or written with its gate turned on
when ``alpha_gates`` is set; with the version unknown only what every kubelet from 1.26
accepts is written.

- ``cpuManagerPolicy: static``; ``cpuManagerPolicyOptions``: ``full-pcpus-only`` where SMT is
  on (a Guaranteed pod then gets whole cores, the kubelet's SMTAlignmentError otherwise) and
  ``strict-cpu-reservation`` (KEP-4540: the reserved CPUs are kept for system daemons and
  interrupts, no pod runs there): beta from 1.33, alpha (gated) on 1.32;
- ``reservedSystemCPUs``: every planned IRQ CPU (NPU plans: each NPU's ``irq`` pair; GPU plans:
  the spare CPUs on each paired NIC's node, else its first core) plus the plan's reserved CPUs
  and the user's housekeeping CPUs, widened to whole cores;
- ``topologyManagerPolicy``: the strictest of single-numa-node, restricted, best-effort under
  which the kubelet what-if admits every pod shape of the plan (its instances' devices and
  CPUs, else ``pod_devices`` devices; ``kubelet/plan/policy_choice``), the reason and the
  what-if table in ``topology_reason`` / ``topology_policy_whatif``; ``prefer-closest-numa-nodes``
  with restricted (alpha on 1.26-1.27); ``max-allowable-numa-nodes`` past the kubelet's 8
  nodes (1.31 and later; before, ``none`` with a warning);
  ``topologyManagerScope: pod`` (the pod's containers are aligned together);
- with ``memory_manager``: ``memoryManagerPolicy: Static`` and ``reservedMemory`` on one NUMA
  node holding, per memory type (memory, hugepages-<size>), what the kubelet reserves:
  kubeReserved + systemReserved (+ the hard eviction threshold as the kubelet defaults it,
  ``kubelet/plan/checks.reservation``), which it checks at start.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.cpus.nodemap import NodeMap
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import options as ko
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.checks import (
    format_quantity,
    parse_quantity,
    reservation,
)
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import policy_choice as kubelet_policy_choice


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


def _budget(plan):
    budget = plan.get("cpu_budget") or {}
    if not isinstance(budget, dict):
        raise PlanError("plan cpu_budget: %r is not a mapping of cpulists" % (budget,))
    return budget


def _gpu_irq_cpus(plan, topology, node_cpus, cores, allowed):
    """The CPUs a GPU host's NIC IRQs go to: per paired NIC's node, the plan's spare CPUs there,
    else the node's first allowed core."""
    nic_node = dict((n.get("name"), n.get("numa_node")) for n in topology.get("nics") or [] if isinstance(n, dict))
    spare = set(_cpus(_budget(plan).get("spare"), "plan cpu_budget spare"))
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


def _memory(current, options, nodes_with_cpus, irq_nodes, version, warnings):
    """The Memory Manager keys: Static, and reservedMemory on one NUMA node holding, per memory
    type, exactly what the kubelet reserves (``checks.reservation``)."""
    config = {"memoryManagerPolicy": "Static"}
    effective = dict(current)
    for section, key, option in (
        ("kubeReserved", "memory", "kube_reserved_memory"),
        ("systemReserved", "memory", "system_reserved_memory"),
        ("evictionHard", "memory.available", "eviction_hard_memory"),
    ):
        if options.get(option) is None:
            continue
        parse_quantity(options[option], "option %s" % option)
        merged = dict(effective.get(section) or {}) if isinstance(effective.get(section), dict) else {}
        merged[key] = str(options[option])
        effective[section] = merged
        config.setdefault(section, {})[key] = str(options[option])
    try:
        total, parts = reservation(effective, version)
    except PlanError as err:
        raise PlanError("Memory Manager: %s" % err)
    if not any(p.startswith("kubeReserved.memory") or p.startswith("systemReserved.memory") for p in parts):
        warnings.append(
            "Memory Manager: neither kubeReserved nor systemReserved memory is set; "
            "reservedMemory holds only the eviction threshold"
        )
    if not total.get("memory"):
        raise PlanError(
            "Memory Manager: kubeReserved + systemReserved + the eviction threshold "
            "is 0 (%s); the Static policy refuses to start without memory reserved "
            "for the system: give kube_reserved_memory (npuops_k8s_kube_reserved_memory)" % " + ".join(parts)
        )
    node = options.get("memory_reserved_node")
    if node is None:
        node = min(irq_nodes) if irq_nodes else min(nodes_with_cpus)
    limits = dict((kind, format_quantity(value)) for kind, value in sorted(total.items()) if value)
    config["reservedMemory"] = [{"numaNode": int(node), "limits": limits}]
    reason = "reservedMemory %s on NUMA node %s = %s" % (
        ", ".join("%s %s" % (k, v) for k, v in sorted(limits.items())),
        node,
        " + ".join(parts),
    )
    return config, reason


def _option(field, name, version, gates, alpha_gates, warnings, added, explicit=False):
    """Whether the profile writes option ``name`` of ``field`` for a kubelet of ``version``
    (None: unknown) with the node's ``gates``; the gates it needs go into ``added`` when
    ``alpha_gates`` allows it, else the option is left out with a warning (``explicit``: the
    user asked for it, so that is an error instead)."""
    what = "%s %s" % (field, name)

    def refuse(msg):
        if explicit:
            raise PlanError("%s: %s" % (what, msg))
        warnings.append("%s left out: %s" % (what, msg))
        return False

    if version is None:
        if ko.conservative(field, name):
            return True
        return refuse(
            "the kubelet's version is unknown and not every kubelet from %s accepts "
            "it; give npuops_k8s_kubelet_version" % ko.show(ko.OLDEST)
        )
    missing = ko.missing_gates(field, name, version, gates)
    if missing is None:
        first = ko.OPTIONS[(field, name)]["steps"][0][0]
        return refuse(
            "kubelet %s does not know it (from %s; %s)" % (ko.show(version), ko.show(first), ko.row_source(field, name))
        )
    if not missing:
        return True
    pinned = [g for g in missing if (gates or {}).get(g) is not None]
    if pinned:
        return refuse("the node sets the feature gate %s off" % ", ".join(pinned))
    if not alpha_gates:
        return refuse(
            "kubelet %s has it %s behind the feature gate %s; set npuops_k8s_alpha_gates "
            "(alpha_gates) to turn it on"
            % (ko.show(version), ko.option_maturity(field, name, version), ", ".join(missing))
        )
    added.update(missing)
    return True


def kubelet_profile(
    topology,
    plan,
    housekeeping_cpus=None,
    pod_devices=None,
    memory_manager=False,
    current=None,
    kubelet_version=None,
    strict_cpu_reservation=None,
    memory=None,
    alpha_gates=False,
):
    """The profile (see the module doc). ``memory``: the Memory Manager options
    (kube_reserved_memory, system_reserved_memory, eviction_hard_memory, memory_reserved_node).
    ``current``: the kubelet configuration in effect without the profile's own drop-in (its
    featureGates and reserved memory are read). ``kubelet_version``: text or ``(1, 33)``; None
    writes only what every kubelet from 1.26 accepts. ``alpha_gates``: turn on the feature gates
    an option needs on that version rather than leave it out."""
    if not isinstance(topology, dict) or not isinstance(plan, dict):
        raise PlanError("kubelet profile: topology and plan must be the facts and the npu_cpu_plan result")
    if plan.get("skipped"):
        raise PlanError("kubelet profile: the plan was skipped (%s); plan with policy strict" % plan.get("reason"))
    warnings = []
    node_cpus = dict((n, list(c)) for n, c in rules.node_cpus(topology).items())
    allowed = set(
        _cpus(
            (topology.get("cpu") or {}).get("allowed") or (topology.get("cpu") or {}).get("online"),
            "topology cpu.allowed",
        )
    )
    cores = rules.smt_cores(topology)
    tpc = (topology.get("cpu") or {}).get("threads_per_core")
    smt = bool(cores) or (isinstance(tpc, int) and tpc > 1)
    if smt and not cores:
        warnings.append(
            "SMT is on (%s threads per core) but the siblings are unknown: reserved "
            "CPUs are not widened to whole cores; check them against "
            "thread_siblings_list" % tpc
        )
    if plan.get("npus"):
        irq, irq_nodes = _npu_irq_cpus(plan)
    else:
        irq, irq_nodes = _gpu_irq_cpus(plan, topology, node_cpus, cores, allowed)
    extra = set(_cpus(_budget(plan).get("reserved"), "plan cpu_budget reserved"))
    extra.update(_cpus(housekeeping_cpus, "housekeeping_cpus"))
    outside = sorted((irq | extra) - allowed)
    if outside:
        raise PlanError(
            "reservedSystemCPUs: %s outside the host's CPUs %s"
            % (cpulist.format(outside), cpulist.format(sorted(allowed)))
        )
    reserved = _whole_cores(irq | extra, cores) & allowed
    if not reserved:
        reserved = _whole_cores([min(allowed)], cores)
        warnings.append(
            "the plan has no IRQ or reserved CPUs; the static policy needs some: "
            "reserved the first core %s" % cpulist.format(sorted(reserved))
        )
    version = ko.parse_version(kubelet_version)
    if kubelet_version and version is None:
        raise PlanError("kubelet_version %r: not a version such as v1.33.2" % (kubelet_version,))
    if version is None:
        warnings.append(
            "kubelet version unknown: the profile holds only what every kubelet "
            "from %s accepts; give npuops_k8s_kubelet_version" % ko.show(ko.OLDEST)
        )
    elif version > ko.NEWEST:
        warnings.append(
            "kubelet %s is newer than the newest this collection knows (%s): judged "
            "by %s's rules" % (ko.show(version), ko.show(ko.NEWEST), ko.show(ko.NEWEST))
        )
        version = ko.NEWEST
    elif version < ko.OLDEST:
        raise PlanError("kubelet %s: the profile supports kubelets from %s" % (ko.show(version), ko.show(ko.OLDEST)))
    current = current or {}
    gates = current.get("featureGates") if isinstance(current.get("featureGates"), dict) else {}
    added = set()

    def want(field, name, explicit=False):
        return _option(field, name, version, gates, alpha_gates, warnings, added, explicit)

    cpu_options = {}
    if smt and want(ko.CPU_OPTIONS, "full-pcpus-only"):
        cpu_options["full-pcpus-only"] = "true"
    if strict_cpu_reservation is None:
        if want(ko.CPU_OPTIONS, "strict-cpu-reservation"):
            cpu_options["strict-cpu-reservation"] = "true"
        else:
            warnings.append(
                "without strict-cpu-reservation (KEP-4540) Burstable and BestEffort "
                "pods may run on the reserved (IRQ) CPUs"
            )
    elif strict_cpu_reservation and want(ko.CPU_OPTIONS, "strict-cpu-reservation", explicit=True):
        cpu_options["strict-cpu-reservation"] = "true"
    choice = kubelet_policy_choice.choose(
        topology, plan, reserved, pod_devices, full_pcpus_only=smt, version=kubelet_version, closest_numa=True
    )
    policy, reason = choice["policy"], choice["reason"]
    tm_options = {}
    if policy == "restricted" and want(ko.TOPOLOGY_OPTIONS, "prefer-closest-numa-nodes"):
        tm_options["prefer-closest-numa-nodes"] = "true"
    nodes_with_cpus = sorted(n for n, c in node_cpus.items() if c)
    if len(node_cpus) > ko.TOPOLOGY_NODE_LIMIT and policy != "none":
        if want(ko.TOPOLOGY_OPTIONS, "max-allowable-numa-nodes"):
            tm_options["max-allowable-numa-nodes"] = str(len(node_cpus))
        else:
            warnings.append(
                "topologyManagerPolicy none instead of %s: the Topology Manager "
                "refuses any other policy on %d NUMA nodes (more than %d) without "
                "max-allowable-numa-nodes (%s)" % (policy, len(node_cpus), ko.TOPOLOGY_NODE_LIMIT, ko.SRC_TM)
            )
            reason = "%d NUMA nodes on kubelet %s: none (the kubelet's limit is %d); was: %s" % (
                len(node_cpus),
                ko.show(version),
                ko.TOPOLOGY_NODE_LIMIT,
                reason,
            )
            policy = "none"
            tm_options.pop("prefer-closest-numa-nodes", None)
    config = {
        "cpuManagerPolicy": "static",
        "reservedSystemCPUs": cpulist.format(sorted(reserved)),
        "topologyManagerPolicy": policy,
        "topologyManagerScope": "pod",
    }
    if cpu_options:
        config["cpuManagerPolicyOptions"] = cpu_options
    if tm_options:
        config["topologyManagerPolicyOptions"] = tm_options
    if added:
        merged = dict(gates)
        merged.update((gate, True) for gate in added)
        config["featureGates"] = dict(sorted(merged.items()))
    memory_reason = None
    if memory_manager:
        mem_config, memory_reason = _memory(current, memory or {}, nodes_with_cpus or [0], irq_nodes, version, warnings)
        config.update(mem_config)
    free = dict(
        (str(n), len([c for c in cpus if c in allowed and c not in reserved])) for n, cpus in sorted(node_cpus.items())
    )
    return {
        "config": config,
        "reserved_cpus": config["reservedSystemCPUs"],
        "irq_cpus": cpulist.format(sorted(irq)),
        "irq_nodes": sorted(irq_nodes),
        "banned_cpus": cpulist.format(sorted(allowed - reserved)),
        "exclusive_cpus_per_node": free,
        "topology_reason": reason,
        "device_groups": [
            {"name": row["name"], "numa_nodes": row["device_numa_nodes"]}
            for row in choice["shapes"]
            if row["device_numa_nodes"] is not None
        ],
        "topology_policy_whatif": choice["shapes"],
        "memory_reason": memory_reason,
        "smt": smt,
        "kubelet_version": ko.show(version) if version else None,
        "feature_gates_added": sorted(added),
        "warnings": warnings,
    }


def irq_targets_on_reserved(targets, reserved, node_cpus):
    """``(targets, warnings)``: IRQ targets (apply/irq.plan_targets) moved onto the kubelet's
    reserved CPUs of their NUMA node, so no IRQ lands on a CPU a pod gets exclusively. A target
    already on reserved CPUs stays; the others of a device take that node's reserved CPUs in
    turn; a node without reserved CPUs keeps its targets, with a warning."""
    reserved = set(reserved)
    node_of = NodeMap(node_cpus)
    out, warnings, turn = [], [], {}
    for target in targets:
        cpus = list(target["cpus"])
        if set(cpus) <= reserved:
            out.append(target)
            continue
        node = node_of.get(cpus[0]) if cpus else None
        local = sorted(c for c in reserved if node_of.get(c) == node)
        if not local:
            warnings.append(
                "IRQ %s (%s): no reserved CPU on NUMA node %s; left on %s"
                % (target["irq"], target["device"], node, cpulist.format(cpus))
            )
            out.append(target)
            continue
        index = turn.get((target["device"], node), 0)
        turn[(target["device"], node)] = index + 1
        out.append(dict(target, cpus=[local[index % len(local)]]))
    return out, warnings
