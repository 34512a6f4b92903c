# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet audit report: pure analysis (``build_report``) and renderers (Markdown, JSON, HTML).

Controller-side code. ``build_report`` turns, per host, the topology facts and the two plans
(``strict`` and ``vllm_ascend``) into one JSON-serialisable dict: fleet tables, per-host
summaries, CPU-map drawing data and a list of problems, each with its evidence and fix.
The renderers only format that dict; they never analyse. Every string that came from a host is
escaped in the HTML and Markdown outputs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import json
from collections import Counter, OrderedDict

from ansible_collections.npuops.fleet.plugins.module_utils import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.plan import cpuset_hint

REPORT_SCHEMA = 1
POLICIES = ("strict", "vllm_ascend")
ROLES = ("irq", "main", "acl", "release")
SEVERITIES = ("error", "warning", "info")
HEALTHY = ("ok", "healthy")

FIX_VLLM = ("use policy strict: set enable_cpu_binding false in vLLM's additional_config and "
            "bind with the npuops.fleet.cpu_binding role (npuops_cpu_policy: strict)")
FIX_IRQBALANCE = ("set npuops_irqbalance: ban (the planned IRQs are banned in irqbalance's "
                  "config) or stop and disable irqbalance")
FIX_MIGRATEPAGES = "install numactl (provides migratepages)"


# ---------------------------------------------------------------------------------------------
# small pure helpers
# ---------------------------------------------------------------------------------------------

def _cpus(text):
    """Sorted CPU ids of a cpulist string; [] for None or text that is not a cpulist."""
    if isinstance(text, (list, tuple)):
        return sorted(set(int(c) for c in text))
    if text is None or text == "":
        return []
    try:
        return cpulist.parse(str(text))
    except NpuopsError:
        return []


def _fmt(cpus):
    return cpulist.format(cpus)


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _key_sort(key):
    number = _int_or_none(key)
    return (0, number, "") if number is not None else (1, 0, str(key))


def _as_dict(value):
    return value if isinstance(value, dict) else {}


def _as_list(value):
    return value if isinstance(value, list) else []


def _numa_map(facts):
    """{node id (int): [cpus]} from facts cpu.numa_nodes (memory-only nodes kept, empty)."""
    nodes = {}
    for key, text in _as_dict(_as_dict(facts.get("cpu")).get("numa_nodes")).items():
        node = _int_or_none(key)
        if node is not None:
            nodes[node] = _cpus(text)
    return dict(sorted(nodes.items()))


def _nodes_of(cpus, numa):
    wanted = set(cpus)
    return sorted(node for node, node_cpus in numa.items() if wanted.intersection(node_cpus))


def _runs(cpus):
    """Contiguous runs [(first, last), ...] of sorted unique CPU ids."""
    runs = []
    for cpu in sorted(set(cpus)):
        if runs and runs[-1][1] == cpu - 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return [tuple(run) for run in runs]


def _plural(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else "s")


# ---------------------------------------------------------------------------------------------
# analysis
# ---------------------------------------------------------------------------------------------

def _devices_from_facts(facts, numa):
    """Home NUMA nodes of every accelerator: {("npu"|"gpu", id str): {...}}."""
    devices = OrderedDict()
    for npu in _as_list(facts.get("npus")):
        if not isinstance(npu, dict):
            continue
        key = npu.get("logic_id")
        if key is None:
            continue
        devices[("npu", str(key))] = _home(npu, numa)
    for gpu in _as_list(facts.get("gpus")):
        if not isinstance(gpu, dict) or gpu.get("index") is None:
            continue
        devices[("gpu", str(gpu.get("index")))] = _home(gpu, numa)
    return devices


def _home(device, numa):
    node = _int_or_none(device.get("numa_node"))
    if node is not None and node >= 0:
        home = [node]
    else:
        home = _nodes_of(_cpus(device.get("affinity")), numa)
    return {"home_nodes": home, "affinity": device.get("affinity")}


def _plan_devices(plan):
    devices = []
    for key in sorted(_as_dict(plan.get("npus")), key=_key_sort):
        entry = _as_dict(plan["npus"][key])
        devices.append(("npu", str(key), entry))
    for key in sorted(_as_dict(plan.get("gpus")), key=_key_sort):
        entry = _as_dict(plan["gpus"][key])
        devices.append(("gpu", str(key), entry))
    return devices


def summarize_plan(plan, error, policy, facts, applicable=True):
    """What one plan does on one host: pools, roles, overlaps, cross-NUMA pools, CPUs used."""
    numa = _numa_map(facts)
    allowed = _cpus(_as_dict(facts.get("cpu")).get("allowed"))
    homes = _devices_from_facts(facts, numa)
    summary = OrderedDict([
        ("policy", policy), ("status", "ok"), ("applicable", bool(applicable)),
        ("mode", None), ("reason", None), ("error", None),
        ("devices", []), ("cpus_used", 0), ("cpus", ""),
        ("overlaps", []), ("overlap_cpus", 0), ("overlap", ""),
        ("cross_numa", []), ("cross_numa_count", 0),
        ("outside_allowed", ""), ("warnings", []), ("log", []),
    ])
    if error:
        summary["status"] = "failed"
        summary["error"] = str(error)
        return summary
    if not isinstance(plan, dict):
        summary["status"] = "absent"
        return summary
    summary["mode"] = plan.get("mode")
    summary["warnings"] = [str(w) for w in _as_list(plan.get("warnings"))]
    summary["log"] = [str(line) for line in _as_list(plan.get("log"))]
    if plan.get("skipped"):
        summary["status"] = "skipped"
        summary["reason"] = str(plan.get("reason") or "skipped")
        return summary
    used = set()
    owners = {}
    for kind, key, entry in _plan_devices(plan):
        pool = _cpus(entry.get("pool"))
        roles = OrderedDict((role, _fmt(_cpus(entry.get(role)))) for role in ROLES)
        if kind == "npu":
            pool_nodes = _nodes_of(pool, numa) or sorted(
                n for n in (_int_or_none(x) for x in _as_list(entry.get("numa_nodes")))
                if n is not None)
        else:
            pool_nodes = _nodes_of(pool, numa)
            if not pool_nodes and _int_or_none(entry.get("numa_node")) is not None:
                pool_nodes = [_int_or_none(entry.get("numa_node"))]
        home = homes.get((kind, key), {}).get("home_nodes", [])
        off = [n for n in pool_nodes if home and n not in home]
        off_cpus = [c for c in pool if home and not any(c in numa.get(n, ()) for n in home)]
        device = OrderedDict([
            ("kind", kind), ("id", key), ("label", "%s%s" % (kind.upper(), key)),
            ("pool", _fmt(pool)), ("size", len(pool)), ("numa_nodes", pool_nodes),
            ("home_nodes", home), ("cross_numa", bool(off)), ("roles", roles),
        ])
        if kind == "gpu":
            device["nic"] = entry.get("nic")
            device["link"] = entry.get("link")
        summary["devices"].append(device)
        if off:
            summary["cross_numa"].append(OrderedDict([
                ("device", device["label"]), ("home_nodes", home), ("pool_nodes", pool_nodes),
                ("off_node_cpus", _fmt(off_cpus)), ("off_node_count", len(off_cpus))]))
        for cpu in pool:
            owners.setdefault(cpu, []).append(device["label"])
        used.update(pool)
    labels = [d["label"] for d in summary["devices"]]
    pools = dict((d["label"], set(_cpus(d["pool"]))) for d in summary["devices"])
    for i, first in enumerate(labels):
        for second in labels[i + 1:]:
            shared = pools[first] & pools[second]
            if shared:
                summary["overlaps"].append(OrderedDict([
                    ("devices", [first, second]), ("cpus", _fmt(shared)),
                    ("count", len(shared)), ("identical", pools[first] == pools[second])]))
    overlap = sorted(cpu for cpu, who in owners.items() if len(who) > 1)
    summary["cpus_used"] = len(used)
    summary["cpus"] = _fmt(used)
    summary["overlap_cpus"] = len(overlap)
    summary["overlap"] = _fmt(overlap)
    summary["cross_numa_count"] = len(summary["cross_numa"])
    if allowed:
        summary["outside_allowed"] = _fmt(sorted(used - set(allowed)))
    return summary


