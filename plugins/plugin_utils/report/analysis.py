# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet audit report's analysis: ``build_report`` turns, per host, the topology facts and
a plan of every policy (``schema.POLICIES``) into one JSON-serialisable dict: fleet tables,
per-host summaries, CPU-map drawing data, GPU rail consistency and the problems (``problems``).
``render_json`` is its JSON text; the Markdown and HTML renderers only format the dict.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import marshal
from collections import Counter, OrderedDict

from ansible_collections.npuops.fleet.plugins.module_utils.model import rules
from ansible_collections.npuops.fleet.plugins.module_utils.plan import irq_pins
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.drift import (
    drift_groups,
    drift_summary,
    summarize_binding,
)
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.applied import summarize_config
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.inventory import host_inventory
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.problems import group_problems, host_problems
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.gpu_rails import analyse_rails, gpu_model, rail_shapes
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.untrusted import guarded, screen_hosts
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.vllm_ascend_release import summarize_release
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.vllm_instances import summarize_instances
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.kubelet_whatif import whatif_audit
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.kubernetes import kubernetes_audit
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.shapes import (
    analyse_once,
    compact_hosts,
    evidence_groups,
    group_shapes,
)
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import (
    REPORT_SCHEMA,
    POLICIES,
    ROLES,
    VLLM,
    SEVERITIES,
    WHAT_IF,
    sources,
    cpu_ids,
    fmt,
    int_or_none,
    key_sort,
    as_dict,
    as_list,
    numa_map,
    node_map,
    nodes_of,
)


def _devices_from_facts(facts, nodes):
    """Home NUMA nodes of every accelerator: {("npu"|"gpu", id str): {...}}."""
    devices = OrderedDict()
    for npu in as_list(facts.get("npus")):
        if not isinstance(npu, dict):
            continue
        key = npu.get("logic_id")
        if key is None:
            continue
        devices[("npu", str(key))] = _home(npu, nodes)
    for gpu in as_list(facts.get("gpus")):
        if not isinstance(gpu, dict) or gpu.get("index") is None:
            continue
        devices[("gpu", str(gpu.get("index")))] = _home(gpu, nodes)
    return devices


def _home(device, nodes):
    node = int_or_none(device.get("numa_node"))
    if node is not None and node >= 0:
        home = [node]
    else:
        home = nodes_of(cpu_ids(device.get("affinity")), nodes)
    return {"home_nodes": home, "affinity": device.get("affinity")}


def _plan_devices(plan):
    devices = []
    for key in sorted(as_dict(plan.get("npus")), key=key_sort):
        entry = as_dict(plan["npus"][key])
        devices.append(("npu", str(key), entry))
    for key in sorted(as_dict(plan.get("gpus")), key=key_sort):
        entry = as_dict(plan["gpus"][key])
        devices.append(("gpu", str(key), entry))
    return devices


