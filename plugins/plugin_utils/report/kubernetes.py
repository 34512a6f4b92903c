# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a Kubernetes node's pods really got their CPUs, from the facts' ``kubernetes`` section.

``kubernetes_audit(facts, plan=None, profile=None)`` -> ``{node, pods, findings}`` or None on a
host without a kubelet:

- ``pods``: one row per pod with NPUs/GPUs (the device checkpoint and the DRA claims,
  ``report/kubernetes_devices.py``): its exclusive CPUs (the CPU Manager's state, every
  container), their NUMA nodes, its devices, the Ascend chips it really got (the plugin's
  Allocate answer the kubelet kept, else its ids), their NUMA nodes (the chips' own from the
  facts, else the kubelet's), the kubelet's hint nodes, its DRA devices, and ``aligned`` (the
  CPUs' nodes lie within the devices' nodes);
- ``node``: whether the profile is in effect (the effective kubelet config holds its keys, and
  the CPU Manager state was written under its policy), whether ``reservedSystemCPUs`` covers the
  plan's IRQ CPUs, whether the device plugin reports NUMA topology (TopologyInfo);
- ``findings``: ``{kind, pod, msg}`` - ``pod_cpus_off_devices_node`` names the pod UID;
  ``pod_shared_cpus`` (a device pod without exclusive CPUs), ``profile_not_in_effect``,
  ``irq_cpus_not_reserved``, ``device_plugin_no_numa``; ``device_ids_not_chips`` (Volcano
  mode), ``device_chips_unverified``, ``dra_devices_not_aligned``, ``device_record_unreadable``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus.nodemap import NodeMap
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import kubernetes_devices

_PROFILE_KEYS = (
    "cpuManagerPolicy",
    "cpuManagerPolicyOptions",
    "reservedSystemCPUs",
    "topologyManagerPolicy",
    "topologyManagerScope",
    "topologyManagerPolicyOptions",
    "memoryManagerPolicy",
    "reservedMemory",
)


def cpus(text):
    out = set()
    for part in str(text or "").split(","):
        part = part.strip()
        if part:
            lo, dummy, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def fmt(ids):
    ids, runs = sorted(ids), []
    for cpu in ids:
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in runs)


def _node_of(facts):
    return NodeMap(
        dict((int(node), cpus(text)) for node, text in ((facts.get("cpu") or {}).get("numa_nodes") or {}).items())
    )


def _pods(kube, facts, node_of):
    state = kube.get("cpu_manager_state") or {}
    rows = kubernetes_devices.device_rows(kube, facts)
    out = []
    for uid in sorted(rows):
        row = rows[uid]
        exclusive = set()
        for cpuset in ((state.get("entries") or {}).get(uid) or {}).values():
            exclusive |= cpus(cpuset)
        exclusive |= cpus((state.get("pod_entries") or {}).get(uid))
        cpu_nodes = sorted(node_of.nodes(exclusive))
        device_nodes, hinted = row["device_nodes"], row.pop("hinted")
        row.update(
            {
                "exclusive_cpus": fmt(exclusive),
                "cpu_nodes": cpu_nodes,
                "numa_hints": hinted if row["devices"] else None,
                "aligned": bool(exclusive) and bool(device_nodes) and set(cpu_nodes) <= set(device_nodes),
            }
        )
        out.append(row)
    return out


def _subset(want, have):
    if isinstance(want, dict):
        return isinstance(have, dict) and all(_subset(v, have.get(k)) for k, v in want.items())
    return want == have