def _health(facts):
    chips = _as_list(facts.get("npus"))
    unhealthy = []
    for npu in chips:
        if not isinstance(npu, dict):
            continue
        state = npu.get("health")
        if state is None or str(state).strip().lower() in HEALTHY:
            continue
        unhealthy.append(OrderedDict([
            ("logic_id", npu.get("logic_id")), ("npu_id", npu.get("npu_id")),
            ("chip_id", npu.get("chip_id")), ("name", npu.get("name")),
            ("health", str(state))]))
    return OrderedDict([("chips", len(chips)), ("healthy", len(chips) - len(unhealthy)),
                        ("unhealthy", unhealthy)])


def _irqbalance(facts):
    info = _as_dict(facts.get("irqbalance"))
    if info.get("active") is True:
        state = "running"
    elif info.get("installed") is False:
        state = "absent"
    elif info.get("active") is False:
        state = "stopped"
    else:
        state = "unknown"
    return state


def _softshare(facts):
    share = _as_dict(facts.get("softshare"))
    return OrderedDict([("chips_total", _int_or_none(share.get("chips_total")) or 0),
                        ("chips_healthy", _int_or_none(share.get("chips_healthy")) or 0),
                        ("capacity", _int_or_none(share.get("capacity")) or 0)])


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


def analyse_host(name, entry):
    """Per-host summary (no problems yet; see ``host_problems``)."""
    entry = _as_dict(entry)
    facts = _as_dict(entry.get("facts"))
    cpu = _as_dict(facts.get("cpu"))
    numa = _numa_map(facts)
    online = _cpus(cpu.get("online"))
    if not online:
        online = sorted(set(c for cpus in numa.values() for c in cpus))
    allowed = _cpus(cpu.get("allowed"))
    vendor = facts.get("vendor") or "none"
    errors = _plan_errors(entry)
    plans = OrderedDict()
    for policy in POLICIES:
        plans[policy] = summarize_plan(entry.get("plan_" + policy), errors.get(policy), policy,
                                       facts, applicable=(policy == "strict" or vendor == "ascend"))
    tools = _as_dict(facts.get("tools"))
    host = OrderedDict([
        ("name", str(name)),
        ("hostname", facts.get("hostname")),
        ("has_facts", bool(facts)),
        ("facts_missing_reason", None if facts else (str(entry.get("facts_error") or "") or None)),
        ("arch", facts.get("arch")),
        ("vendor", vendor),
        ("device_type", facts.get("device_type")),
        ("cpu_model", cpu.get("model")),
        ("cpus_online", len(online)),
        ("cpus_allowed", len(allowed) if allowed else len(online)),
        ("allowed", _fmt(allowed) if allowed else _fmt(online)),
        ("online", _fmt(online)),
        ("numa_nodes", OrderedDict((str(n), _fmt(c)) for n, c in numa.items())),
        ("npus", len(_as_list(facts.get("npus")))),
        ("gpus", len(_as_list(facts.get("gpus")))),
        ("nics", sorted(str(n.get("name")) for n in _as_list(facts.get("nics"))
                        if isinstance(n, dict) and n.get("name"))),
        ("health", _health(facts)),
        ("softshare", _softshare(facts)),
        ("irqbalance", _irqbalance(facts)),
        ("migratepages", tools.get("migratepages")),
        ("facts_errors", [OrderedDict([("source", str(e.get("source"))), ("msg", str(e.get("msg")))])
                          for e in _as_list(facts.get("errors")) if isinstance(e, dict)]),
        ("plans", plans),
        # set when the facts were gathered inside a cpuset smaller than the host: what to do
        ("cpuset_hint", cpuset_hint(facts) if facts else None),
        ("rails", OrderedDict([("status", "n/a"), ("group", None), ("mapping", {}),
                               ("deviations", []), ("external", None)])),
    ])
    host["facts_error_count"] = len(host["facts_errors"])
    return host


def rail_shape(facts):
    """What makes two GPU hosts "identical" for rail comparison: CPU model, GPU count and RDMA
    NIC count (not the NIC names: a renamed NIC is exactly what must be caught)."""
    facts = _as_dict(facts)
    return "%s, %d GPUs, %d NICs" % (_as_dict(facts.get("cpu")).get("model") or "unknown CPU",
                                     len(_as_list(facts.get("gpus"))),
                                     len(_as_list(facts.get("nics"))))