def summarize_plan(plan, error, policy, facts, applicable=True):
    """What one plan does on one host: pools, roles, overlaps, cross-NUMA pools, CPUs used."""
    nodes = node_map(facts)
    allowed = cpu_ids(as_dict(facts.get("cpu")).get("allowed"))
    homes = _devices_from_facts(facts, nodes)
    summary = OrderedDict(
        [
            ("policy", policy),
            ("status", "ok"),
            ("applicable", bool(applicable)),
            ("mode", None),
            ("reason", None),
            ("error", None),
            ("devices", []),
            ("cpus_used", 0),
            ("cpus", ""),
            ("overlaps", []),
            ("overlap_cpus", 0),
            ("overlap", ""),
            ("cross_numa", []),
            ("cross_numa_count", 0),
            ("outside_allowed", ""),
            ("warnings", []),
            ("log", []),
            # strict / GPU plans: the rest of the process tree and what is left (cpu_budget)
            ("frontend", ""),
            ("frontend_cpus", 0),
            ("spare", ""),
            ("spare_cpus", 0),
            ("reserved", ""),
        ]
    )
    if error:
        summary["status"] = "failed"
        summary["error"] = str(error)
        return summary
    if not isinstance(plan, dict):
        summary["status"] = "absent"
        return summary
    summary["mode"] = plan.get("mode")
    summary["warnings"] = [str(w) for w in as_list(plan.get("warnings"))]
    summary["log"] = [str(line) for line in as_list(plan.get("log"))]
    if plan.get("skipped"):
        summary["status"] = "skipped"
        summary["reason"] = str(plan.get("reason") or "skipped")
        return summary
    used = set()
    owners = {}
    for kind, key, entry in _plan_devices(plan):
        pool = cpu_ids(entry.get("pool"))
        roles = OrderedDict((role, fmt(cpu_ids(entry.get(role)))) for role in ROLES)
        if kind == "npu":
            pool_nodes = nodes_of(pool, nodes) or sorted(
                n for n in (int_or_none(x) for x in as_list(entry.get("numa_nodes"))) if n is not None
            )
        else:
            pool_nodes = nodes_of(pool, nodes)
            if not pool_nodes and int_or_none(entry.get("numa_node")) is not None:
                pool_nodes = [int_or_none(entry.get("numa_node"))]
        home = homes.get((kind, key), {}).get("home_nodes", [])
        off = [n for n in pool_nodes if home and n not in home]
        off_cpus = [c for c in pool if home and nodes.get(c) not in home]
        device = OrderedDict(
            [
                ("kind", kind),
                ("id", key),
                ("label", "%s%s" % (kind.upper(), key)),
                ("pool", fmt(pool)),
                ("size", len(pool)),
                ("numa_nodes", pool_nodes),
                ("home_nodes", home),
                ("cross_numa", bool(off)),
                ("roles", roles),
            ]
        )
        if kind == "gpu":
            device["nic"] = entry.get("nic")
            device["link"] = entry.get("link")
        summary["devices"].append(device)
        if off:
            summary["cross_numa"].append(
                OrderedDict(
                    [
                        ("device", device["label"]),
                        ("home_nodes", home),
                        ("pool_nodes", pool_nodes),
                        ("off_node_cpus", fmt(off_cpus)),
                        ("off_node_count", len(off_cpus)),
                    ]
                )
            )
        for cpu in pool:
            owners.setdefault(cpu, []).append(device["label"])
        used.update(pool)
    labels = [d["label"] for d in summary["devices"]]
    pools = dict((d["label"], set(cpu_ids(d["pool"]))) for d in summary["devices"])
    for i, first in enumerate(labels):
        for second in labels[i + 1 :]:
            shared = pools[first] & pools[second]
            if shared:
                summary["overlaps"].append(
                    OrderedDict(
                        [
                            ("devices", [first, second]),
                            ("cpus", fmt(shared)),
                            ("count", len(shared)),
                            ("identical", pools[first] == pools[second]),
                        ]
                    )
                )
    overlap = sorted(cpu for cpu, who in owners.items() if len(who) > 1)
    summary["cpus_used"] = len(used)
    summary["cpus"] = fmt(used)
    summary["overlap_cpus"] = len(overlap)
    summary["overlap"] = fmt(overlap)
    summary["cross_numa_count"] = len(summary["cross_numa"])
    if allowed:
        summary["outside_allowed"] = fmt(sorted(used - set(allowed)))
    budget = as_dict(plan.get("cpu_budget"))
    for key in ("frontend", "spare", "reserved"):
        cpus = cpu_ids(budget.get(key))
        summary[key] = fmt(cpus)
        if key + "_cpus" in summary:
            summary[key + "_cpus"] = len(cpus)
    return summary


def _health(facts):
    # NPUs from npu-smi; on NVIDIA hosts the GPUs (health from nvidia-smi's ECC counters)
    chips = as_list(facts.get("npus")) or [
        dict(g, logic_id=g.get("index"), npu_id=g.get("index"), chip_id=0, name=g.get("model"))
        for g in as_list(facts.get("gpus"))
        if isinstance(g, dict)
    ]
    unhealthy, unknown = [], 0
    for npu in chips:
        if not isinstance(npu, dict):
            continue
        state = npu.get("health")
        if rules.health_state(state) is None:  # no tool reported it: unknown, never healthy
            unknown += 1
            continue
        if rules.health_state(state) == rules.HEALTH_OK:
            continue
        unhealthy.append(
            OrderedDict(
                [
                    ("logic_id", npu.get("logic_id")),
                    ("npu_id", npu.get("npu_id")),
                    ("chip_id", npu.get("chip_id")),
                    ("name", npu.get("name")),
                    ("health", str(state)),
                ]
            )
        )
    return OrderedDict(
        [
            ("chips", len(chips)),
            ("healthy", len(chips) - len(unhealthy) - unknown),
            ("unhealthy", unhealthy),
            ("unknown", unknown),
        ]
    )


