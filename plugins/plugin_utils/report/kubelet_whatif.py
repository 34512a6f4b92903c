# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet what-if in the fleet report: per Kubernetes node and per pod shape, whether the
node's kubelet admits the pod and which CPUs and NUMA nodes it gets.

``whatif_audit(facts, plan, instances, pod_shapes)`` -> None on a host without a kubelet, else::

    kubelet: {version, cpu_manager_policy, topology_manager_policy, full_pcpus_only,
              distribute_cpus_across_numa, prefer_closest_numa_nodes, reserved_cpus, merge_rule}
    shapes: [{name, source, devices, kind, cpus,
              now: {admitted, cpus, numa_nodes, reason},      # beside the pods running now
              empty: {admitted, cpus, numa_nodes, reason}}]   # on the node with no pod
    error: why no shape could be run, or None

The shapes are the host's ``npuops_vllm_instances`` (each instance's devices, the CPUs the plan
gives them less the kubelet's reserved CPUs; ``kubelet/plan/policy_choice.pod_shapes``) and the
role's ``npuops_audit_pod_shapes`` ({name, devices: count or [ids], cpus}). The node's settings
are its effective kubelet configuration (``facts.kubernetes.kubelet.effective``) and version;
"now" takes away the CPUs the CPU Manager state gave pods and the devices the device checkpoint
holds (by the NUMA node the device plugin reported for them).