def rail_shapes(hosts):
    """``{host: shape}`` for the ``shapes`` option of the ``npuops.fleet.rail_check`` filter."""
    return dict((str(name), rail_shape(_as_dict(entry).get("facts")))
                for name, entry in _as_dict(hosts).items())


def _rail_deviation(gpu, actual, expected, majority_hosts, peers, tie):
    return OrderedDict([("gpu", str(gpu)), ("nic", actual), ("majority", expected),
                        ("hosts_with_majority", majority_hosts), ("peers", peers),
                        ("tie", bool(tie))])


def analyse_rails(hosts, shapes, rails=None):
    """GPU k -> NIC of the strict plans compared across hosts of the same shape (in place).

    Same rule as the ``npuops.fleet.rail_check`` filter given ``shapes`` (``rail_shapes``):
    hosts grouped by shape; the mapping most hosts of a group share is the majority; a host with
    another mapping deviates on each GPU whose NIC differs. ``rails`` (the filter's result,
    ``{host: {majority, differences, group_hosts, majority_hosts, tie}}``), when given, is used
    for the deviations instead of this module's own comparison.
    """
    groups = OrderedDict()
    for host in hosts:
        if host["vendor"] != "nvidia" or host["plans"]["strict"]["status"] != "ok":
            continue
        mapping = OrderedDict((d["id"], d.get("nic")) for d in host["plans"]["strict"]["devices"]
                              if d["kind"] == "gpu")
        if not mapping:
            continue
        host["rails"]["mapping"] = mapping
        if not any(mapping.values()):
            host["rails"]["status"] = "no NICs"
            continue
        host["rails"]["group"] = shapes.get(host["name"])
        groups.setdefault(host["rails"]["group"], []).append(host)
    for members in groups.values():
        for host in members:
            host["rails"]["status"] = "single" if len(members) < 2 else "consistent"
            host["rails"]["peers"] = len(members)
        if len(members) < 2 or rails is not None:
            continue
        counts = Counter(json.dumps(h["rails"]["mapping"], sort_keys=True) for h in members)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        majority_text, majority_count = ranked[0]
        tie = len(ranked) > 1 and ranked[1][1] == majority_count
        majority = json.loads(majority_text)
        for host in members:
            mine = host["rails"]["mapping"]
            if dict(mine) == majority:
                continue
            host["rails"]["status"] = "inconsistent"
            for gpu in sorted(set(mine) | set(majority), key=_key_sort):
                if mine.get(gpu) != majority.get(gpu):
                    host["rails"]["deviations"].append(_rail_deviation(
                        gpu, mine.get(gpu), majority.get(gpu), majority_count, len(members), tie))
    if rails is None:
        return
    by_name = dict((h["name"], h) for h in hosts)
    for name, found in _as_dict(rails).items():
        host = by_name.get(str(name))
        found = _as_dict(found)
        if host is None or not found:
            continue
        host["rails"]["status"] = "inconsistent"
        host["rails"]["external"] = found
        diffs = _as_dict(found.get("differences"))
        for gpu in sorted(diffs, key=_key_sort):
            diff = _as_dict(diffs[gpu])
            host["rails"]["deviations"].append(_rail_deviation(
                gpu, diff.get("actual"), diff.get("expected"), found.get("majority_hosts"),
                found.get("group_hosts"), found.get("tie")))


def _problem(severity, host, kind, title, evidence, fix):
    return OrderedDict([("severity", severity), ("host", host), ("kind", kind),
                        ("title", title), ("evidence", evidence), ("fix", fix)])


def _fix_for_source(source):
    text = source.lower()
    if "npu-smi" in text:
        return ("check the Ascend driver and npu-smi on the host (run `%s` by hand); without it "
                "the plan falls back to sysfs NUMA data where it can" % source)
    if "nvidia-smi" in text:
        return "check the NVIDIA driver: run `%s` by hand on the host" % source
    if "lscpu" in text or "numa" in text or "/sys/" in text:
        return "check util-linux (lscpu) and /sys/devices/system/node on the host"
    return "run or read `%s` by hand on the host, fix what it reports, re-run the audit" % source


def _pairs_text(overlaps, limit=4):
    parts = ["%s+%s share %s (%d)" % (o["devices"][0], o["devices"][1], o["cpus"], o["count"])
             for o in overlaps[:limit]]
    if len(overlaps) > limit:
        parts.append("+%d more pairs" % (len(overlaps) - limit))
    return "; ".join(parts)


def _cross_text(cross, limit=4):
    parts = ["%s home node %s, pool on %s" % (
        c["device"], ",".join(str(n) for n in c["home_nodes"]),
        ",".join(str(n) for n in c["pool_nodes"])) for c in cross[:limit]]
    if len(cross) > limit:
        parts.append("+%d more" % (len(cross) - limit))
    return "; ".join(parts)