def _irqbalance(facts):
    info = as_dict(facts.get("irqbalance"))
    if info.get("active") is True:
        state = "running"
    elif info.get("installed") is False:
        state = "absent"
    elif info.get("active") is False:
        state = "stopped"
    else:
        state = "unknown"
    return state


def _pinned_irqs(facts, plan):
    """The IRQs the strict plan pins (what npu_irq_affinity sets, ``plan/irq_pins``):
    ``(pinned, unknown)``; ``pinned``: ``[{irq, device, role}]``, each IRQ once; ``unknown``:
    labels of planned devices whose IRQs are not in the facts."""
    pinned, unknown = irq_pins.pinned_from_facts(plan, facts)
    return [OrderedDict([("irq", irq), ("device", label), ("role", role)]) for irq, label, role in pinned], unknown


def irqbalance_bans(facts, plan, status, accel):
    """Whether irqbalance can move the IRQs the strict plan pins (``status`` is the strict
    plan summary's). ``state``: ``n/a`` (not running, or no accelerator), ``unknown`` (no strict
    plan: which IRQs to ban is not known), ``none`` (the plan pins no IRQ), ``banned`` (all are
    banned in irqbalance's config), ``unbanned`` (some are not, or cannot be told)."""
    info = as_dict(facts.get("irqbalance"))
    banned = set(i for i in (int_or_none(x) for x in as_list(info.get("banned_irqs"))) if i is not None)
    result = OrderedDict(
        [
            ("state", "n/a"),
            ("config", info.get("config")),
            ("pinned_count", 0),
            ("banned_count", 0),
            ("unbanned_count", 0),
            ("unbanned", []),
            ("unknown", []),
            ("banned_irqs", sorted(banned)),
            ("banned_cpus", info.get("banned_cpus")),
        ]
    )
    if status == "ok" and isinstance(plan, dict):
        pinned, unknown = _pinned_irqs(facts, plan)
        result["pinned_count"] = len(pinned)
        result["banned_count"] = sum(1 for p in pinned if p["irq"] in banned)
        result["unbanned"] = [p for p in pinned if p["irq"] not in banned]
        result["unbanned_count"] = len(result["unbanned"])
        result["unknown"] = unknown
    if not accel or info.get("active") is not True:
        return result
    if status != "ok" or not isinstance(plan, dict):
        result["state"] = "unknown" if status != "skipped" else "none"
    elif result["unbanned"] or result["unknown"]:
        result["state"] = "unbanned"
    elif result["pinned_count"]:
        result["state"] = "banned"
    else:
        result["state"] = "none"
    return result


def _softshare(facts):
    share = as_dict(facts.get("softshare"))
    return OrderedDict(
        [
            ("chips_total", int_or_none(share.get("chips_total")) or 0),
            ("chips_healthy", int_or_none(share.get("chips_healthy")) or 0),
            ("capacity", int_or_none(share.get("capacity")) or 0),
        ]
    )


def _plan_errors(entry):
    raw = entry.get("plan_errors")
    errors = {}
    if isinstance(raw, dict):
        for policy, msg in raw.items():
            if msg:
                errors[str(policy)] = str(msg)
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and item.get("msg"):
                errors[str(item.get("policy", "strict"))] = str(item["msg"])
    return errors


def _empty_rails():
    return OrderedDict([("status", "n/a"), ("group", None), ("mapping", {}), ("deviations", []), ("external", None)])


