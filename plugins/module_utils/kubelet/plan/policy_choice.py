# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Topology Manager policy admits the pods a host's plan describes - decided by running
the kubelet what-if (``kubelet/plan/whatif``, the merge of the node's kubelet version) for each
pod shape under each candidate policy, strictest first.

A pod shape is ``{name, devices, device_nodes, free_nodes, cpus, source}``: ``devices`` how many
NPUs/GPUs it asks, ``device_nodes`` every planned device's NUMA node (what the device manager
sizes its preferred hints by), ``free_nodes`` the nodes of the devices it may get, ``cpus`` the
exclusive CPUs it asks. The shapes come from:

- the plan's instances: each instance's devices (the others held by the other instances) and
  the CPUs the plan gives it less the kubelet's reserved CPUs (``pod_shapes``);
- else ``pod_devices`` (the role's ``npuops_k8s_pod_devices``): that many of any free devices,
  with the per-device CPU share of the plan;
- or the caller's own shapes (the audit's ``npuops_audit_pod_shapes``, ``shapes_from_spec``).

``choose(...)`` -> ``{policy, reason, shapes: [{name, devices, cpus, source, results: {policy:
{admitted, cpus, numa_nodes, reason, hint}}}]}``; the policy is the strictest of
``CANDIDATES`` under which every shape is admitted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import whatif as kubelet_whatif
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules

# strictest first: the first that admits every shape is chosen. `none` is never chosen here (it
# does not align at all); best-effort admits everything, so it always ends the walk.
CANDIDATES = ("single-numa-node", "restricted", "best-effort")
WHY = {
    "single-numa-node": "each pod's CPUs and devices come from one NUMA node",
    "restricted": "each pod gets a preferred (minimal, equal-mask) CPU and device alignment, "
    "possibly over several NUMA nodes",
    "best-effort": "the kubelet aligns where it can and admits the rest unaligned",
}


def _ids(text, source):
    try:
        return set(cpulist.parse(str(text or ""), source))
    except ParseError as err:
        raise PlanError(str(err))


def _devices(plan):
    """{key: (NUMA node or None, set of planned CPUs)} of the plan's NPUs, else GPUs; the kind."""
    kind = "npus" if plan.get("npus") else "gpus"
    out = {}
    for key, entry in sorted((plan.get(kind) or {}).items()):
        entry = entry or {}
        if kind == "npus":
            node = entry.get("home_node")
            if node is None and len(entry.get("numa_nodes") or []) == 1:
                node = entry["numa_nodes"][0]
        else:
            node = entry.get("numa_node")
        if node is not None and (not isinstance(node, int) or isinstance(node, bool) or node < 0):
            raise PlanError(
                "plan %s %s %s: %r is not a NUMA node id"
                % (kind, key, "home_node" if kind == "npus" else "numa_node", node)
            )
        out[str(key)] = (node, _ids(entry.get("pool"), "plan %s %s pool" % (kind, key)))
    return out, kind


def device_nodes(plan):
    """{device key: NUMA node or None} of the plan's NPUs, else GPUs."""
    devices, dummy = _devices(plan)
    return dict((key, node) for key, (node, dummy2) in devices.items())


def pod_shapes(plan, reserved, pod_devices=None):
    """The pod shapes of a plan (see the module doc); [] when it plans no device."""
    devices, kind = _devices(plan)
    if not devices:
        return []
    reserved = set(reserved)
    all_nodes = [node for node, dummy in devices.values()]
    shapes = []
    instances = plan.get("instances") or {}
    if not isinstance(instances, dict):
        raise PlanError("plan instances: a mapping of name -> instance, got %r" % (instances,))
    for name, inst in sorted(instances.items()):
        raw = (inst or {}).get(kind) or (inst or {}).get("npus") or [] if isinstance(inst, dict) else None
        if not isinstance(raw, list) or [i for i in raw if not isinstance(i, (int, str)) or isinstance(i, bool)]:
            raise PlanError("plan instances %s %s: a list of device ids, got %r" % (name, kind, raw))
        ids = [str(i) for i in raw]
        unknown = [i for i in ids if i not in devices]
        if unknown:
            raise PlanError("plan instances %s: %s %s are not in the plan's %s" % (name, kind, ",".join(unknown), kind))
        if not ids:
            continue
        cpus = _ids(inst.get("pool"), "plan instances %s pool" % name)
        if not cpus:
            for i in ids:
                cpus |= devices.get(i, (None, set()))[1]
        shapes.append(
            {
                "name": name,
                "kind": kind,
                "devices": len(ids),
                "device_nodes": all_nodes,
                "free_nodes": [devices[i][0] for i in ids if i in devices],
                "cpus": len(cpus - reserved),
                "source": "plan instance %s with %s %s" % (name, kind, ",".join(ids)),
            }
        )
    if shapes:
        return shapes
    count = int(pod_devices) if pod_devices else len(devices)
    share = min(len(pool - reserved) for dummy, pool in devices.values())
    return [
        {
            "name": "pod-%d-%s" % (count, kind),
            "kind": kind,
            "devices": count,
            "device_nodes": all_nodes,
            "free_nodes": all_nodes,
            "cpus": count * share,
            "source": "a pod of %d %s (%s; %d CPUs per device as the plan shares them)"
            % (count, kind, "npuops_k8s_pod_devices" if pod_devices else "every planned device", share),
        }
    ]