def host_problems(host):
    """Problems of one host, each with severity, evidence and the fix."""
    name = host["name"]
    out = []
    if not host["has_facts"]:
        out.append(_problem("error", name, "no_facts", "no topology facts",
                            host["facts_missing_reason"] or
                            "ansible_facts['npu_topology'] is missing for this host",
                            "run the npuops.fleet.npu_facts role (or the npu_topology_facts "
                            "module) before fleet_audit"))
        return out
    for err in host["facts_errors"]:
        out.append(_problem("warning", name, "facts_error", "a topology source failed",
                            "%s: %s" % (err["source"], err["msg"]), _fix_for_source(err["source"])))
    for chip in host["health"]["unhealthy"]:
        severity = "warning" if chip["health"].lower() == "warning" else "error"
        out.append(_problem(severity, name, "unhealthy_chip", "NPU not healthy",
                            "logic NPU %s (card %s chip %s, %s) health %s; soft-share capacity "
                            "is %d of %d" % (chip["logic_id"], chip["npu_id"], chip["chip_id"],
                                             chip["name"], chip["health"],
                                             host["softshare"]["capacity"],
                                             100 * host["health"]["chips"]),
                            "check `npu-smi info -t health -i %s`, reset or replace the chip; "
                            "keep it out of vLLM instances (npuops_vllm_instances) until it is "
                            "OK" % chip["npu_id"]))
    strict = host["plans"]["strict"]
    accel = host["npus"] + host["gpus"] > 0
    hint = host.get("cpuset_hint")
    if strict["status"] == "failed" and hint and hint in (strict["error"] or ""):
        # npu_cpu_plan ran out of CPUs because the facts came from inside a job's cgroup
        out.append(_problem("error", name, "plan_failed",
                            "no strict plan: facts gathered in a cut cpuset",
                            strict["error"].replace("; " + hint, ""), hint))
    elif strict["status"] == "failed":
        out.append(_problem("error", name, "plan_failed", "no strict plan", strict["error"],
                            "fix what the message names (cpuset too small, missing topology), "
                            "or restrict the plan with npus / instances"))
    elif strict["status"] == "ok":
        if strict["overlaps"]:
            out.append(_problem("error", name, "strict_overlap", "strict pools overlap",
                                _pairs_text(strict["overlaps"]),
                                "this breaks a strict-policy invariant: report it with the host "
                                "snapshot (npu_topology_facts save_snapshot)"))
        if strict["cross_numa"]:
            out.append(_problem("warning", name, "strict_cross_numa",
                                "strict pools off their device's NUMA node",
                                _cross_text(strict["cross_numa"]) + " (allowed CPUs %s)"
                                % host["allowed"],
                                "widen the cpuset (Cpus_allowed_list) to the devices' NUMA "
                                "nodes, or run fewer devices per host"))
        for warning in strict["warnings"]:
            out.append(_problem("info", name, "plan_warning", "strict plan warning", warning,
                                "read the warning; the plan is still applied"))
    vllm = host["plans"]["vllm_ascend"]
    if vllm["applicable"]:
        if vllm["status"] == "failed":
            out.append(_problem("error", name, "vllm_fails",
                                "vllm-ascend's in-process binding fails here", vllm["error"],
                                FIX_VLLM))
        elif vllm["status"] == "skipped":
            out.append(_problem("info", name, "vllm_skipped",
                                "vllm-ascend's in-process binding does nothing here",
                                vllm["reason"],
                                "bind with the strict plan (npuops.fleet.cpu_binding role)"))
        elif vllm["status"] == "ok":
            if vllm["overlaps"]:
                out.append(_problem("error", name, "vllm_overlap",
                                    "vllm-ascend pools overlap",
                                    "%s; %s shared" % (_pairs_text(vllm["overlaps"]),
                                                       _plural(vllm["overlap_cpus"], "CPU")),
                                    FIX_VLLM))
            if vllm["cross_numa"]:
                out.append(_problem("warning", name, "vllm_cross_numa",
                                    "vllm-ascend pools off their NPU's NUMA node",
                                    _cross_text(vllm["cross_numa"]), FIX_VLLM))
    if accel and host["irqbalance"] == "running":
        evidence = "irqbalance.service is active: it rewrites /proc/irq/*/smp_affinity"
        if host["vendor"] == "ascend":
            evidence += "; vllm-ascend stops it at start-up and never restarts it"
        out.append(_problem("warning", name, "irqbalance_running",
                            "irqbalance will undo IRQ affinity", evidence, FIX_IRQBALANCE))
    if accel and host["migratepages"] is False:
        out.append(_problem("warning", name, "migratepages_missing", "migratepages missing",
                            "migratepages is not on PATH: worker memory is not moved to the "
                            "pool's NUMA node (vllm-ascend logs 'The 'migratepages' command is "
                            "not available, skipping memory binding.')", FIX_MIGRATEPAGES))
    if host["rails"]["status"] == "inconsistent":
        parts = []
        for dev in host["rails"]["deviations"]:
            parts.append("GPU%s -> %s where %s of %s hosts of its shape use %s%s" % (
                dev["gpu"], dev["nic"], dev["hosts_with_majority"], dev["peers"],
                dev["majority"], " (tie: no clear majority)" if dev["tie"] else ""))
        out.append(_problem("warning", name, "rail_inconsistent",
                            "GPU rails differ from identical hosts",
                            "; ".join(parts) or "GPU -> NIC mapping differs from its peers",
                            "check NIC cabling and PCIe slots and the RDMA device names "
                            "(udev renames); until they match, pass NCCL_IB_HCA from each "
                            "host's own plan (plan env) rather than one fleet-wide value"))
    unknown = [d for d in host["plans"]["strict"]["devices"]
               if d["kind"] == "gpu" and not d["home_nodes"]]
    if host["vendor"] == "nvidia" and host["gpus"] and (
            len(unknown) == host["gpus"] or len(host["numa_nodes"]) <= 1):
        out.append(_problem("warning", name, "numa_unknown", "GPU NUMA affinity unknown",
                            "%s, %s: every GPU pool spans all CPUs" % (
                                _plural(len(host["numa_nodes"]), "NUMA node"),
                                "GPU NUMA affinity N/A"),
                            "enable NUMA (drop numa=off from the kernel command line, NPS/SNC "
                            "in BIOS) so pools can be NUMA-local"))
    return out


def build_report(hosts, rails=None):
    """The fleet report dict from ``{name: {facts, plan_strict, plan_vllm_ascend, plan_errors?,
    rails?, facts_error?}}``. Pure and deterministic (hosts sorted by name).

    ``plan_errors``: ``{policy: message}`` of a plan that failed; ``rails``: this host's entry
    of ``npuops.fleet.rail_check``; ``facts_error``: why the facts are missing.
    ``rails``: the whole result of ``npuops.fleet.rail_check`` over the strict plans (hosts
    absent from it are consistent); without it the same comparison is made here."""
    hosts = _as_dict(hosts)
    names = sorted(hosts, key=str)
    summaries = [analyse_host(n, hosts[n]) for n in names]
    if rails is None and any(isinstance(_as_dict(hosts[n]).get("rails"), dict) for n in names):
        rails = dict((str(n), hosts[n]["rails"]) for n in names
                     if isinstance(_as_dict(hosts[n]).get("rails"), dict))
    analyse_rails(summaries, rail_shapes(hosts), rails)
    problems = []
    for host in summaries:
        problems.extend(host_problems(host))
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
        row = types.setdefault(key, OrderedDict([
            ("vendor", key[0]), ("device_type", key[1]), ("hosts", 0), ("devices", 0),
            ("healthy", 0), ("capacity", 0), ("host_names", [])]))
        row["hosts"] += 1
        row["devices"] += host["npus"] + host["gpus"]
        row["healthy"] += host["health"]["healthy"] + host["gpus"]
        row["capacity"] += host["softshare"]["capacity"]
        row["host_names"].append(host["name"])
    counts = Counter(p["severity"] for p in problems)
    summary = OrderedDict([
        ("hosts", len(summaries)),
        ("npus", sum(h["npus"] for h in summaries)),
        ("gpus", sum(h["gpus"] for h in summaries)),
        ("unhealthy", sum(len(h["health"]["unhealthy"]) for h in summaries)),
        ("softshare_capacity", sum(h["softshare"]["capacity"] for h in summaries)),
        ("vllm_overlap_hosts", sum(1 for h in summaries
                                   if h["plans"]["vllm_ascend"]["overlap_cpus"])),
        ("vllm_cross_numa_hosts", sum(1 for h in summaries
                                      if h["plans"]["vllm_ascend"]["cross_numa_count"])),
        ("irqbalance_running", sum(1 for h in summaries if h["irqbalance"] == "running")),
        ("migratepages_missing", sum(1 for h in summaries if h["migratepages"] is False)),
        ("rails_inconsistent", sum(1 for h in summaries if h["rails"]["status"] == "inconsistent")),
        ("problems", OrderedDict((s, counts.get(s, 0)) for s in SEVERITIES)),
    ])
    return OrderedDict([
        ("schema", REPORT_SCHEMA),
        ("summary", summary),
        ("device_types", [dict(t) for t in sorted(types.values(),
                                                  key=lambda t: (t["vendor"], t["device_type"]))]),
        ("hosts", summaries),
        ("problems", problems),
    ])