def analyse_host(name, entry):
    """Per-host summary (no problems yet; see ``host_problems``).

    It depends on the host's name only through ``name`` and on its facts' ``hostname`` only
    through ``hostname``: ``build_report`` analyses hosts whose entries differ in nothing else
    once (``_analyse_hosts``)."""
    entry = as_dict(entry)
    facts = as_dict(entry.get("facts"))
    cpu = as_dict(facts.get("cpu"))
    numa = numa_map(facts)
    online = cpu_ids(cpu.get("online"))
    if not online:
        online = sorted(set(c for cpus in numa.values() for c in cpus))
    allowed = cpu_ids(cpu.get("allowed"))
    vendor = facts.get("vendor") or "none"
    errors = _plan_errors(entry)
    plans = OrderedDict()
    for policy in POLICIES:
        plans[policy] = summarize_plan(
            entry.get("plan_" + policy),
            errors.get(policy),
            policy,
            facts,
            applicable=(policy == "strict" or vendor == "ascend"),
        )
        plans[policy]["basis"] = WHAT_IF  # the audit's own plan, not the installed one
    tools = as_dict(facts.get("tools"))
    host = OrderedDict(
        [
            ("name", str(name)),
            ("hostname", facts.get("hostname")),
            ("has_facts", bool(facts)),
            ("facts_missing_reason", None if facts else (str(entry.get("facts_error") or "") or None)),
            ("arch", facts.get("arch")),
            ("vendor", vendor),
            ("device_type", facts.get("device_type") or (gpu_model(facts) if vendor == "nvidia" else None)),
            ("cpu_model", cpu.get("model")),
            ("cpus_online", len(online)),
            ("cpus_allowed", len(allowed) if allowed else len(online)),
            ("allowed", fmt(allowed) if allowed else fmt(online)),
            ("online", fmt(online)),
            ("numa_nodes", OrderedDict((str(n), fmt(c)) for n, c in numa.items())),
            ("npus", len(as_list(facts.get("npus")))),
            ("gpus", len(as_list(facts.get("gpus")))),
            (
                "nics",
                sorted(str(n.get("name")) for n in as_list(facts.get("nics")) if isinstance(n, dict) and n.get("name")),
            ),
            ("health", _health(facts)),
            # versions and one row per device: model, health, memory, driver, firmware
            ("inventory", host_inventory(facts)),
            ("softshare", _softshare(facts)),
            ("irqbalance", _irqbalance(facts)),
            (
                "irqbalance_bans",
                irqbalance_bans(
                    facts,
                    entry.get("plan_strict"),
                    plans["strict"]["status"],
                    bool(as_list(facts.get("npus")) or as_list(facts.get("gpus"))),
                ),
            ),
            ("migratepages", tools.get("migratepages")),
            ("cgroup", facts.get("cgroup") if isinstance(facts.get("cgroup"), dict) else None),
            ("cpu_partition", facts.get("cpu_partition") if isinstance(facts.get("cpu_partition"), dict) else None),
            # the snapshot the facts were replayed from (a failed source is the recording's, the
            # fix is a new recording), else None
            ("recorded", str(entry.get("recorded") or "").rstrip("/").rsplit("/", 1)[-1] or None),
            (
                "facts_errors",
                [
                    OrderedDict([("source", str(e.get("source"))), ("msg", str(e.get("msg")))])
                    for e in as_list(facts.get("errors"))
                    if isinstance(e, dict)
                ],
            ),
            ("plans", plans),
            # set when the facts were gathered inside a cpuset smaller than the host: what to do
            ("cpuset_hint", rules.cpuset_hint(facts) if facts else None),
            ("rails", _empty_rails()),
            # what vllm_binding_facts read back: is the binding still the plan? (report/drift.py)
            ("binding", summarize_binding(entry)),
            # what site.yml applies here (the role variables): the findings never ask for it again
            ("config", summarize_config(entry, facts)),
            # the vllm-ascend release predicted, rank by rank (report/vllm_ascend_release.py)
            ("vllm_ascend_release", summarize_release(entry.get("plan_" + VLLM), facts)),
            # which vLLM and which NUMA binding each instance gets (report/vllm_instances.py)
            ("vllm_instances", summarize_instances(entry, facts)),
            # Kubernetes nodes: where the pods' CPUs landed (report/kubernetes.py); None elsewhere
            ("kubernetes", kubernetes_audit(facts, entry.get("plan_strict"))),
            # what the node's kubelet does with each pod shape (report/kubelet_whatif.py)
            (
                "kubernetes_whatif",
                whatif_audit(
                    facts,
                    entry.get("plan_strict"),
                    as_dict(entry.get("config")).get("instances"),
                    entry.get("pod_shapes"),
                ),
            ),
        ]
    )
    host["facts_error_count"] = len(host["facts_errors"])
    return host


