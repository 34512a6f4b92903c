# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet audit report as Markdown (controller side).

``render_markdown(report)`` formats the dict of ``fleet_report.build_report``; it never
analyses. Every string that came from a host is HTML-escaped and its Markdown neutralised.
Hosts are listed by shape (``report["shapes"]``): one row and one pool table per shape, its
hosts as a compact list (``a2-[0001-0950]``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import applied, inventory
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import device_label
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import (
    COMPARED,
    POLICIES,
    ROLES,
    VLLM,
    comparison_title,
    one_line,
    plural,
)
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.kubelet_whatif import whatif_markdown
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.shapes import shapes_of
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.vllm_ascend_release import release_markdown
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.vllm_instances import instances_markdown


def _md(value):
    """Markdown text from a value: on one line (``schema.one_line``), HTML-escaped, pipes and
    Markdown's marks neutralised."""
    if value is None:
        return "-"
    text = html.escape(one_line(str(value)), quote=False)
    return (
        text.replace("|", "\\|")
        .replace("`", "'")
        .replace("*", "\\*")
        .replace("_", "\\_")
        .replace("[", "\\[")
        .replace("]", "\\]")
    )


def _md_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(_md(c) for c in row) + " |")
    return lines


def _effect_note(host, policy):
    """Whether vllm-ascend's predicted binding applies: not where every instance runs with host
    binding ("" for another policy)."""
    config = host.get("config") or {}
    if policy == VLLM and config.get("known") and not config.get("vllm_bound"):
        return applied.not_in_effect_note(config)
    return ""


def _basis_md(report, section):
    """The section's basis (``report["sources"]``: installed plan or what-if) as a line and a
    blank one; none for a report without sources."""
    source = (report.get("sources") or {}).get(section) or {}
    if not source:
        return []
    return [_md(source["text"][0].upper() + source["text"][1:]) + ".", ""]


def _comparison_md(shapes, note=()):
    """Every policy's mode, CPUs used, overlap and cross-NUMA pools side by side, a note after
    each policy compared with the strict plan."""
    headers, rows = ["hosts"], []
    for policy in POLICIES:
        headers += ["%s mode" % policy, "CPUs used", "overlap CPUs", "cross-NUMA"]
        headers += ["note"] if policy in COMPARED else []
    for shape, h in shapes:
        row = [_hosts_cell(shape)]
        for policy in POLICIES:
            plan = h["plans"][policy]
            row += [plan["mode"] if plan["status"] == "ok" else _plan_cell(plan, "status")]
            row += [_plan_cell(plan, f) for f in ("cpus_used", "overlap_cpus", "cross_numa_count")]
            if policy in COMPARED:
                row.append(plan["reason"] or plan["error"] or _effect_note(h, policy))
        rows.append(row)
    return ["", "## " + comparison_title(), ""] + list(note) + _md_table(headers, rows)


def _plan_cell(plan, field):
    if not plan["applicable"]:
        return "n/a"
    if plan["status"] != "ok":
        return plan["status"]
    return plan[field]


def _groups(report):
    groups = report.get("problem_groups")
    if groups is None:  # a report dict from before problem_groups: one group per problem
        groups = [
            {
                "severity": p["severity"],
                "title": p["title"],
                "fix": p["fix"],
                "hosts": [p["host"]],
                "host_count": 1,
                "id_text": p["id"],
                "problems": [i],
                "evidence": p["evidence"],
            }
            for i, p in enumerate(report["problems"])
        ]
    return groups


def _evidence_items(report, g):
    items = g.get("evidence_groups")
    if items is None:  # a report dict from before evidence_groups: one item per problem
        items = [
            {
                "hosts_text": report["problems"][i]["host"],
                "id_text": report["problems"][i]["id"],
                "evidence": report["problems"][i]["evidence"],
            }
            for i in g["problems"]
        ]
    return items