# ---------------------------------------------------------------------------------------------
# rendering: JSON and Markdown
# ---------------------------------------------------------------------------------------------

def render_json(report):
    return json.dumps(report, indent=2, sort_keys=False, default=str) + "\n"


def _md(value):
    """Markdown table cell: HTML-escaped, pipes and newlines neutralised."""
    if value is None:
        return "-"
    text = html.escape(str(value), quote=False)
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'").replace("*", "\\*") \
        .replace("_", "\\_").replace("[", "\\[").replace("]", "\\]")


def _md_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(_md(c) for c in row) + " |")
    return lines


def _plan_cell(plan, field):
    if not plan["applicable"]:
        return "n/a"
    if plan["status"] != "ok":
        return plan["status"]
    return plan[field]


def render_markdown(report):
    s = report["summary"]
    out = ["# Fleet report", "",
           "%s, %s, %s; soft-share capacity %d; %d unhealthy chips." % (
               _plural(s["hosts"], "host"), _plural(s["npus"], "NPU"), _plural(s["gpus"], "GPU"),
               s["softshare_capacity"], s["unhealthy"]),
           "Problems: %d errors, %d warnings, %d info." % (
               s["problems"]["error"], s["problems"]["warning"], s["problems"]["info"]), "",
           "## Problems", ""]
    if report["problems"]:
        out += _md_table(["id", "severity", "host", "problem", "evidence", "fix"],
                         [[p["id"], p["severity"], p["host"], p["title"], p["evidence"], p["fix"]]
                          for p in report["problems"]])
    else:
        out.append("No problems found.")
    out += ["", "## Device types", ""]
    out += _md_table(["vendor", "device type", "hosts", "devices", "healthy", "soft-share capacity"],
                     [[t["vendor"], t["device_type"], t["hosts"], t["devices"], t["healthy"],
                       t["capacity"]] for t in report["device_types"]])
    out += ["", "## Hosts", ""]
    out += _md_table(["host", "arch", "vendor", "type", "CPUs allowed/online", "NUMA nodes",
                      "devices", "healthy", "capacity", "irqbalance", "migratepages", "rails",
                      "facts errors"],
                     [[h["name"], h["arch"], h["vendor"], h["device_type"],
                       "%d/%d" % (h["cpus_allowed"], h["cpus_online"]), len(h["numa_nodes"]),
                       h["npus"] + h["gpus"], h["health"]["healthy"] + h["gpus"],
                       h["softshare"]["capacity"], h["irqbalance"],
                       {True: "yes", False: "MISSING"}.get(h["migratepages"], "unknown"),
                       h["rails"]["status"], len(h["facts_errors"])]
                      for h in report["hosts"]])
    out += ["", "## vllm-ascend in-process binding vs the strict plan", ""]
    rows = []
    for h in report["hosts"]:
        st, vl = h["plans"]["strict"], h["plans"]["vllm_ascend"]
        rows.append([h["name"], st["mode"] if st["status"] == "ok" else st["status"],
                     _plan_cell(st, "cpus_used"), _plan_cell(st, "overlap_cpus"),
                     _plan_cell(st, "cross_numa_count"),
                     vl["mode"] if vl["status"] == "ok" else _plan_cell(vl, "status"),
                     _plan_cell(vl, "cpus_used"), _plan_cell(vl, "overlap_cpus"),
                     _plan_cell(vl, "cross_numa_count"),
                     vl["reason"] or vl["error"] or ""])
    out += _md_table(["host", "strict mode", "CPUs used", "overlap CPUs", "cross-NUMA",
                      "vllm_ascend mode", "CPUs used", "overlap CPUs", "cross-NUMA", "note"], rows)
    out += ["", "## Pools per host", ""]
    for h in report["hosts"]:
        out += ["### " + _md(h["name"]), ""]
        if h["numa_nodes"]:
            out.append("NUMA: " + ", ".join("node %s %s" % (_md(n), _md(c or "(memory only)"))
                                            for n, c in h["numa_nodes"].items()))
            out.append("")
        devices = OrderedDict()
        for policy in POLICIES:
            for d in h["plans"][policy]["devices"]:
                devices.setdefault(d["label"], {})[policy] = d
        if not devices:
            out += ["No pools.", ""]
            continue
        rows = []
        for label, by in devices.items():
            row = [label]
            for policy in POLICIES:
                d = by.get(policy)
                if d is None:
                    row += ["-", "-"]
                    continue
                roles = " ".join("%s=%s" % (r, d["roles"][r]) for r in ROLES if d["roles"][r])
                extra = " nic=%s link=%s" % (d.get("nic"), d.get("link")) if d["kind"] == "gpu" \
                    else ""
                row += ["%s (N%s)%s" % (d["pool"], ",".join(str(n) for n in d["numa_nodes"]),
                                        " CROSS-NUMA" if d["cross_numa"] else ""),
                        (roles + extra).strip()]
            rows.append(row)
        out += _md_table(["device", "strict pool", "strict roles", "vllm_ascend pool",
                          "vllm_ascend roles"], rows)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------