def _input_key(entry):
    """A host's audit input without its facts' hostname, serialised (None when it cannot be):
    hosts with the same key get the same analysis. ``marshal`` writes plain values exactly and
    fast; equal inputs built in another key order only miss the cache."""
    if not isinstance(entry, dict):
        return None
    facts = entry.get("facts")
    if isinstance(facts, dict) and "hostname" in facts:
        entry = dict(entry, facts=dict(facts, hostname=None))
    try:
        return marshal.dumps(entry)
    except ValueError:  # not plain data (a str subclass, an object): no cache for this host
        return None


def _rebind(host, name, entry):
    """The summary of another host with the same input: a copy with its own name, hostname and
    rails (the nested values are shared; nothing after the analysis changes them)."""
    host = OrderedDict(host)
    host["name"] = str(name)
    host["hostname"] = as_dict(as_dict(entry).get("facts")).get("hostname")
    host["rails"] = _empty_rails()
    return host


def build_report(hosts, rails=None, screened=False):
    """The fleet report dict from ``{name: {facts, plan_strict, plan_vllm_ascend, plan_errors?,
    rails?, facts_error?, binding?, binding_error?}}``. Pure and deterministic (hosts sorted by name).

    ``plan_errors``: ``{policy: message}`` of a plan that failed; ``rails``: this host's entry
    of ``npuops.fleet.rail_check``; ``facts_error``: why the facts are missing; ``binding``:
    the ``npu_binding`` facts of ``vllm_binding_facts`` (``binding_error``: why they are not).
    ``rails``: the whole result of ``npuops.fleet.rail_check`` over the strict plans (hosts
    absent from it are consistent); without it the same comparison is made here.

    Each host's entry is untrusted (``untrusted.screen_hosts``; ``screened``: it was done
    already): one the report cannot read is its host's "facts unusable: <why>" row.

    ``hosts`` keeps every host's summary; ``shapes`` groups the hosts whose summaries and
    problems are the same (``shapes.group_shapes``), which is what the pages draw."""
    hosts = as_dict(hosts) if screened else screen_hosts(as_dict(hosts), plain=True)
    names = sorted(hosts, key=str)
    summaries, signatures = analyse_once(hosts, names, guarded(analyse_host, host_problems), _input_key, _rebind)
    if rails is None and any(isinstance(as_dict(hosts[n]).get("rails"), dict) for n in names):
        rails = dict((str(n), hosts[n]["rails"]) for n in names if isinstance(as_dict(hosts[n]).get("rails"), dict))
    analyse_rails(summaries, rail_shapes(hosts), rails)
    problems, problems_of = [], []
    for host in summaries:
        found = host_problems(host)
        problems_of.append(found)
        problems.extend(found)
    order = dict((s, i) for i, s in enumerate(SEVERITIES))
    problems.sort(key=lambda p: (order[p["severity"]], p["host"], p["kind"]))
    for index, problem in enumerate(problems):
        problem["id"] = "P%d" % (index + 1)
    per_host = Counter(p["host"] for p in problems)
    for host in summaries:
        host["problems"] = per_host.get(host["name"], 0)
    types = OrderedDict()
    for host in summaries:
        key = (host["vendor"], host["device_type"] or "none")
        row = types.setdefault(
            key,
            OrderedDict(
                [
                    ("vendor", key[0]),
                    ("device_type", key[1]),
                    ("hosts", 0),
                    ("devices", 0),
                    ("healthy", 0),
                    ("health_unknown", 0),
                    ("capacity", 0),
                    ("host_names", []),
                ]
            ),
        )
        row["hosts"] += 1
        row["devices"] += host["npus"] + host["gpus"]
        row["healthy"] += host["health"]["healthy"]
        row["health_unknown"] += host["health"].get("unknown", 0)
        row["capacity"] += host["softshare"]["capacity"]
        row["host_names"].append(host["name"])
    counts = Counter(p["severity"] for p in problems)
    summary = OrderedDict(
        [
            ("hosts", len(summaries)),
            ("npus", sum(h["npus"] for h in summaries)),
            ("gpus", sum(h["gpus"] for h in summaries)),
            ("unhealthy", sum(len(h["health"]["unhealthy"]) for h in summaries)),
            ("health_unknown", sum(h["health"].get("unknown", 0) for h in summaries)),
            ("softshare_capacity", sum(h["softshare"]["capacity"] for h in summaries)),
            ("vllm_overlap_hosts", sum(1 for h in summaries if h["plans"][VLLM]["overlap_cpus"])),
            # of them, where the release was assumed (no vllm-ascend found): not shown as an error
            (
                "vllm_overlap_assumed_hosts",
                sum(
                    1
                    for h in summaries
                    if h["plans"][VLLM]["overlap_cpus"]
                    and (h.get("vllm_ascend_release") or {}).get("source") == "default"
                ),
            ),
            ("vllm_cross_numa_hosts", sum(1 for h in summaries if h["plans"][VLLM]["cross_numa_count"])),
            ("irqbalance_running", sum(1 for h in summaries if h["irqbalance"] == "running")),
            # running and able to move some IRQ the strict plan pins (the irqbalance_running finding)
            (
                "irqbalance_unbanned",
                sum(1 for h in summaries if h["irqbalance_bans"]["state"] in ("unbanned", "unknown")),
            ),
            ("migratepages_missing", sum(1 for h in summaries if h["migratepages"] is False)),
            ("rails_inconsistent", sum(1 for h in summaries if h["rails"]["status"] == "inconsistent")),
            ("problems", OrderedDict((s, counts.get(s, 0)) for s in SEVERITIES)),
        ]
    )
    summary.update(drift_summary(summaries))
    shapes = group_shapes(summaries, signatures, problems_of)
    summary["shapes"] = len(shapes)
    return OrderedDict(
        [
            ("schema", REPORT_SCHEMA),
            # per section: the installed plan read back, or a what-if recomputed by the audit
            ("sources", sources()),
            ("summary", summary),
            ("device_types", [dict(t) for t in sorted(types.values(), key=lambda t: (t["vendor"], t["device_type"]))]),
            ("hosts", summaries),
            ("problems", problems),
            # the same problems grouped across hosts (kind + fix), for the problem lists
            ("problem_groups", _problem_groups(problems, summaries)),
            # binding read back vs plan, one row per kind of drift and fix across hosts
            ("drift", drift_groups(summaries)),
            # hosts with the same summary and problems, drawn once (shapes.group_shapes)
            ("shapes", shapes),
        ]
    )