def kubernetes_audit(facts, plan=None, profile=None):
    kube = (facts or {}).get("kubernetes")
    if not kube:
        return None
    node_of = _node_of(facts)
    effective = (kube.get("kubelet") or {}).get("effective") or {}
    state = kube.get("cpu_manager_state") or {}
    findings = []
    pods = _pods(kube, facts, node_of)
    for row in pods:
        if not row["exclusive_cpus"]:
            findings.append(
                {
                    "kind": "pod_shared_cpus",
                    "pod": row["pod"],
                    "msg": "pod %s holds %s but no exclusive CPUs: its threads float over the "
                    "shared pool (not Guaranteed, or a fractional CPU request)"
                    % (row["pod"], kubernetes_devices.device_names(row)),
                }
            )
        elif not row["aligned"] and row["device_nodes"]:
            findings.append(
                {
                    "kind": "pod_cpus_off_devices_node",
                    "pod": row["pod"],
                    "msg": "pod %s: exclusive CPUs %s on NUMA node(s) %s, its devices %s on "
                    "node(s) %s"
                    % (
                        row["pod"],
                        row["exclusive_cpus"],
                        ",".join(map(str, row["cpu_nodes"])),
                        kubernetes_devices.device_names(row),
                        ",".join(map(str, row["device_nodes"])),
                    ),
                }
            )
    wanted = dict((k, v) for k, v in ((profile or {}).get("config") or {}).items() if k in _PROFILE_KEYS)
    if not wanted:
        wanted = {"cpuManagerPolicy": "static"}
    missing = sorted(k for k, v in wanted.items() if not _subset(v, effective.get(k)))
    state_policy = state.get("policy")
    in_effect = not missing and (not state or state_policy == effective.get("cpuManagerPolicy"))
    if not in_effect:
        findings.append(
            {
                "kind": "profile_not_in_effect",
                "pod": None,
                "msg": "the kubelet profile is not in effect: %s"
                % (
                    "keys %s differ in the kubelet configuration" % ", ".join(missing)
                    if missing
                    else "cpu_manager_state was written under policy %s (the kubelet has not "
                    "restarted with the new policy)" % state_policy
                ),
            }
        )
    irq = set()
    for entry in ((plan or {}).get("npus") or {}).values():
        irq |= cpus(entry.get("irq"))
    if profile and not irq:
        irq = cpus(profile.get("irq_cpus"))
    reserved = cpus(effective.get("reservedSystemCPUs"))
    uncovered = sorted(irq - reserved)
    if uncovered:
        findings.append(
            {
                "kind": "irq_cpus_not_reserved",
                "pod": None,
                "msg": "IRQ CPUs %s are not in reservedSystemCPUs (%s): pods may get them "
                "exclusively and share them with NPU/NIC interrupts"
                % (fmt(uncovered), effective.get("reservedSystemCPUs") or "unset"),
            }
        )
    no_numa = sorted(
        set(
            r
            for row in pods
            if not row["numa_hints"]
            for r in row["resources"]
            if kubernetes_devices.is_device_resource(r)
        )
    )
    if no_numa:
        findings.append(
            {
                "kind": "device_plugin_no_numa",
                "pod": None,
                "msg": "the device plugin of %s reports no NUMA topology: the Topology Manager "
                "gets no device hints (MindCluster's Ascend device plugin sends "
                "TopologyInfo since commit 9d4acd8e, native scheduler only)" % ", ".join(no_numa),
            }
        )
    findings.extend(kubernetes_devices.device_findings(dict((row["pod"], row) for row in pods)))
    findings.extend(kubernetes_devices.record_findings(kube))
    node = {
        "profile_in_effect": in_effect,
        "cpu_manager_policy": effective.get("cpuManagerPolicy"),
        "state_policy": state_policy,
        "topology_manager_policy": effective.get("topologyManagerPolicy"),
        "reserved_cpus": effective.get("reservedSystemCPUs"),
        "reserved_covers_irq_cpus": not uncovered if irq else None,
        "device_plugin_numa": (not no_numa) if pods else None,
        "device_pods": len(pods),
        "dra_pods": sum(1 for row in pods if row["dra"]),
        "remapped_pods": sum(1 for row in pods if row["remapped"]),
        "misaligned_pods": sum(1 for f in findings if f["kind"] == "pod_cpus_off_devices_node"),
    }
    return {"node": node, "pods": pods, "findings": findings}


# kind -> (severity, title, fix) of the fleet report's problem rows
FINDING_ROWS = {
    "pod_cpus_off_devices_node": (
        "warning",
        "pod CPUs off its devices' NUMA node",
        "apply the kubelet profile (site.yml with npuops_k8s_node: true, role k8s_node: "
        "static CPU Manager, Topology Manager scope pod) and recreate the pod",
    ),
    "pod_shared_cpus": (
        "warning",
        "device pod without exclusive CPUs",
        "give the pod Guaranteed QoS with whole-CPU requests equal to its limits, so the static "
        "CPU Manager gives it exclusive CPUs",
    ),
    "profile_not_in_effect": (
        "warning",
        "kubelet CPU/Topology Manager profile not in effect",
        "run site.yml with npuops_k8s_node: true (role k8s_node; a policy change drains the "
        "node and resets the kubelet's state files, docs/kubernetes.md)",
    ),
    "irq_cpus_not_reserved": (
        "warning",
        "IRQ CPUs not in reservedSystemCPUs",
        "run the k8s_node role: reservedSystemCPUs takes every planned IRQ CPU, so no pod gets them exclusively",
    ),
    "device_plugin_no_numa": (
        "info",
        "device plugin reports no NUMA topology",
        "upgrade the Ascend device plugin to a MindCluster release that reports TopologyInfo "
        "per NPU, so the Topology Manager gets device hints",
    ),
}
FINDING_ROWS.update(kubernetes_devices.DEVICE_FINDING_ROWS)


def kubernetes_rows(host):
    """``(severity, kind, title, evidence, fix)`` per finding of a host's ``kubernetes`` audit
    (``host`` as ``analyse_host`` makes it); nothing on hosts without a kubelet."""
    audit = host.get("kubernetes")
    rows = []
    for finding in (audit or {}).get("findings") or []:
        severity, title, fix = FINDING_ROWS.get(finding.get("kind"), ("info", str(finding.get("kind")), "-"))
        rows.append((severity, str(finding.get("kind")), title, str(finding.get("msg")), fix))
    return rows
