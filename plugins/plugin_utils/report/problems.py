# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's problems: what is wrong on each host, with its evidence and its fix
(``host_problems``), and the same kind of problem grouped across hosts (``group_problems``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.module_utils.model import rules, vendors
from ansible_collections.npuops.fleet.plugins.module_utils.parse import cgroup

from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import (
    FIX_VLLM,
    FIX_IRQBALANCE,
    FIX_MIGRATEPAGES,
    VLLM,
    plural,
)
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import applied
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.shapes import compact_ids
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.vllm_ascend_release import release_problems
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.kubernetes import kubernetes_rows


def _problem(severity, host, kind, title, evidence, fix):
    return OrderedDict(
        [("severity", severity), ("host", host), ("kind", kind), ("title", title), ("evidence", evidence), ("fix", fix)]
    )


# facts of schema 2 a strict plan can do without (it falls back: nearest node by id, no package
# rule, one CPU per core): an info, not a warning
_OPTIONAL_CPU_FACTS = ("cpu.numa_distance", "cpu.packages", "cpu.smt_siblings")


def _fix_for_source(source):
    text = source.lower()
    if source in _OPTIONAL_CPU_FACTS:
        return (
            "the strict plan falls back (nearest NUMA node by id, no package rule, one CPU "
            "per core); read /sys/devices/system/node/node*/distance and "
            "/sys/devices/system/cpu/cpu*/topology/ on the host itself (numactl -H for the "
            "distances) - a container or a firmware without the data cannot give them"
        )
    if "npu-smi" in text:
        return (
            "check the Ascend driver and npu-smi on the host (run `%s` by hand); without it "
            "the plan falls back to sysfs NUMA data where it can" % source
        )
    for row in vendors.VENDORS.values():
        if row.is_gpu and row.tool in text:
            return "check the %s driver: run `%s` by hand on the host" % (row.driver, source)
    if "lscpu" in text or "numa" in text or "/sys/" in text:
        return "check util-linux (lscpu) and /sys/devices/system/node on the host"
    return "run or read `%s` by hand on the host, fix what it reports, re-run the audit" % source


# why a device's health can be unknown and what makes it known, by vendor
_HEALTH_SOURCES = {
    "nvidia": (
        "nvidia-smi --query-gpu (ECC counters) gave no value",
        "gather the facts where `nvidia-smi --query-gpu=index,ecc.errors.uncorrected."
        "volatile.total --format=csv` answers (a recorded host: record that query in "
        "its snapshot); until then treat these GPUs as unchecked",
    ),
    "amd": (
        "the collection reads no health source on AMD hosts",
        "check `rocm-smi --showras` (uncorrectable RAS errors) by hand on the host",
    ),
    "ascend": (
        "npu-smi info printed no Health cell for them",
        "run `npu-smi info` by hand; a chip without a Health value is not known to be OK",
    ),
}


def _health_unknown(host):
    """A warning for the devices whose health no tool reported (never counted healthy)."""
    why, fix = _HEALTH_SOURCES.get(host["vendor"], _HEALTH_SOURCES["ascend"])
    unknown = [r["label"] for r in (host.get("inventory") or {}).get("devices", []) if r["health"] == "unknown"]
    return _problem(
        "warning",
        host["name"],
        "health_unknown",
        "device health unknown",
        "%s of %d: %s (%s); shown as unknown, not counted healthy"
        % (
            plural(host["health"]["unknown"], "device"),
            host["health"]["chips"],
            ", ".join(unknown[:8]) + (", ..." if len(unknown) > 8 else ""),
            why,
        ),
        fix,
    )


def _fix_recorded(source, snapshot, live_fix):
    """The fix of a failed source on a host replayed from a recording: nothing can be run on
    a recording; the source failed when it was captured."""
    return (
        "this host's facts are a recording (snapshot %s): `%s` failed when it was "
        "recorded - record the host again where it answers (npuops_facts_save_snapshot_dir, "
        "the npu_facts role) or gather its facts live; on the live host: %s" % (snapshot, source, live_fix)
    )


def _pairs_text(overlaps, limit=4):
    parts = [
        "%s+%s share %s (%d)" % (o["devices"][0], o["devices"][1], o["cpus"], o["count"]) for o in overlaps[:limit]
    ]
    if len(overlaps) > limit:
        parts.append("+%d more pairs" % (len(overlaps) - limit))
    return "; ".join(parts)


def _cross_text(cross, limit=4):
    parts = [
        "%s home node %s, pool on %s"
        % (c["device"], ",".join(str(n) for n in c["home_nodes"]), ",".join(str(n) for n in c["pool_nodes"]))
        for c in cross[:limit]
    ]
    if len(cross) > limit:
        parts.append("+%d more" % (len(cross) - limit))
    return "; ".join(parts)


def _irq_list(entries):
    """``1024, 1026 (NPU0); 1028, 1030 (NPU1)``: IRQ numbers grouped by device, in order."""
    groups = OrderedDict()
    for entry in entries:
        groups.setdefault(entry["device"], []).append(str(entry["irq"]))
    return "; ".join("%s (%s)" % (", ".join(irqs), device) for device, irqs in groups.items())


def _irqbalance_evidence(host):
    bans = host["irqbalance_bans"]
    where = "in %s" % bans["config"] if bans["config"] else "(no irqbalance config file)"
    if bans["state"] == "unknown":
        text = (
            "irqbalance is active (it rewrites /proc/irq/*/smp_affinity); without a strict "
            "plan the IRQs to keep from it are not known (%s)"
            % (
                "no irqbalance config file"
                if not bans["config"]
                else "IRQs banned %s: %s" % (where, ", ".join(str(i) for i in bans["banned_irqs"]))
                if bans["banned_irqs"]
                else "no IRQ banned %s" % where
            )
        )
    else:
        parts = []
        if bans["unbanned"]:
            parts.append(
                "%d of %d planned IRQs not banned %s: %s"
                % (bans["unbanned_count"], bans["pinned_count"], where, _irq_list(bans["unbanned"]))
            )
        if bans["unknown"]:
            parts.append(
                "IRQs of %s not in the facts (cannot tell whether they are banned)" % ", ".join(bans["unknown"])
            )
        text = "irqbalance is active; " + "; ".join(parts)
    vllm = host["plans"][VLLM]
    config = host.get("config") or {}
    if vllm["applicable"] and vllm["status"] == "ok" and (not config.get("known") or config.get("vllm_bound")):
        text += "; vllm-ascend stops it at start-up and never restarts it"
    return text


def _vllm_findings(name, host, vllm):
    """vllm-ascend's predicted overlaps and cross-NUMA pools: warnings for the devices where its
    binding is in effect (an instance with binding vllm), a note for the others."""
    config = host.get("config") or {"known": False}
    out = []
    overlaps_on, overlaps_off = [], []
    for pair in vllm["overlaps"]:
        on, _off = applied.vllm_in_effect(config, pair["devices"])
        (overlaps_on if on else overlaps_off).append(pair)
    cross_on, cross_off = [], []
    for entry in vllm["cross_numa"]:
        on, _off = applied.vllm_in_effect(config, [entry["device"]])
        (cross_on if on else cross_off).append(entry)
    if overlaps_on:
        out.append(
            _problem(
                "error",
                name,
                "vllm_overlap",
                "vllm-ascend pools overlap",
                "%s; %s shared" % (_pairs_text(overlaps_on), plural(vllm["overlap_cpus"], "CPU")),
                _fix_vllm(config),
            )
        )
    if cross_on:
        out.append(
            _problem(
                "warning",
                name,
                "vllm_cross_numa",
                "vllm-ascend pools off their NPU's NUMA node",
                _cross_text(cross_on),
                _fix_vllm(config),
            )
        )
    if overlaps_off or cross_off:
        found = "; ".join(
            x
            for x in (_pairs_text(overlaps_off) if overlaps_off else "", _cross_text(cross_off) if cross_off else "")
            if x
        )
        out.append(
            _problem(
                "info",
                name,
                "vllm_not_in_effect",
                "vllm-ascend's binding would overlap or leave the NUMA node (not in effect)",
                "%s; %s" % (found, applied.not_in_effect_note(config)),
                "nothing to do: keep binding host on these instances (the default, npuops_vllm_binding)",
            )
        )
    return out


def _fix_vllm(config):
    if config.get("known") and config.get("vllm_bound"):
        return (
            "set binding: host on %s in npuops_vllm_instances (or npuops_vllm_binding: host): the "
            "wrapper turns vllm-ascend's binding off and pins the strict plan" % ", ".join(config["vllm_bound"])
        )
    return FIX_VLLM


def host_problems(host):
    """Problems of one host, each with severity, evidence and the fix."""
    name = host["name"]
    out = []
    if host.get("facts_unusable"):
        out.append(
            _problem(
                "error",
                name,
                "facts_unusable",
                "facts unusable",
                "facts unusable: %s" % host["facts_unusable"],
                "the host's facts, plans or binding read-back are not what the "
                "collection's modules return: re-gather them (npuops.fleet.npu_facts, "
                "vllm_binding_facts) and check the host is not compromised",
            )
        )
        return out
    if not host["has_facts"]:
        out.append(
            _problem(
                "error",
                name,
                "no_facts",
                "no topology facts",
                host["facts_missing_reason"] or "ansible_facts['npu_topology'] is missing for this host",
                "run the npuops.fleet.npu_facts role (or the npu_topology_facts module) before fleet_audit",
            )
        )
        return out
    for err in host["facts_errors"]:
        fix = _fix_for_source(err["source"])
        if host.get("recorded"):
            fix = _fix_recorded(err["source"], host["recorded"], fix)
        out.append(
            _problem(
                "info" if err["source"] in _OPTIONAL_CPU_FACTS else "warning",
                name,
                "facts_error",
                "a topology source failed",
                "%s: %s" % (err["source"], err["msg"]),
                fix,
            )
        )
    for chip in host["health"]["unhealthy"]:
        severity = "warning" if rules.health_state(chip["health"]) == rules.HEALTH_WARNING else "error"
        if host["vendor"] == "nvidia":
            out.append(
                _problem(
                    severity,
                    name,
                    "unhealthy_chip",
                    "GPU not healthy",
                    "GPU %s (%s) health %s: uncorrectable ECC errors since the driver "
                    "loaded (nvidia-smi)" % (chip["logic_id"], chip["name"], chip["health"]),
                    "drain the GPU, check `nvidia-smi -q -d ECC -i %s`, reset it; keep it "
                    "out of npuops_vllm_instances until it counts no new errors" % chip["logic_id"],
                )
            )
            continue
        out.append(
            _problem(
                severity,
                name,
                "unhealthy_chip",
                "NPU not healthy",
                "logic NPU %s (card %s chip %s, %s) health %s; soft-share capacity "
                "is %d of %d"
                % (
                    chip["logic_id"],
                    chip["npu_id"],
                    chip["chip_id"],
                    chip["name"],
                    chip["health"],
                    host["softshare"]["capacity"],
                    100 * host["health"]["chips"],
                ),
                "check `npu-smi info -t health -i %s`, reset or replace the chip; "
                "keep it out of vLLM instances (npuops_vllm_instances) until it is "
                "OK" % chip["npu_id"],
            )
        )
    if host["health"].get("unknown"):
        out.append(_health_unknown(host))
    strict = host["plans"]["strict"]
    accel = host["npus"] + host["gpus"] > 0
    hint = host.get("cpuset_hint")
    if strict["status"] == "failed" and hint and hint in (strict["error"] or ""):
        # npu_cpu_plan ran out of CPUs because the facts came from inside a job's cgroup
        out.append(
            _problem(
                "error",
                name,
                "plan_failed",
                "no strict plan: facts gathered in a cut cpuset",
                strict["error"].replace("; " + hint, ""),
                hint,
            )
        )
    elif strict["status"] == "failed":
        out.append(
            _problem(
                "error",
                name,
                "plan_failed",
                "no strict plan",
                strict["error"],
                "fix what the message names (cpuset too small, missing topology), "
                "or restrict the plan to the devices in use (npuops_vllm_instances, "
                "npuops_npus)",
            )
        )
    elif strict["status"] == "ok":
        if strict["overlaps"]:
            out.append(
                _problem(
                    "error",
                    name,
                    "strict_overlap",
                    "strict pools overlap",
                    _pairs_text(strict["overlaps"]),
                    "this breaks a strict-policy invariant: report it with the host "
                    "snapshot (npu_topology_facts save_snapshot)",
                )
            )
        if strict["cross_numa"]:
            out.append(
                _problem(
                    "warning",
                    name,
                    "strict_cross_numa",
                    "strict pools off their device's NUMA node",
                    _cross_text(strict["cross_numa"]) + " (allowed CPUs %s)" % host["allowed"],
                    "widen the cpuset (Cpus_allowed_list) to the devices' NUMA nodes, or run fewer devices per host",
                )
            )
        for warning in strict["warnings"]:
            out.append(
                _problem(
                    "info",
                    name,
                    "plan_warning",
                    "strict plan warning",
                    warning,
                    "read the warning; the plan is still applied",
                )
            )
    vllm = host["plans"][VLLM]
    if vllm["applicable"]:
        if vllm["status"] == "failed":
            out.append(
                _problem(
                    "error", name, "vllm_fails", "vllm-ascend's in-process binding fails here", vllm["error"], FIX_VLLM
                )
            )
        elif vllm["status"] == "skipped":
            out.append(
                _problem(
                    "info",
                    name,
                    "vllm_skipped",
                    "vllm-ascend's in-process binding does nothing here",
                    vllm["reason"],
                    "bind with the strict plan (npuops.fleet.cpu_binding role)",
                )
            )
        elif vllm["status"] == "ok":
            out.extend(_vllm_findings(name, host, vllm))
    bans = host["irqbalance_bans"]
    known = applied.irqbalance_finding(host.get("config") or {"known": False}, bans)
    if known is not None:
        severity, title, irqs, fix = known
        evidence = "irqbalance is active; %d of %d planned IRQs not banned in %s: %s" % (
            len(irqs),
            bans["pinned_count"],
            bans["config"] or "its config",
            _irq_list(irqs),
        )
        out.append(_problem(severity, name, "irqbalance_running", title, evidence, fix))
    elif bans["state"] in ("unbanned", "unknown"):
        out.append(
            _problem(
                "warning",
                name,
                "irqbalance_running",
                "irqbalance will undo IRQ affinity",
                _irqbalance_evidence(host),
                FIX_IRQBALANCE,
            )
        )
    if accel and host["migratepages"] is False:
        out.append(
            _problem(
                "warning",
                name,
                "migratepages_missing",
                "migratepages missing",
                "migratepages is not on PATH: worker memory is not moved to the "
                "pool's NUMA node (vllm-ascend logs 'The 'migratepages' command is "
                "not available, skipping memory binding.')",
                FIX_MIGRATEPAGES,
            )
        )
    unconfined = cgroup.confinement_warning(host.get("cgroup")) if accel else None
    if unconfined:
        out.append(
            _problem(
                "info",
                name,
                "cpuset_not_enforced",
                "AllowedCPUs= not enforced (cgroup mode)",
                unconfined,
                "boot with the unified hierarchy (systemd.unified_cgroup_hierarchy=1) "
                "and the cpuset controller for a hard confinement; meanwhile keep "
                "the reconcile timer on (npuops_vllm_reconcile) so drift is pinned "
                "back and shows in its metrics",
            )
        )
    if host["rails"]["status"] == "inconsistent":
        parts = []
        for dev in host["rails"]["deviations"]:
            parts.append(
                "GPU%s -> %s where %s of %s hosts of its shape use %s%s"
                % (
                    dev["gpu"],
                    dev["nic"],
                    dev["hosts_with_majority"],
                    dev["peers"],
                    dev["majority"],
                    " (tie: no clear majority)" if dev["tie"] else "",
                )
            )
        out.append(
            _problem(
                "warning",
                name,
                "rail_inconsistent",
                "GPU rails differ from identical hosts",
                "; ".join(parts) or "GPU -> NIC mapping differs from its peers",
                "check NIC cabling and PCIe slots and the RDMA device names "
                "(udev renames); until they match, pass NCCL_IB_HCA from each "
                "host's own plan (plan env) rather than one fleet-wide value",
            )
        )
    unknown = [d for d in host["plans"]["strict"]["devices"] if d["kind"] == "gpu" and not d["home_nodes"]]
    if (
        vendors.is_gpu_vendor(host["vendor"])
        and host["gpus"]
        and (len(unknown) == host["gpus"] or len(host["numa_nodes"]) <= 1)
    ):
        out.append(
            _problem(
                "warning",
                name,
                "numa_unknown",
                "GPU NUMA affinity unknown",
                "%s, %s: every GPU pool spans all CPUs"
                % (plural(len(host["numa_nodes"]), "NUMA node"), "GPU NUMA affinity N/A"),
                "enable NUMA (drop numa=off from the kernel command line, NPS/SNC in BIOS) so pools can be NUMA-local",
            )
        )
    partition = host.get("cpu_partition") or {}
    if partition.get("reboot_pending"):
        out.append(
            _problem(
                "warning",
                name,
                "partition_reboot_pending",
                "CPU partition: kernel command line waits for a reboot",
                "the partition asks for %s; the running kernel has %s"
                % (
                    " ".join(partition.get("kernel_cmdline_wanted") or []),
                    " ".join("%s=%s" % kv for kv in sorted((partition.get("cmdline") or {}).items())) or "none of them",
                ),
                "reboot the host in a maintenance window (after update-grub / "
                "grub2-mkconfig where tuned does not manage the boot loader); the "
                "role never reboots",
            )
        )
    out.extend(release_problems(host))
    out.extend(
        _problem(severity, name, kind, title, evidence, fix)
        for severity, kind, title, evidence, fix in kubernetes_rows(host)
    )
    return out


def _id_span(ids):
    """``P3-P14`` for consecutive problem ids, else ``P3, P5, P9``; a long list is cut
    (``shapes.compact_ids``)."""
    return compact_ids(ids)


def group_problems(problems):
    """Problems of the same kind, title, severity and fix across hosts, as one group each, in
    the order of their first problem: ``[{severity, kind, title, fix, count, host_count, hosts,
    ids, id_text, problems, evidence}]``. ``problems`` are indexes into ``problems``;
    ``evidence`` is the evidence when every member has the same, else None. For the renderers'
    problem lists; the report's ``problems`` stay one per host."""
    groups = OrderedDict()
    seen = {}
    for index, problem in enumerate(problems):
        key = (problem["severity"], problem["kind"], problem["title"], problem["fix"])
        group = groups.get(key)
        if group is None:
            group = groups[key] = OrderedDict(
                [
                    ("severity", problem["severity"]),
                    ("kind", problem["kind"]),
                    ("title", problem["title"]),
                    ("fix", problem["fix"]),
                    ("count", 0),
                    ("host_count", 0),
                    ("hosts", []),
                    ("ids", []),
                    ("id_text", ""),
                    ("problems", []),
                    ("evidence", problem["evidence"]),
                ]
            )
            seen[key] = set()
        group["count"] += 1
        if problem["host"] not in seen[key]:
            seen[key].add(problem["host"])
            group["hosts"].append(problem["host"])
        group["ids"].append(problem["id"])
        group["problems"].append(index)
        if group["evidence"] != problem["evidence"]:
            group["evidence"] = None
    out = list(groups.values())
    for group in out:
        group["host_count"] = len(group["hosts"])
        group["id_text"] = _id_span(group["ids"])
    return out