def _problem_groups(problems, summaries):
    """``group_problems`` plus, per group, its hosts as compact text, the shapes it occurs in
    and its members by evidence (``shapes.evidence_groups``)."""
    groups = group_problems(problems)
    by_name = dict((h["name"], h) for h in summaries)
    for group in groups:
        group["hosts_text"] = compact_hosts(group["hosts"])
        group["evidence_groups"] = evidence_groups(group, problems, by_name)
        shapes = []
        for item in group["evidence_groups"]:
            shapes.extend(s for s in item["shapes"] if s not in shapes)
        group["shapes"] = shapes
    return groups


def render_json(report):
    """The report as JSON text: the top level and ``summary`` indented, every item of a
    top-level list (a host, a problem, a group, a shape) on a line of its own, so a host's
    data is one line to grep and the text is written by the C encoder (10,000 hosts: about
    120 MB)."""
    out = ["{"]
    items = list(report.items())
    for number, (key, value) in enumerate(items):
        comma = "," if number < len(items) - 1 else ""
        head = "  %s: " % json.dumps(key)
        if isinstance(value, list) and value:
            out.append(head + "[")
            out.append(",\n".join("    " + json.dumps(item, default=str) for item in value))
            out.append("  ]" + comma)
        else:
            out.append(head + json.dumps(value, indent=2, default=str).replace("\n", "\n  ") + comma)
    out.append("}")
    return "\n".join(out) + "\n"