def run_shape(topo, reserved, shape, policy, full_pcpus_only=False, version=None, distances=None, closest_numa=False):
    """The what-if of one shape under one policy on an otherwise empty node."""
    devices = None
    if shape.get("devices"):
        devices = {"count": shape["devices"], "nodes": shape["device_nodes"], "free": shape["free_nodes"]}
    return kubelet_whatif.whatif(
        topo,
        reserved,
        shape["cpus"],
        devices,
        policy=policy,
        full_pcpus_only=full_pcpus_only,
        version=version,
        distances=distances,
        closest_numa=closest_numa,
    )


def evaluate(topology, reserved, shapes, policies=CANDIDATES, full_pcpus_only=False, version=None, closest_numa=False):
    """Each shape with its what-if result under each policy."""
    topo = kubelet_whatif.Topo.from_facts(topology)
    distances = rules.numa_distance(topology) if closest_numa else None
    out = []
    for shape in shapes:
        results = {}
        for policy in policies:
            results[policy] = run_shape(
                topo,
                reserved,
                shape,
                policy,
                full_pcpus_only,
                version,
                distances,
                closest_numa and policy != "single-numa-node",
            )
        row = dict((k, shape[k]) for k in ("name", "kind", "devices", "cpus", "source"))
        row["device_numa_nodes"] = (
            sorted(set(n for n in shape.get("free_nodes") or [] if n is not None))
            if shape.get("free_nodes") != shape.get("device_nodes")
            else None
        )
        row["results"] = results
        out.append(row)
    return out


def _label(row):
    return "%s: %d CPUs" % (row["source"], row["cpus"])


def _refusal(row, policy):
    return "%s - %s" % (_label(row), row["results"][policy]["reason"])


def choose(
    topology, plan, reserved, pod_devices=None, full_pcpus_only=False, version=None, closest_numa=False, shapes=None
):
    """The strictest candidate policy admitting every shape, why, and the what-if table."""
    if shapes is None:
        shapes = pod_shapes(plan, reserved, pod_devices)
    if not shapes:
        return {
            "policy": "restricted",
            "shapes": [],
            "reason": "no NPU or GPU in the plan: restricted still aligns CPUs and memory",
        }
    try:
        rows = evaluate(topology, reserved, shapes, CANDIDATES, full_pcpus_only, version, closest_numa)
    except PlanError as err:
        return {
            "policy": "restricted",
            "shapes": [],
            "reason": "the kubelet what-if could not run (%s): restricted, not checked against the pods" % err,
        }
    refused = []
    for policy in CANDIDATES:
        if all(row["results"][policy]["admitted"] for row in rows):
            why = "%s admits every pod shape (%s): %s" % (
                policy,
                "; ".join(
                    "%s on NUMA %s" % (_label(r), ",".join(map(str, r["results"][policy]["numa_nodes"] or [])))
                    for r in rows
                ),
                WHY[policy],
            )
            if refused:
                why += "; " + "; ".join(refused)
            return {"policy": policy, "reason": why, "shapes": rows}
        first = [r for r in rows if not r["results"][policy]["admitted"]][0]
        refused.append("%s would refuse %s" % (policy, _refusal(first, policy)))
    raise PlanError("topology policy: best-effort refused a pod shape (%s)" % "; ".join(refused))


def shapes_from_spec(plan, specs, source):
    """Pod shapes from the user's list ({name, devices: count or [ids], cpus}); PlanError
    naming ``source`` and the entry on a bad one."""
    devices, kind = _devices(plan)
    all_nodes = [node for node, dummy in devices.values()]
    out = []
    if not isinstance(specs, (list, tuple)):
        raise PlanError("%s: a list of {name, devices, cpus}, got %r" % (source, specs))
    for index, spec in enumerate(specs):
        where = "%s[%d]" % (source, index)
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec["name"]:
            raise PlanError("%s: each shape is a dict with a name, devices and cpus, got %r" % (where, spec))
        cpus = spec.get("cpus")
        if not isinstance(cpus, int) or isinstance(cpus, bool) or not 0 <= cpus <= 8192:
            raise PlanError("%s (%s): cpus must be an integer 0-8192, got %r" % (where, spec["name"], cpus))
        wanted = spec.get("devices", 0)
        if isinstance(wanted, list):
            bad = [d for d in wanted if str(d) not in devices]
            if bad:
                raise PlanError(
                    "%s (%s): devices %s are not planned %s (%s)"
                    % (where, spec["name"], bad, kind, ",".join(sorted(devices, key=int)) or "none")
                )
            free = [devices[str(d)][0] for d in wanted]
            count = len(wanted)
        elif isinstance(wanted, int) and not isinstance(wanted, bool) and 0 <= wanted <= len(devices):
            free, count = all_nodes, wanted
        else:
            raise PlanError(
                "%s (%s): devices must be a count 0-%d or a list of %s ids, got %r"
                % (where, spec["name"], len(devices), kind, wanted)
            )
        out.append(
            {
                "name": spec["name"],
                "kind": kind,
                "devices": count,
                "device_nodes": all_nodes,
                "free_nodes": free,
                "cpus": cpus,
                "source": "%s (%s) with %d %s" % (where, spec["name"], count, kind),
            }
        )
    return out