``whatif_markdown`` and the page's ``templates/sections.html.j2``: the section of the two
pages (one row per host shape and pod shape; ``whatif_rows``, ``HEADERS``, ``INTRO``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import merge as kubelet_merge
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import policy_choice as kubelet_policy_choice
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import whatif as kubelet_whatif
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules

SHAPES_VARIABLE = "npuops_audit_pod_shapes"
_TRUE = ("true", "True", True)


def _options(effective, key):
    value = effective.get(key)
    return value if isinstance(value, dict) else {}


def _settings(kube):
    effective = (kube.get("kubelet") or {}).get("effective") or {}
    version = (kube.get("kubelet") or {}).get("version")
    return {
        "version": version,
        "cpu_manager_policy": str(effective.get("cpuManagerPolicy") or "none"),
        "topology_manager_policy": str(effective.get("topologyManagerPolicy") or "none"),
        "full_pcpus_only": _options(effective, "cpuManagerPolicyOptions").get("full-pcpus-only") in _TRUE,
        "distribute_cpus_across_numa": _options(effective, "cpuManagerPolicyOptions").get("distribute-cpus-across-numa")
        in _TRUE,
        "prefer_closest_numa_nodes": _options(effective, "topologyManagerPolicyOptions").get(
            "prefer-closest-numa-nodes"
        )
        in _TRUE,
        "reserved_cpus": effective.get("reservedSystemCPUs") or "",
        "merge_rule": kubelet_merge.rule_for(version),
    }


def _held(kube):
    """(CPUs the CPU Manager gave pods, NUMA nodes of the devices pods hold - one per device)."""
    state = kube.get("cpu_manager_state") or {}
    assigned = set()
    for containers in (state.get("entries") or {}).values():
        for text in (containers or {}).values():
            assigned.update(cpulist.parse(str(text or ""), "cpu_manager_state"))
    for text in (state.get("pod_entries") or {}).values():
        assigned.update(cpulist.parse(str(text or ""), "cpu_manager_state"))
    nodes = []
    for entry in (kube.get("device_checkpoint") or {}).get("entries") or []:
        for group in entry.get("devices") or []:
            node = group.get("numa_node")
            if isinstance(node, int) and not isinstance(node, bool) and node >= 0:
                nodes.extend([node] * len(group.get("ids") or []))
    return assigned, nodes


def _less(nodes, taken):
    left = list(nodes)
    for node in taken:
        if node in left:
            left.remove(node)
    return left


def _result(got, settings):
    out = dict((k, got.get(k)) for k in ("admitted", "cpus", "numa_nodes", "reason"))
    if settings["cpu_manager_policy"] != "static" and out["admitted"]:
        out["cpus"] = None
        out["reason"] = (
            "cpuManagerPolicy %s: no exclusive CPUs, the pod runs on the shared pool" % settings["cpu_manager_policy"]
        )
    return out


def _shapes(plan, reserved, instances, pod_shapes):
    shapes = []
    if instances:
        if not isinstance(instances, list) or not all(
            isinstance(i, dict) and isinstance(i.get("npus") or [], list) for i in instances
        ):
            raise PlanError("npuops_vllm_instances: a list of {name, npus: [ids]}, got %r" % (instances,))
        with_instances = dict(
            plan, instances=dict((str(i.get("name")), {"npus": list(i.get("npus") or [])}) for i in instances)
        )
        shapes += kubelet_policy_choice.pod_shapes(with_instances, reserved)
        shapes = [s for s in shapes if s["source"].startswith("plan instance")]
    if pod_shapes:
        shapes += kubelet_policy_choice.shapes_from_spec(plan, pod_shapes, SHAPES_VARIABLE)
    return shapes


def whatif_audit(facts, plan, instances=None, pod_shapes=None):
    kube = (facts or {}).get("kubernetes")
    if not kube:
        return None
    settings = _settings(kube)
    out = {"kubelet": settings, "shapes": [], "error": None}
    if not isinstance(plan, dict) or plan.get("skipped"):
        out["error"] = "no strict plan of this host: %s" % ((plan or {}).get("reason") or "planning failed")
        return out
    try:
        reserved = set(cpulist.parse(str(settings["reserved_cpus"]), "reservedSystemCPUs"))
        shapes = _shapes(plan, reserved, instances, pod_shapes)
        if not shapes:
            out["error"] = "no pod shape: the host has no npuops_vllm_instances and %s is empty" % SHAPES_VARIABLE
            return out
        topo = kubelet_whatif.Topo.from_facts(facts)
        assigned, held_nodes = _held(kube)
        distances = rules.numa_distance(facts) if settings["prefer_closest_numa_nodes"] else None
        policy = settings["topology_manager_policy"]
        for shape in shapes:
            row = dict((k, shape[k]) for k in ("name", "source", "devices", "kind", "cpus"))
            for when, taken, cpus_held in (("empty", [], ()), ("now", held_nodes, assigned)):
                devices = None
                if shape["devices"]:
                    free = _less(shape["free_nodes"], taken) if when == "now" else shape["free_nodes"]
                    devices = {"count": shape["devices"], "nodes": shape["device_nodes"], "free": free}
                got = kubelet_whatif.whatif(
                    topo,
                    reserved,
                    shape["cpus"],
                    devices,
                    policy=policy,
                    full_pcpus_only=settings["full_pcpus_only"],
                    assigned=cpus_held,
                    version=settings["version"],
                    distances=distances,
                    closest_numa=settings["prefer_closest_numa_nodes"],
                    distribute_numa=settings["distribute_cpus_across_numa"],
                )
                row[when] = _result(got, settings)
            out["shapes"].append(row)
    except NpuopsError as err:
        out["error"] = str(err)
    return out


def _cell(result):
    if not result:
        return "-", "-", "-"
    if result["admitted"]:
        nodes = ",".join(str(n) for n in result["numa_nodes"] or []) or "-"
        return "admitted", result["cpus"] or "(shared pool)", nodes
    return "REFUSED", "-", result["reason"]


def _kubelet_text(settings):
    options = [
        name
        for name, on in (
            ("full-pcpus-only", settings["full_pcpus_only"]),
            ("distribute-cpus-across-numa", settings["distribute_cpus_across_numa"]),
            ("prefer-closest-numa-nodes", settings["prefer_closest_numa_nodes"]),
        )
        if on
    ]
    return "%s, cpu %s, topology %s%s" % (
        settings["version"] or "version unknown",
        settings["cpu_manager_policy"],
        settings["topology_manager_policy"],
        " (%s)" % ", ".join(options) if options else "",
    )


def whatif_rows(shapes):
    """[(hosts cell key, kubelet text, shape name, devices, CPUs, now..., empty..., source)] over
    ``shapes`` = [(shape id, hosts text, host summary)]."""
    rows = []
    for shape_id, hosts, host in shapes:
        audit = host.get("kubernetes_whatif")
        if not audit:
            continue
        kubelet = _kubelet_text(audit["kubelet"])
        if audit.get("error"):
            rows.append([hosts, kubelet, "-", "-", "-", "-", "-", audit["error"], "-", "-", "-"])
            continue
        for row in audit["shapes"]:
            now, empty = _cell(row.get("now")), _cell(row.get("empty"))
            rows.append(
                [hosts, kubelet, row["name"], "%d %s" % (row["devices"], row["kind"]), row["cpus"]]
                + list(now)
                + list(empty)
            )
    return rows


HEADERS = [
    "hosts",
    "kubelet",
    "pod shape",
    "devices",
    "CPUs asked",
    "now",
    "CPUs now",
    "NUMA now / why not",
    "empty node",
    "CPUs (empty)",
    "NUMA (empty) / why not",
]
INTRO = (
    "What each Kubernetes node's kubelet would do with each pod shape (npuops_vllm_instances, "
    "npuops_audit_pod_shapes): admit it or not under its Topology Manager policy, and which "
    "exclusive CPUs and NUMA nodes it gets - now, beside the pods running, and on the node "
    "with no pod."
)


def whatif_markdown(shapes, md_table):
    rows = whatif_rows(shapes)
    if not rows:
        return []
    return ["", "## Kubernetes: what the kubelet does with each pod shape", "", INTRO, ""] + md_table(HEADERS, rows)