# rendering: self-contained HTML with inline SVG CPU maps
# ---------------------------------------------------------------------------------------------

ROLE_COLOURS = OrderedDict([("irq", "#f28e2b"), ("main", "#4e79a7"), ("acl", "#59a14f"),
                            ("release", "#b07aa1"), ("pool", "#76b7b2")])
OVERLAP_COLOUR = "#d62728"

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d232a;
background:#f6f7f9}
header{background:#1f2d3d;color:#fff;padding:18px 28px}
header h1{margin:0 0 10px;font-size:22px}
main{padding:10px 28px 40px}
h2{margin:28px 0 10px;font-size:18px;border-bottom:2px solid #d9dee4;padding-bottom:4px}
h3{margin:0 0 6px;font-size:16px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#2c3e50;border-radius:6px;padding:8px 14px;min-width:92px}
.card .num{display:block;font-size:22px;font-weight:600}
.card .lbl{font-size:12px;opacity:.85}
.card.c-bad{background:#8e1b1b}.card.c-warn{background:#8a5a00}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #d9dee4;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.sev{font-weight:600;border-radius:3px;padding:1px 6px;color:#fff}
.sev-error{background:#c0392b}.sev-warning{background:#d68910}.sev-info{background:#5d6d7e}
.fix{color:#0b5345}
.bad{color:#c0392b;font-weight:600}.ok{color:#1e8449}.muted{color:#7b8794}
article.host{background:#fff;border:1px solid #d9dee4;border-radius:6px;padding:12px 14px;
margin:14px 0}
.meta{color:#52606d;font-size:12.5px;margin-bottom:8px}
.maps{display:flex;flex-wrap:wrap;gap:14px}
figure{margin:0;flex:1 1 600px;min-width:480px}
figcaption{font-weight:600;font-size:13px;margin-bottom:3px}
svg{width:100%;height:auto;display:block}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12.5px;margin:6px 0}
.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:4px;
border-radius:2px}
code{font-size:12px}
"""


def _e(value):
    return html.escape("" if value is None else str(value), quote=True)


class _Ptr(object):
    """Numbers on the page carry the JSON pointer of their value in the report."""

    @staticmethod
    def num(value, pointer, tag="span", cls="num"):
        return '<%s class="%s" data-ptr="%s">%s</%s>' % (tag, cls, _e(pointer), _e(value), tag)

    @staticmethod
    def td(value, pointer):
        return '<td class="n" data-ptr="%s">%s</td>' % (_e(pointer), _e(value))


def _summary_cards(report):
    s = report["summary"]
    cards = [("hosts", "hosts", ""), ("npus", "NPUs", ""), ("gpus", "GPUs", ""),
             ("unhealthy", "unhealthy chips", "c-bad" if s["unhealthy"] else ""),
             ("softshare_capacity", "soft-share capacity", ""),
             ("vllm_overlap_hosts", "hosts: vllm-ascend overlaps",
              "c-bad" if s["vllm_overlap_hosts"] else ""),
             ("irqbalance_running", "hosts: irqbalance running",
              "c-warn" if s["irqbalance_running"] else ""),
             ("migratepages_missing", "hosts: no migratepages",
              "c-warn" if s["migratepages_missing"] else ""),
             ("rails_inconsistent", "hosts: rails differ", "c-warn" if s["rails_inconsistent"] else "")]
    out = ['<div class="cards">']
    for key, label, cls in cards:
        out.append('<div class="card %s" id="sum-%s">%s<span class="lbl">%s</span></div>' % (
            cls, key.replace("_", "-"), _Ptr.num(s[key], "/summary/" + key), _e(label)))
    for sev in SEVERITIES:
        cls = {"error": "c-bad", "warning": "c-warn"}.get(sev, "") if s["problems"][sev] else ""
        out.append('<div class="card %s" id="sum-problems-%s">%s<span class="lbl">%s</span></div>'
                   % (cls, sev, _Ptr.num(s["problems"][sev], "/summary/problems/" + sev),
                      _e(sev + (" problems" if sev != "info" else " notes"))))
    out.append("</div>")
    return "\n".join(out)


def _problems_html(report):
    if not report["problems"]:
        return '<p class="ok" id="no-problems">No problems found.</p>'
    out = ['<table id="problems-table"><thead><tr><th>id</th><th>severity</th><th>host</th>'
           '<th>problem</th><th>evidence</th><th>fix</th></tr></thead><tbody>']
    for i, p in enumerate(report["problems"]):
        out.append('<tr id="problem-%s" data-severity="%s" data-kind="%s"><td>%s</td>'
                   '<td><span class="sev sev-%s">%s</span></td><td>%s</td><td>%s</td>'
                   '<td><code>%s</code></td><td class="fix">%s</td></tr>' % (
                       _e(p["id"]), _e(p["severity"]), _e(p["kind"]), _e(p["id"]),
                       _e(p["severity"]), _e(p["severity"]), _e(p["host"]), _e(p["title"]),
                       _e(p["evidence"]), _e(p["fix"])))
    out.append("</tbody></table>")
    return "\n".join(out)


def _types_html(report):
    out = ['<table id="device-types"><thead><tr><th>vendor</th><th>device type</th><th>hosts</th>'
           '<th>devices</th><th>healthy</th><th>soft-share capacity</th></tr></thead><tbody>']
    for i, t in enumerate(report["device_types"]):
        base = "/device_types/%d/" % i
        out.append("<tr><td>%s</td><td>%s</td>%s%s%s%s</tr>" % (
            _e(t["vendor"]), _e(t["device_type"]), _Ptr.td(t["hosts"], base + "hosts"),
            _Ptr.td(t["devices"], base + "devices"), _Ptr.td(t["healthy"], base + "healthy"),
            _Ptr.td(t["capacity"], base + "capacity")))
    out.append("</tbody></table>")
    return "\n".join(out)


def _hosts_html(report):
    out = ['<table id="hosts-table"><thead><tr><th>host</th><th>arch</th><th>vendor</th>'
           '<th>type</th><th>CPUs allowed</th><th>CPUs online</th><th>NPUs</th><th>GPUs</th>'
           '<th>healthy chips</th><th>soft-share capacity</th><th>irqbalance</th>'
           '<th>migratepages</th><th>GPU rails</th><th>facts errors</th><th>problems</th>'
           '</tr></thead><tbody>']
    for i, h in enumerate(report["hosts"]):
        base = "/hosts/%d/" % i
        irq_cls = "bad" if h["irqbalance"] == "running" and (h["npus"] or h["gpus"]) else ""
        mig = {True: ("yes", "ok"), False: ("missing", "bad")}.get(h["migratepages"],
                                                                   ("unknown", "muted"))
        rail_cls = "bad" if h["rails"]["status"] == "inconsistent" else ""
        out.append('<tr id="host-row-%d"><td><a href="#host-%d">%s</a></td><td>%s</td><td>%s</td>'
                   '<td>%s</td>%s%s%s%s%s%s<td class="%s">%s</td><td class="%s">%s</td>'
                   '<td class="%s">%s</td>%s%s</tr>' % (
                       i, i, _e(h["name"]), _e(h["arch"]), _e(h["vendor"]), _e(h["device_type"]),
                       _Ptr.td(h["cpus_allowed"], base + "cpus_allowed"),
                       _Ptr.td(h["cpus_online"], base + "cpus_online"),
                       _Ptr.td(h["npus"], base + "npus"), _Ptr.td(h["gpus"], base + "gpus"),
                       _Ptr.td(h["health"]["healthy"], base + "health/healthy"),
                       _Ptr.td(h["softshare"]["capacity"], base + "softshare/capacity"),
                       irq_cls, _e(h["irqbalance"]), mig[1], mig[0], rail_cls,
                       _e(h["rails"]["status"]),
                       _Ptr.td(h["facts_error_count"], base + "facts_error_count"),
                       _Ptr.td(h["problems"], base + "problems")))
    out.append("</tbody></table>")
    return "\n".join(out)


def _binding_html(report):
    out = ['<table id="binding-table"><thead><tr><th rowspan="2">host</th>'
           '<th colspan="4">strict (ours)</th><th colspan="5">vllm_ascend (in-process)</th></tr>'
           '<tr><th>mode</th><th>CPUs used</th><th>overlap CPUs</th><th>cross-NUMA pools</th>'
           '<th>mode</th><th>CPUs used</th><th>overlap CPUs</th><th>cross-NUMA pools</th>'
           '<th>note</th></tr></thead><tbody>']
    for i, h in enumerate(report["hosts"]):
        cells = ["<td>%s</td>" % _e(h["name"])]
        for policy in POLICIES:
            plan = h["plans"][policy]
            base = "/hosts/%d/plans/%s/" % (i, policy)
            if not plan["applicable"]:
                cells.append('<td colspan="4" class="muted">n/a (not an Ascend host)</td>')
            elif plan["status"] != "ok":
                cells.append('<td colspan="4" class="%s">%s</td>' % (
                    "bad" if plan["status"] == "failed" else "muted", _e(plan["status"])))
            else:
                cells.append("<td>%s</td>" % _e(plan["mode"]))
                cells.append(_Ptr.td(plan["cpus_used"], base + "cpus_used"))
                for field in ("overlap_cpus", "cross_numa_count"):
                    cell = _Ptr.td(plan[field], base + field)
                    if plan[field]:
                        cell = cell.replace('class="n"', 'class="n bad"', 1)
                    cells.append(cell)
        vl = h["plans"]["vllm_ascend"]
        cells.append("<td>%s</td>" % _e(vl["reason"] or vl["error"] or ""))
        out.append('<tr id="binding-row-%d">%s</tr>' % (i, "".join(cells)))
    out.append("</tbody></table>")
    return "\n".join(out)


def _legend_html():
    items = ["<span><span class=\"sw\" style=\"background:%s\"></span>%s</span>" % (c, _e(n))
             for n, c in ROLE_COLOURS.items()]
    items.append('<span><span class="sw" style="background:#fff;border:2px solid %s"></span>'
                 'CPU in more than one pool</span>' % OVERLAP_COLOUR)
    items.append('<span><span class="sw" style="background:#fff;border:1px dashed #333"></span>'
                 "device's own NUMA node</span>")
    items.append('<span><span class="sw" style="background:#bbb"></span>not allowed (cpuset)'
                 "</span>")
    return '<div class="legend">%s</div>' % "".join(items)


def _svg_map(host, plan, index, policy):
    """One CPU map: NUMA nodes as bands, one row per device with its role runs."""
    numa = dict((int(n), _cpus(c)) for n, c in host["numa_nodes"].items())
    online = _cpus(host["online"])
    allowed = set(_cpus(host["allowed"]))
    top = max([c for cs in numa.values() for c in cs] + online + [0]) + 1
    width, left, right = 660.0, 92.0, 8.0
    scale = (width - left - right) / top
    row_h, gap = 15, 4
    devices = plan["devices"]
    overlap = set(_cpus(plan["overlap"]))
    height = 24 + 14 + (row_h + gap) * max(len(devices), 1) + (row_h + 8 if overlap else 0) + 16

    def x(cpu):
        return left + cpu * scale

    out = ['<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" '
           'id="map-%d-%s" data-host-index="%d" data-policy="%s" aria-label="%s">' % (
               width, height, index, policy, index, policy,
               _e("CPU map of %s, %s policy" % (host["name"], policy)))]
    out.append('<rect x="0" y="0" width="%d" height="%d" fill="#fff"/>' % (width, height))
    shades = ("#e8eef7", "#f6f0e4")
    for pos, (node, cpus) in enumerate(sorted(numa.items())):
        for first, last in _runs(cpus):
            out.append('<rect x="%.2f" y="2" width="%.2f" height="%d" fill="%s"><title>%s'
                       '</title></rect>' % (x(first), (last - first + 1) * scale, height - 4,
                                            shades[pos % 2],
                                            _e("NUMA node %d: %s" % (node, _fmt(cpus)))))
        if cpus:
            first, last = cpus[0], cpus[-1]
            if (last - first + 1) * scale >= 18:
                out.append('<text x="%.2f" y="14" font-size="10" text-anchor="middle" '
                           'fill="#33475b">N%d</text>' % ((x(first) + x(last + 1)) / 2, node))
    # allowed strip
    out.append('<text x="4" y="31" font-size="10" fill="#33475b">cpuset</text>')
    for first, last in _runs(set(online) - allowed if allowed else []):
        out.append('<rect x="%.2f" y="22" width="%.2f" height="12" fill="#bbb"/>'
                   % (x(first), (last - first + 1) * scale))
    for first, last in _runs(allowed):
        out.append('<rect x="%.2f" y="22" width="%.2f" height="12" fill="#33475b" '
                   'opacity=".55"/>' % (x(first), (last - first + 1) * scale))
    y = 40
    if not devices:
        out.append('<text x="%d" y="%d" font-size="11" fill="#52606d">no pools</text>'
                   % (left, y + 11))
    for dev in devices:
        colour = OVERLAP_COLOUR if dev["cross_numa"] else "#1d232a"
        label = "%s%s" % (dev["label"], " \u2192 " + str(dev.get("nic")) if dev.get("nic") else "")
        out.append('<text x="4" y="%d" font-size="10.5" fill="%s">%s%s</text>' % (
            y + 11, colour, _e(label), " \u26a0" if dev["cross_numa"] else ""))
        for node in dev["home_nodes"]:
            for first, last in _runs(numa.get(node, [])):
                out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="none" '
                           'stroke="#333" stroke-dasharray="3 2" stroke-width=".8"/>' % (
                               x(first), y - 1, (last - first + 1) * scale, row_h + 2))
        role_cpus = set()
        parts = [(r, _cpus(dev["roles"][r])) for r in ROLES]
        pool = _cpus(dev["pool"])
        for role, cpus in parts:
            role_cpus.update(cpus)
        rest = [c for c in pool if c not in role_cpus]
        parts.append(("pool", rest))
        for role, cpus in parts:
            for first, last in _runs(cpus):
                out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s'
                           '</title></rect>' % (
                               x(first), y, max((last - first + 1) * scale, 0.8), row_h,
                               ROLE_COLOURS[role],
                               _e("%s %s: %s" % (dev["label"], role, _fmt(range(first, last + 1))))))
        for first, last in _runs(overlap.intersection(pool)):
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="none" stroke="%s" '
                       'stroke-width="1.6"/>' % (x(first), y, max((last - first + 1) * scale, 1),
                                                 row_h, OVERLAP_COLOUR))
        y += row_h + gap
    if overlap:
        out.append('<text x="4" y="%d" font-size="10.5" fill="%s" font-weight="bold">overlap'
                   '</text>' % (y + 11, OVERLAP_COLOUR))
        for first, last in _runs(overlap):
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s'
                       '</title></rect>' % (x(first), y, max((last - first + 1) * scale, 1),
                                            row_h, OVERLAP_COLOUR,
                                            _e("shared: %s" % _fmt(range(first, last + 1)))))
        y += row_h + 8
    # CPU axis ticks at NUMA boundaries
    ticks = sorted(set([0, top] + [cs[0] for cs in numa.values() if cs]))
    for tick in ticks:
        out.append('<text x="%.2f" y="%d" font-size="9" fill="#7b8794" text-anchor="middle">%d'
                   '</text>' % (min(max(x(tick), left), width - 10), y + 10, tick))
    out.append("</svg>")
    return "\n".join(out)


def _host_article(host, index):
    base = "/hosts/%d/" % index
    meta = "%s \u00b7 %s \u00b7 %s \u00b7 %s CPUs allowed of %s online \u00b7 %s NUMA nodes" % (
        _e(host["arch"]), _e(host["vendor"]), _e(host["device_type"]),
        _Ptr.num(host["cpus_allowed"], base + "cpus_allowed"),
        _Ptr.num(host["cpus_online"], base + "cpus_online"), _e(len(host["numa_nodes"])))
    out = ['<article class="host" id="host-%d" data-host="%s">' % (index, _e(host["name"])),
           "<h3>%s</h3>" % _e(host["name"]), '<div class="meta">%s</div>' % meta,
           '<div class="maps">']
    for policy in POLICIES:
        plan = host["plans"][policy]
        pbase = base + "plans/%s/" % policy
        title = {"strict": "strict plan (ours)",
                 "vllm_ascend": "vllm-ascend in-process binding"}[policy]
        out.append('<figure id="fig-%d-%s"><figcaption>%s' % (index, policy, _e(title)))
        if not plan["applicable"]:
            out.append(' \u2014 <span class="muted">n/a (not an Ascend host)</span></figcaption>')
        elif plan["status"] != "ok":
            out.append(' \u2014 <span class="%s">%s</span></figcaption><p>%s</p>' % (
                "bad" if plan["status"] == "failed" else "muted", _e(plan["status"]),
                _e(plan["error"] or plan["reason"] or "")))
        else:
            out.append(" \u2014 %s: %s CPUs used, %s overlapping, %s cross-NUMA pools"
                       "</figcaption>" % (
                           _e(plan["mode"]), _Ptr.num(plan["cpus_used"], pbase + "cpus_used"),
                           _Ptr.num(plan["overlap_cpus"], pbase + "overlap_cpus"),
                           _Ptr.num(plan["cross_numa_count"], pbase + "cross_numa_count")))
            out.append(_svg_map(host, plan, index, policy))
        out.append("</figure>")
    out.append("</div></article>")
    return "\n".join(out)


def render_html(report):
    """One self-contained page: inline CSS and SVG, no scripts, no external assets."""
    s = report["summary"]
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>npuops.fleet fleet report</title>", "<style>%s</style></head><body>" % _CSS,
             '<header><h1>Fleet report</h1>%s</header><main>' % _summary_cards(report),
             '<section id="problems"><h2>Problems and fixes</h2>%s</section>'
             % _problems_html(report),
             '<section id="fleet"><h2>Device types</h2>%s<h2>Hosts</h2>%s'
             "<h2>vllm-ascend in-process binding vs the strict plan</h2>%s</section>" % (
                 _types_html(report), _hosts_html(report), _binding_html(report)),
             '<section id="maps"><h2>CPU maps</h2>%s' % _legend_html()]
    for index, host in enumerate(report["hosts"]):
        parts.append(_host_article(host, index))
    parts.append('</section></main><footer class="meta" style="padding:0 28px 20px">'
                 "npuops.fleet fleet report schema %s \u00b7 %s</footer></body></html>" % (
                     _e(report.get("schema")), _plural(s["hosts"], "host")))
    return "\n".join(parts) + "\n"