def _problems_md(report):
    """One row per problem group (same kind and fix on several hosts: one row listing the
    hosts compactly); the evidence of a group, per group of hosts that share it, follows the
    table as a sub-list."""
    rows, details, notes = [], [], []
    for g in _groups(report):
        members = g["problems"]
        target = notes if report["problems"][members[0]]["severity"] == "info" else rows
        if len(members) == 1:
            p = report["problems"][members[0]]
            target.append([p["id"], p["severity"], p["host"], p["title"], p["evidence"], p["fix"]])
            continue
        hosts = "%s: %s" % (plural(g["host_count"], "host"), g.get("hosts_text") or ", ".join(g["hosts"]))
        evidence = g["evidence"] if g["evidence"] is not None else "per host below the table"
        target.append([g["id_text"], g["severity"], hosts, g["title"], evidence, g["fix"]])
        if g["evidence"] is not None:
            continue  # the same evidence on every host: the row says it all
        details.append("- **%s** %s \u2014 %s:" % (_md(g["id_text"]), _md(g["title"]), _md(hosts)))
        for item in _evidence_items(report, g):
            details.append("  - %s (%s): %s" % (_md(item["hosts_text"]), _md(item["id_text"]), _md(item["evidence"])))
    columns = ["id", "severity", "host", "problem", "evidence", "fix"]
    out = _md_table(columns, rows) if rows else ["No errors or warnings."]
    if details:
        out += ["", "Evidence per host of the grouped rows:", ""] + details
    if notes:  # below the fold: assumptions and optional facts, not what to fix first
        out += ["", "### Info notes (%d: assumed versions, optional facts)" % len(notes), ""]
        out += _md_table(columns, notes)
    return out


def _irqbalance_md(host):
    bans = host.get("irqbalance_bans") or {}
    state = bans.get("state")
    if host["irqbalance"] != "running" or state in (None, "n/a"):
        return host["irqbalance"]
    if state == "none":
        return "running (no IRQs pinned)"
    if state == "unknown":
        return "running (no strict plan)"
    return "running, %d/%d IRQs banned" % (bans["banned_count"], bans["pinned_count"])


def _binding_md(host):
    """A shape's binding cell: the state, and how many drift rows."""
    binding = host.get("binding") or {}
    state = binding.get("state", "not_read")
    if state == "drifted":
        return "DRIFTED (%d)" % len(binding.get("drift") or [])
    return {"not_read": "-", "none": "no instance", "not_checked": "not checked"}.get(state, state)


def _drift_md(report):
    """One row per kind of drift and fix across hosts; differing evidence as examples."""
    groups = report.get("drift") or []
    s = report["summary"]
    head = "Binding read back on %s; drift on %s." % (
        plural(s.get("binding_checked_hosts", 0), "host"),
        plural(s.get("drift_hosts", 0), "host"),
    )
    if not groups:
        return [
            head,
            "",
            "No drift found."
            if s.get("binding_checked_hosts")
            else "No running instance was checked (vllm_binding_facts).",
        ]
    rows = []
    for g in groups:
        evidence = (
            g["evidence"]
            if g["evidence"] is not None
            else "; ".join(g["examples"])
            + (" (and %d more)" % (g["count"] - len(g["examples"])) if g["count"] > len(g["examples"]) else "")
        )
        rows.append(
            [
                g["kind"],
                g["title"],
                "%s: %s" % (plural(g["host_count"], "host"), g["hosts_text"]),
                ", ".join(g["instances"]),
                g["count"],
                evidence,
                g["fix"],
            ]
        )
    return [head, ""] + _md_table(["kind", "drift", "hosts", "instances", "rows", "evidence", "fix"], rows)


def _hosts_cell(shape):
    """A shape's hosts: its one host, or the count and the compact list."""
    if shape["host_count"] == 1:
        return shape["hosts"][0]
    return "%d hosts: %s" % (shape["host_count"], shape["hosts_text"])


