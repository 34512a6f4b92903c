# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet audit report as one self-contained HTML page with inline SVG CPU maps.

Controller side. ``render_html(report)`` formats the dict of ``fleet_report.build_report``; it
never analyses. The page is Jinja2 templates (``templates/*.html.j2`` beside this file, the CSS
and the host filter's script static files there) rendered with autoescape on: every value a
template prints is HTML-escaped, in text and in attributes, and put on one line
(``schema.one_line``, the environment's ``finalize``); nothing here escapes by hand and
nothing is marked safe but the two static files. This module computes what the templates
print: which rows and cards, the geometry of each CPU map (``svg_map``). Every number on the
page carries the JSON pointer of its value in the report (``data-ptr``).

Hosts are drawn by shape (``report["shapes"]``): one table row, one pair of CPU maps and the
collapsed list of its hosts per shape, so a fleet of identical servers stays a small page. One
inline script (``host_filter.js``, allowed by its hash in the page's Content-Security-Policy,
nothing else may run) filters the page by host name; without it the page shows everything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import os
from collections import OrderedDict

import jinja2
from markupsafe import Markup

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import inventory, kubelet_whatif
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import (
    COMPARED,
    POLICIES,
    ROLES,
    comparison_title,
    cpu_ids,
    device_label,
    one_line,
    plural,
    policy_caption,
    policy_heading,
)
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.shapes import compact_host_parts, shapes_of

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")

ROLE_COLOURS = OrderedDict(
    [("irq", "#f28e2b"), ("main", "#4e79a7"), ("acl", "#59a14f"), ("release", "#b07aa1"), ("pool", "#76b7b2")]
)
OVERLAP_COLOUR = "#d62728"
# strict / GPU plans: the API server, EngineCore and tokenizers; CPUs nobody got (cpu_budget)
BUDGET_COLOURS = OrderedDict([("frontend", "#b07aa1"), ("spare", "#c9c9c9")])
HOSTS_SHOWN = 12  # compact host items shown in a table cell before "... N more"


def _finalize(value):
    """What every ``{{ ... }}`` prints, before autoescape: None as nothing, host text on one
    line; markup (a macro's output, a static file) as it is."""
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    return one_line(str(value))


def _static(name):
    with open(os.path.join(TEMPLATES, name), encoding="utf-8") as handle:
        return handle.read()


CSS = _static("report.css")
# The host filter: shows the shapes (and their table rows and problem rows) holding a host whose
# name contains the text typed; ``#host=<text>`` in the address fills it in. Reads only the
# page's own data-host / data-shape / data-shapes attributes.
SCRIPT = _SCRIPT = _static("host_filter.js")
SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src '%s'; base-uri 'none'; form-action 'none'" % SCRIPT_HASH
)

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    finalize=_finalize,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.globals.update(
    COMPARED=COMPARED,
    POLICIES=POLICIES,
    HOSTS_SHOWN=HOSTS_SHOWN,
    ROLE_COLOURS=ROLE_COLOURS,
    OVERLAP_COLOUR=OVERLAP_COLOUR,
    BUDGET_COLOURS=BUDGET_COLOURS,
    UNKNOWN=inventory.UNKNOWN,
    compact_host_parts=compact_host_parts,
    comparison_title=comparison_title,
    device_label=device_label,
    plural=plural,
    policy_caption=policy_caption,
    policy_heading=policy_heading,
    versions_text=inventory.versions_text,
    device_columns=inventory.COLUMNS,
    device_cells=inventory.cells,
    whatif_headers=kubelet_whatif.HEADERS,
    whatif_intro=kubelet_whatif.INTRO,
)


def _summary_cards(report):
    s = report["summary"]
    cards = [
        ("hosts", "hosts", ""),
        ("shapes", "host shapes", ""),
        ("npus", "NPUs", ""),
        ("gpus", "GPUs", ""),
        ("unhealthy", "unhealthy chips", "c-bad" if s["unhealthy"] else ""),
        ("health_unknown", "devices: health unknown", "c-warn" if s.get("health_unknown") else ""),
        ("softshare_capacity", "soft-share capacity", ""),
        (
            "vllm_overlap_hosts",
            "hosts: vllm-ascend overlaps"
            + (
                " (assumed release)"
                if s["vllm_overlap_hosts"] and s["vllm_overlap_hosts"] == s.get("vllm_overlap_assumed_hosts")
                else ""
            ),
            "c-bad" if s["vllm_overlap_hosts"] > s.get("vllm_overlap_assumed_hosts", 0) else "",
        ),
        ("irqbalance_unbanned", "hosts: irqbalance can move IRQs", "c-warn" if s["irqbalance_unbanned"] else ""),
        ("migratepages_missing", "hosts: no migratepages", "c-warn" if s["migratepages_missing"] else ""),
        ("rails_inconsistent", "hosts: rails differ", "c-warn" if s["rails_inconsistent"] else ""),
        ("binding_checked_hosts", "hosts: binding read back", ""),
        ("drift_hosts", "hosts: binding drifted", "c-bad" if s.get("drift_hosts") else ""),
    ]
    out = [
        {"cls": cls, "id": key.replace("_", "-"), "value": s[key], "ptr": "/summary/" + key, "label": label}
        for key, label, cls in cards
        if key in s
    ]
    for sev in ("error", "warning", "info"):
        count = s["problems"][sev]
        out.append(
            {
                "cls": {"error": "c-bad", "warning": "c-warn"}.get(sev, "") if count else "",
                "id": "problems-" + sev,
                "value": count,
                "ptr": "/summary/problems/" + sev,
                "label": sev + (" problems" if sev != "info" else " notes"),
            }
        )
    return out


def shapes_by_host(report):
    """``{host name: shape id}`` (a report from before shapes: one shape per host)."""
    out = {}
    for shape in shapes_of(report):
        for name in shape["hosts"]:
            out[name] = shape["id"]
    return out


def groups(report):
    found = report.get("problem_groups")
    if found is None:  # a report dict from before problem_groups
        found = [{"problems": [i]} for i in range(len(report["problems"]))]
    return found


def _evidence_items(report, g, shape_of):
    """``g["evidence_groups"]``, or one item per problem for a report from before them."""
    items = g.get("evidence_groups")
    if items is not None:
        return items
    out = []
    for i in g["problems"]:
        p = report["problems"][i]
        out.append(
            {
                "evidence": p["evidence"],
                "hosts_text": p["host"],
                "ids": [p["id"]],
                "id_text": p["id"],
                "problems": [i],
                "shapes": [shape_of[p["host"]]] if p["host"] in shape_of else [],
            }
        )
    return out


def problems_view(report, shape_of):
    """The problems section's rows: one per problem group (a problem on one host is its own
    row, one on several hosts lists them with the evidence per group of hosts); info notes
    apart, below the fold."""
    rows, notes = [], []
    for index, g in enumerate(groups(report)):
        first = report["problems"][g["problems"][0]]
        if len(g["problems"]) == 1:
            row = {"problem": first, "shape": shape_of.get(first["host"])}
        else:
            shapes = g.get("shapes")
            if shapes is None:
                shapes = sorted(set(shape_of.get(h) for h in g["hosts"] if h in shape_of))
            row = {"group": g, "index": index, "shapes": shapes, "items": _evidence_items(report, g, shape_of)}
        (notes if first["severity"] == "info" else rows).append(row)
    return {"rows": rows, "notes": notes}


def drift_view(report, shape_of):
    """The drift rows (``report["drift"]``) with the shapes of their hosts."""
    out = []
    for g in report.get("drift") or []:
        shapes = []
        for name in g["hosts"]:
            if shape_of.get(name) and shape_of[name] not in shapes:
                shapes.append(shape_of[name])
        out.append({"group": g, "shapes": shapes})
    return out


def _shape_problem_links(report, shape):
    """Links to the problem rows of the shape's problems (one host's worth)."""
    links = []
    for index, g in enumerate(groups(report)):
        members = g["problems"]
        shapes = g.get("shapes")
        if shapes is not None and shape["id"] not in shapes:
            continue
        if shapes is None and not any(report["problems"][m]["host"] in shape["hosts"] for m in members):
            continue
        if len(members) == 1:
            g = report["problems"][members[0]]
            target = "problem-" + g["id"]
        else:
            target = "problem-group-%d" % index
        links.append({"target": target, "severity": g["severity"], "title": g["title"]})
    return links


def node_labels(numa, scale, room=18.0):
    """Where the map writes each NUMA node's label: ``([(x from the CPU axis start, node)],
    [nodes without a label])``. A label sits on each run of its node's CPUs that is ``room``
    pixels wide (a node whose CPUs are not contiguous - SMT siblings N and N+128 - gets one
    per run, over its own CPUs), never over another label; a node none of whose runs has
    room (interleaved numbering: every other CPU) is listed instead."""
    labels, taken = [], []
    for node, cpus in sorted(numa.items()):
        for first, last in cpulist.runs(sorted(set(cpus))):
            start, end = first * scale, (last + 1) * scale
            centre = (start + end) / 2
            if end - start >= room and all(abs(centre - other) >= room for other in taken):
                labels.append((centre, node))
                taken.append(centre)
    named = set(node for _x, node in labels)
    return labels, [n for n in sorted(numa) if numa[n] and n not in named]


def _runs(cpus):
    """Contiguous runs [(first, last), ...] of the sorted unique CPU ids."""
    return cpulist.runs(sorted(set(cpus)))


def svg_map(host, plan, index, policy):
    """The geometry of one CPU map (``maps.html.j2`` draws it): NUMA nodes as bands, the
    cpuset strip, one row per device with its role runs, the budget rows, the overlap row and
    the CPU axis ticks at NUMA boundaries. Only numbers and text; the template escapes."""
    numa = dict((int(n), cpu_ids(c)) for n, c in host["numa_nodes"].items())
    online = cpu_ids(host["online"])
    allowed = set(cpu_ids(host["allowed"]))
    top = max([c for cs in numa.values() for c in cs] + online + [0]) + 1
    width, left, right = 660.0, 92.0, 8.0
    scale = (width - left - right) / top
    row_h, gap = 15, 4
    devices = plan["devices"]
    overlap = set(cpu_ids(plan["overlap"]))
    budget_rows = [(name, cpu_ids(plan.get(name))) for name in BUDGET_COLOURS if cpu_ids(plan.get(name))]
    height = 24 + 14 + (row_h + gap) * (max(len(devices), 1) + len(budget_rows)) + (row_h + 8 if overlap else 0) + 16

    def x(cpu):
        return left + cpu * scale

    def cpu_span(first, last, least=0.0, **more):
        more.update(x="%.2f" % x(first), w="%.2f" % max((last - first + 1) * scale, least))
        return more

    shades = ("#e8eef7", "#f6f0e4")
    out = {
        "width": width,
        "height": height,
        "left": left,
        "row_h": row_h,
        "index": index,
        "policy": policy,
        "host": host["name"],
        "rows": [],
        "nodes": [
            cpu_span(first, last, fill=shades[pos % 2], title="NUMA node %d: %s" % (node, cpulist.format(cpus)))
            for pos, (node, cpus) in enumerate(sorted(numa.items()))
            for first, last in _runs(cpus)
        ],
        "denied": [cpu_span(f, la) for f, la in _runs(set(online) - allowed if allowed else [])],
        "allowed": [cpu_span(f, la) for f, la in _runs(allowed)],
    }
    labels, out["unlabelled"] = node_labels(numa, scale)
    out["labels"] = [("%.2f" % (left + centre), node) for centre, node in labels]
    y = 40
    for dev in devices:
        label = "%s%s" % (dev["label"], " \u2192 " + str(dev.get("nic")) if dev.get("nic") else "")
        row = {
            "y": y,
            "colour": OVERLAP_COLOUR if dev["cross_numa"] else "#1d232a",
            "bold": False,
            "label": label + (" \u26a0" if dev["cross_numa"] else ""),
            "runs": [],
            "home": [cpu_span(f, la) for node in dev["home_nodes"] for f, la in _runs(numa.get(node, []))],
        }
        parts = [(r, cpu_ids(dev["roles"][r])) for r in ROLES]
        pool = cpu_ids(dev["pool"])
        in_roles = set(c for _role, cpus in parts for c in cpus)
        parts.append(("pool", [c for c in pool if c not in in_roles]))
        for role, cpus in parts:
            for first, last in _runs(cpus):
                row["runs"].append(
                    cpu_span(
                        first,
                        last,
                        0.8,
                        fill=ROLE_COLOURS[role],
                        title="%s %s: %s" % (dev["label"], role, cpulist.format(range(first, last + 1))),
                    )
                )
        row["overlap"] = [cpu_span(f, la, 1) for f, la in _runs(overlap.intersection(pool))]
        out["rows"].append(row)
        y += row_h + gap
    for name, cpus in budget_rows:
        out["rows"].append(
            {
                "y": y,
                "colour": "#1d232a",
                "bold": False,
                "label": name,
                "home": [],
                "overlap": [],
                "runs": [
                    cpu_span(
                        f, la, 0.8, fill=BUDGET_COLOURS[name], title="%s: %s" % (name, cpulist.format(range(f, la + 1)))
                    )
                    for f, la in _runs(cpus)
                ],
            }
        )
        y += row_h + gap
    if overlap:
        out["rows"].append(
            {
                "y": y,
                "colour": OVERLAP_COLOUR,
                "bold": True,
                "label": "overlap",
                "home": [],
                "overlap": [],
                "runs": [
                    cpu_span(f, la, 1, fill=OVERLAP_COLOUR, title="shared: %s" % cpulist.format(range(f, la + 1)))
                    for f, la in _runs(overlap)
                ],
            }
        )
        y += row_h + 8
    out["axis_y"] = y
    ticks = sorted(set([0, top] + [cs[0] for cs in numa.values() if cs]))
    out["ticks"] = [("%.2f" % min(max(x(tick), left), width - 10), tick) for tick in ticks]
    return out


def _article(report, shape):
    """A shape's article: its hosts, its problems and the CPU maps of its first host."""
    index = shape["host"]
    host = report["hosts"][index]
    figures = []
    for policy in POLICIES:
        plan = host["plans"][policy]
        ok = plan["applicable"] and plan["status"] == "ok"
        figures.append({"policy": policy, "plan": plan, "map": svg_map(host, plan, index, policy) if ok else None})
    return {
        "host": host,
        "shape": shape,
        "index": index,
        "figures": figures,
        "links": _shape_problem_links(report, shape),
    }


def render_html(report):
    """One self-contained page: inline CSS and SVG, one inline script (the host filter, the
    only script the page's Content-Security-Policy allows), no external assets."""
    shape_of = shapes_by_host(report)
    shapes = shapes_of(report)
    titled = [
        (sh["id"], sh["hosts"][0] if sh["host_count"] == 1 else sh["hosts_text"], report["hosts"][sh["host"]])
        for sh in shapes
    ]
    page = _ENV.get_template("report.html.j2").render(
        report=report,
        shapes=shapes,
        cards=_summary_cards(report),
        csp=CSP,
        css=Markup(CSS),
        script=Markup(SCRIPT),
        problems=problems_view(report, shape_of),
        drift=drift_view(report, shape_of),
        titled_shapes=titled,
        whatif_rows=kubelet_whatif.whatif_rows(titled),
        articles=[_article(report, shape) for shape in shapes],
    )
    return page + "\n"