def render_markdown(report):
    s = report["summary"]
    out = [
        "# Fleet report",
        "",
        "%s, %s, %s; soft-share capacity %d; %d unhealthy chips; %d devices of unknown "
        "health."
        % (
            plural(s["hosts"], "host"),
            plural(s["npus"], "NPU"),
            plural(s["gpus"], "GPU"),
            s["softshare_capacity"],
            s["unhealthy"],
            s.get("health_unknown", 0),
        ),
        "Problems: %d errors, %d warnings, %d info."
        % (s["problems"]["error"], s["problems"]["warning"], s["problems"]["info"]),
        "Host shapes: %d (hosts with the same topology, plans and problems)." % s.get("shapes", s["hosts"]),
        "",
        "## Problems",
        "",
    ]
    if report["problems"]:
        out += _problems_md(report)
    else:
        out.append("No problems found.")
    out += ["", "## Binding drift (read back vs plan)", ""] + _basis_md(report, "drift") + _drift_md(report)
    out += ["", "## Device types", ""]
    out += _md_table(
        ["vendor", "device type", "hosts", "devices", "healthy", "health unknown", "soft-share capacity"],
        [
            [
                t["vendor"],
                device_label(t["device_type"]),
                t["hosts"],
                t["devices"],
                t["healthy"],
                t.get("health_unknown", 0),
                t["capacity"],
            ]
            for t in report["device_types"]
        ],
    )
    shapes = [(shape, report["hosts"][shape["host"]]) for shape in shapes_of(report)]
    out += [
        "",
        "## Hosts by shape",
        "",
        "Hosts with the same topology, plans and problems are one shape: one row each (the values of every host in it)."
        if len(shapes) < s["hosts"]
        else "Every host is its own shape.",
        "",
    ]
    out += _md_table(
        [
            "hosts",
            "arch",
            "vendor",
            "type",
            "CPUs allowed/online",
            "NUMA nodes",
            "devices",
            "healthy",
            "capacity",
            "irqbalance",
            "migratepages",
            "rails",
            "facts errors",
            "binding",
            "shape",
        ],
        [
            [
                _hosts_cell(shape),
                h["arch"],
                h["vendor"],
                device_label(h["device_type"]),
                "%d/%d" % (h["cpus_allowed"], h["cpus_online"]),
                len(h["numa_nodes"]),
                h["npus"] + h["gpus"],
                h["health"]["healthy"],
                h["softshare"]["capacity"],
                _irqbalance_md(h),
                {True: "yes", False: "MISSING"}.get(h["migratepages"], "unknown"),
                h["rails"]["status"],
                len(h["facts_errors"]),
                _binding_md(h),
                shape["id"],
            ]
            for shape, h in shapes
        ],
    )
    out += inventory.markdown(shapes, _md_table, _hosts_cell, _md)
    out += _comparison_md(shapes, _basis_md(report, "plans"))
    out += release_markdown(shapes, _md_table, _hosts_cell)
    out += instances_markdown(shapes, _md_table, _hosts_cell)
    out += whatif_markdown([(shape["id"], _hosts_cell(shape), h) for shape, h in shapes], _md_table)
    out += ["", "## Pools per shape", ""] + _basis_md(report, "plans")
    for shape, h in shapes:
        out += ["### " + _md(_hosts_cell(shape)), ""]
        if h["numa_nodes"]:
            out.append(
                "NUMA: "
                + ", ".join("node %s %s" % (_md(n), _md(c or "(memory only)")) for n, c in h["numa_nodes"].items())
            )
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
                extra = " nic=%s link=%s" % (d.get("nic"), d.get("link")) if d["kind"] == "gpu" else ""
                row += [
                    "%s (N%s)%s"
                    % (d["pool"], ",".join(str(n) for n in d["numa_nodes"]), " CROSS-NUMA" if d["cross_numa"] else ""),
                    (roles + extra).strip(),
                ]
            rows.append(row)
        out += _md_table(["device"] + ["%s %s" % (p, c) for p in POLICIES for c in ("pool", "roles")], rows)
        out.append("")
    return "\n".join(out).rstrip() + "\n"
