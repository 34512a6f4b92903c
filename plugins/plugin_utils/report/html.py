# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet audit report as one self-contained HTML page with inline SVG CPU maps.

Controller side. ``render_html(report)`` formats the dict of ``fleet_report.build_report``; it
never analyses. Every string that came from a host is escaped; every number on the page carries
the JSON pointer of its value in the report (``data-ptr``).

Hosts are drawn by shape (``report["shapes"]``): one table row, one pair of CPU maps and the
collapsed list of its hosts per shape, so a fleet of identical servers stays a small page. One
inline script (``_SCRIPT``, allowed by its hash in the page's Content-Security-Policy, nothing
else may run) filters the page by host name; without it the page shows everything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import (
    COMPARED, POLICIES, ROLES, SEVERITIES, comparison_title, cpu_ids, plural, policy_caption,
    policy_heading)
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html_base import Ptr as _Ptr, escape as _e
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html_base import node_labels
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html_drift import binding_cell, drift_html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.kubelet_whatif import whatif_html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import inventory
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import device_label
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html_filter import (
    CSP, SCRIPT as _SCRIPT, filter_html as _filter_html)
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html_problems import (
    groups as _groups, hosts_inline as _hosts_inline, problems_html as _problems_html,
    shapes_by_host as _shape_of)
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.shapes import (
    compact_host_parts, shapes_of)

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
.bad{color:#c0392b;font-weight:600}.warn{color:#b9770e}.ok{color:#1e8449}.muted{color:#7b8794}
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
tr.group .hosts{font-size:12.5px}
tr.group .hosts .h{white-space:nowrap}
details summary{cursor:pointer;color:#1f5f8b;font-size:12.5px}
ul.per-host{margin:4px 0 0;padding-left:18px;font-size:12.5px}
ul.per-host li{margin:2px 0}
[hidden]{display:none!important}
#filter{margin:12px 0 0;font-size:13px}
#filter input{font:inherit;padding:4px 8px;width:22em;border-radius:4px;border:1px solid #9aa5b1}
#filter-status{margin-left:10px;opacity:.9}
p.hostlist,details.hostlist{font-size:12.5px;margin:4px 0 8px}
.hostlist span[data-host]{white-space:nowrap}
.hostlist span.hit{background:#ffe58a;font-weight:600}
.shape-problems{font-size:12.5px;margin:2px 0 6px}
.shape-problems a{margin-right:8px}
"""


def _runs(cpus):
    """Contiguous runs [(first, last), ...] of the sorted unique CPU ids."""
    return cpulist.runs(sorted(set(cpus)))


def _summary_cards(report):
    s = report["summary"]
    cards = [("hosts", "hosts", ""), ("shapes", "host shapes", ""), ("npus", "NPUs", ""),
             ("gpus", "GPUs", ""),
             ("unhealthy", "unhealthy chips", "c-bad" if s["unhealthy"] else ""),
             ("health_unknown", "devices: health unknown", "c-warn" if s.get("health_unknown") else ""),
             ("softshare_capacity", "soft-share capacity", ""),
             ("vllm_overlap_hosts", "hosts: vllm-ascend overlaps" + (
                 " (assumed release)" if s["vllm_overlap_hosts"] and s["vllm_overlap_hosts"]
                 == s.get("vllm_overlap_assumed_hosts") else ""),
              "c-bad" if s["vllm_overlap_hosts"] > s.get("vllm_overlap_assumed_hosts", 0) else ""),
             ("irqbalance_unbanned", "hosts: irqbalance can move IRQs",
              "c-warn" if s["irqbalance_unbanned"] else ""),
             ("migratepages_missing", "hosts: no migratepages",
              "c-warn" if s["migratepages_missing"] else ""),
             ("rails_inconsistent", "hosts: rails differ", "c-warn" if s["rails_inconsistent"] else ""),
             ("binding_checked_hosts", "hosts: binding read back", ""),
             ("drift_hosts", "hosts: binding drifted", "c-bad" if s.get("drift_hosts") else "")]
    out = ['<div class="cards">']
    for key, label, cls in cards:
        if key not in s:
            continue
        out.append('<div class="card %s" id="sum-%s">%s<span class="lbl">%s</span></div>' % (
            cls, key.replace("_", "-"), _Ptr.num(s[key], "/summary/" + key), _e(label)))
    for sev in SEVERITIES:
        cls = {"error": "c-bad", "warning": "c-warn"}.get(sev, "") if s["problems"][sev] else ""
        out.append('<div class="card %s" id="sum-problems-%s">%s<span class="lbl">%s</span></div>'
                   % (cls, sev, _Ptr.num(s["problems"][sev], "/summary/problems/" + sev),
                      _e(sev + (" problems" if sev != "info" else " notes"))))
    out.append("</div>")
    return "\n".join(out)


def _types_html(report):
    out = ['<table id="device-types"><thead><tr><th>vendor</th><th>device type</th><th>hosts</th>'
           '<th>devices</th><th>healthy</th><th>health unknown</th><th>soft-share capacity</th>'
           '</tr></thead><tbody>']
    for i, t in enumerate(report["device_types"]):
        base = "/device_types/%d/" % i
        out.append("<tr><td>%s</td><td>%s</td>%s%s%s%s%s</tr>" % (
            _e(t["vendor"]), _e(device_label(t["device_type"])), _Ptr.td(t["hosts"], base + "hosts"),
            _Ptr.td(t["devices"], base + "devices"), _Ptr.td(t["healthy"], base + "healthy"),
            _Ptr.td(t.get("health_unknown", 0), base + "health_unknown"),
            _Ptr.td(t["capacity"], base + "capacity")))
    out.append("</tbody></table>")
    return "\n".join(out)


def _irqbalance_cell(host, base):
    """(class, HTML) of the hosts table's irqbalance cell: running and every IRQ the strict
    plan pins banned is ok; running with IRQs it can move is bad."""
    bans = host.get("irqbalance_bans") or {}
    state = bans.get("state")
    if host["irqbalance"] != "running" or state in (None, "n/a"):
        return "", _e(host["irqbalance"])
    if state == "none":
        return "muted", "running (no IRQs pinned)"
    if state == "unknown":
        return "bad", "running (no strict plan)"
    ptr = base + "irqbalance_bans/"
    text = "running, %s/%s IRQs banned" % (_Ptr.num(bans["banned_count"], ptr + "banned_count"),
                                           _Ptr.num(bans["pinned_count"], ptr + "pinned_count"))
    return ("ok" if state == "banned" else "bad"), text


def _shape_hosts_cell(shape, k):
    """The hosts of a shape in a table cell: its one host, or the count and compact names."""
    if shape["host_count"] == 1:
        return _e(shape["hosts"][0])
    return "%s hosts: %s" % (_Ptr.num(shape["host_count"], "/shapes/%d/host_count" % k),
                             _hosts_inline(shape["hosts"]))


def _hosts_html(report):
    """One row per host shape (its first host's values; every host of a shape has them)."""
    out = ['<table id="hosts-table"><thead><tr><th>shape</th><th>hosts</th><th>arch</th>'
           '<th>vendor</th>'
           '<th>type</th><th>CPUs allowed</th><th>CPUs online</th><th>NPUs</th><th>GPUs</th>'
           '<th>healthy chips</th><th>soft-share capacity</th><th>irqbalance</th>'
           '<th>migratepages</th><th>GPU rails</th><th>facts errors</th><th>problems per host</th>'
           '<th>binding</th></tr></thead><tbody>']
    for k, shape in enumerate(shapes_of(report)):
        i = shape["host"]
        h = report["hosts"][i]
        base = "/hosts/%d/" % i
        irq_cls, irq_text = _irqbalance_cell(h, base)
        mig = {True: ("yes", "ok"), False: ("missing", "bad")}.get(h["migratepages"],
                                                                   ("unknown", "muted"))
        rail_cls = "bad" if h["rails"]["status"] == "inconsistent" else ""
        bind_cls, bind_text = binding_cell(h)
        out.append('<tr id="shape-row-%s" data-shape="%s"><td><a href="#shape-%s">%s</a></td>'
                   '<td>%s</td><td>%s</td><td>%s</td>'
                   '<td>%s</td>%s%s%s%s%s%s<td class="%s">%s</td><td class="%s">%s</td>'
                   '<td class="%s">%s</td>%s%s<td class="%s">%s</td></tr>' % (
                       _e(shape["id"]), _e(shape["id"]), _e(shape["id"]), _e(shape["id"]),
                       _shape_hosts_cell(shape, k), _e(h["arch"]), _e(h["vendor"]),
                       _e(device_label(h["device_type"])),
                       _Ptr.td(h["cpus_allowed"], base + "cpus_allowed"),
                       _Ptr.td(h["cpus_online"], base + "cpus_online"),
                       _Ptr.td(h["npus"], base + "npus"), _Ptr.td(h["gpus"], base + "gpus"),
                       _Ptr.td(h["health"]["healthy"], base + "health/healthy"),
                       _Ptr.td(h["softshare"]["capacity"], base + "softshare/capacity"),
                       irq_cls, irq_text, mig[1], mig[0], rail_cls,
                       _e(h["rails"]["status"]),
                       _Ptr.td(h["facts_error_count"], base + "facts_error_count"),
                       _Ptr.td(h["problems"], base + "problems"), bind_cls, bind_text))
    out.append("</tbody></table>")
    return "\n".join(out)


def _binding_html(report):
    """Every policy's columns side by side, a note after each policy compared with ours."""
    columns = "<th>mode</th><th>CPUs used</th><th>overlap CPUs</th><th>cross-NUMA pools</th>"
    out = ['<table id="binding-table"><thead><tr><th rowspan="2">shape: hosts</th>%s</tr>'
           '<tr>%s</tr></thead><tbody>' % (
               "".join('<th colspan="%d">%s</th>' % (4 + (p in COMPARED), _e(policy_heading(p)))
                       for p in POLICIES),
               "".join(columns + ("<th>note</th>" if p in COMPARED else "") for p in POLICIES))]
    for k, shape in enumerate(shapes_of(report)):
        i = shape["host"]
        h = report["hosts"][i]
        cells = ['<td><a href="#shape-%s">%s</a> %s</td>' % (
            _e(shape["id"]), _e(shape["id"]), _shape_hosts_cell(shape, k))]
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
            if policy in COMPARED:
                cells.append("<td>%s</td>" % _e(plan["reason"] or plan["error"] or ""))
        out.append('<tr id="binding-row-%s" data-shape="%s">%s</tr>' % (
            _e(shape["id"]), _e(shape["id"]), "".join(cells)))
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
    for name, colour in BUDGET_COLOURS.items():
        items.append('<span><span class="sw" style="background:%s"></span>%s</span>'
                     % (colour, _e(name)))
    return '<div class="legend">%s</div>' % "".join(items)


# strict / GPU plans: the API server, EngineCore and tokenizers; CPUs nobody got (cpu_budget)
BUDGET_COLOURS = OrderedDict([("frontend", "#b07aa1"), ("spare", "#c9c9c9")])


def _svg_map(host, plan, index, policy):
    """One CPU map: NUMA nodes as bands, one row per device with its role runs."""
    numa = dict((int(n), cpu_ids(c)) for n, c in host["numa_nodes"].items())
    online = cpu_ids(host["online"])
    allowed = set(cpu_ids(host["allowed"]))
    top = max([c for cs in numa.values() for c in cs] + online + [0]) + 1
    width, left, right = 660.0, 92.0, 8.0
    scale = (width - left - right) / top
    row_h, gap = 15, 4
    devices = plan["devices"]
    overlap = set(cpu_ids(plan["overlap"]))
    budget_rows = [(name, cpu_ids(plan.get(name))) for name in BUDGET_COLOURS
                   if cpu_ids(plan.get(name))]
    height = 24 + 14 + (row_h + gap) * (max(len(devices), 1) + len(budget_rows)) + \
        (row_h + 8 if overlap else 0) + 16

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
                                            _e("NUMA node %d: %s"
                                               % (node, cpulist.format(cpus)))))
    labels, unlabelled = node_labels(numa, scale)
    for centre, node in labels:
        out.append('<text x="%.2f" y="14" font-size="10" text-anchor="middle" '
                   'fill="#33475b">N%d</text>' % (left + centre, node))
    if unlabelled:  # interleaved numbering: no run wide enough to hold its label
        out.append('<text x="4" y="14" font-size="9" fill="#33475b">%s</text>' % _e(
            "N%s interleaved" % ",".join(str(n) for n in unlabelled[:6])
            + ("…" if len(unlabelled) > 6 else "")))
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
        parts = [(r, cpu_ids(dev["roles"][r])) for r in ROLES]
        pool = cpu_ids(dev["pool"])
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
                               _e("%s %s: %s" % (dev["label"], role,
                                                 cpulist.format(range(first, last + 1))))))
        for first, last in _runs(overlap.intersection(pool)):
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="none" stroke="%s" '
                       'stroke-width="1.6"/>' % (x(first), y, max((last - first + 1) * scale, 1),
                                                 row_h, OVERLAP_COLOUR))
        y += row_h + gap
    for name, cpus in budget_rows:
        out.append('<text x="4" y="%d" font-size="10.5" fill="#1d232a">%s</text>'
                   % (y + 11, _e(name)))
        for first, last in _runs(cpus):
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s'
                       '</title></rect>' % (x(first), y, max((last - first + 1) * scale, 0.8),
                                            row_h, BUDGET_COLOURS[name],
                                            _e("%s: %s" % (name, cpulist.format(
                                                range(first, last + 1))))))
        y += row_h + gap
    if overlap:
        out.append('<text x="4" y="%d" font-size="10.5" fill="%s" font-weight="bold">overlap'
                   '</text>' % (y + 11, OVERLAP_COLOUR))
        for first, last in _runs(overlap):
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s'
                       '</title></rect>' % (x(first), y, max((last - first + 1) * scale, 1),
                                            row_h, OVERLAP_COLOUR,
                                            _e("shared: %s"
                                               % cpulist.format(range(first, last + 1)))))
        y += row_h + 8
    # CPU axis ticks at NUMA boundaries
    ticks = sorted(set([0, top] + [cs[0] for cs in numa.values() if cs]))
    for tick in ticks:
        out.append('<text x="%.2f" y="%d" font-size="9" fill="#7b8794" text-anchor="middle">%d'
                   '</text>' % (min(max(x(tick), left), width - 10), y + 10, tick))
    out.append("</svg>")
    return "\n".join(out)


def _shape_problem_links(report, shape):
    """Links to the problem rows of the shape's problems (one host's worth)."""
    links = []
    for index, g in enumerate(_groups(report)):
        members = g["problems"]
        shapes = g.get("shapes")
        if shapes is not None and shape["id"] not in shapes:
            continue
        if shapes is None and not any(report["problems"][m]["host"] in shape["hosts"]
                                      for m in members):
            continue
        if len(members) == 1:
            target = "problem-" + report["problems"][members[0]]["id"]
            g = report["problems"][members[0]]
        else:
            target = "problem-group-%d" % index
        links.append('<a href="#%s"><span class="sev sev-%s">%s</span> %s</a>' % (
            _e(target), _e(g["severity"]), _e(g["severity"]), _e(g["title"])))
    if not links:
        return '<div class="shape-problems ok">no problems</div>'
    return '<div class="shape-problems">%s</div>' % "".join(links)


def _shape_hosts_list(shape):
    """Every host of the shape, each a ``data-host`` item the filter finds; collapsed when
    there are several."""
    spans = ", ".join('<span data-host="%s">%s</span>' % (_e(n), _e(n)) for n in shape["hosts"])
    if shape["host_count"] == 1:
        return '<p class="hostlist">%s</p>' % spans
    return ('<details class="hostlist"><summary>all %d hosts</summary><p>%s</p></details>'
            % (shape["host_count"], spans))


def _host_article(host, index, shape=None, report=None):
    """A shape's article: its hosts (compact title, the full list collapsed), its problems
    and the CPU maps of its first host (``index``)."""
    base = "/hosts/%d/" % index
    if shape is None:
        shape = {"id": "S%d" % (index + 1), "host_count": 1, "hosts": [host["name"]]}
    meta = "%s \u00b7 %s \u00b7 %s \u00b7 %s CPUs allowed of %s online \u00b7 %s NUMA nodes" % (
        _e(host["arch"]), _e(host["vendor"]), _e(device_label(host["device_type"])),
        _Ptr.num(host["cpus_allowed"], base + "cpus_allowed"),
        _Ptr.num(host["cpus_online"], base + "cpus_online"), _e(len(host["numa_nodes"])))
    title = (_e(shape["hosts"][0]) if shape["host_count"] == 1 else "%d hosts: %s" % (
        shape["host_count"], ", ".join(_e(p) for p in compact_host_parts(shape["hosts"]))))
    out = ['<article class="shape" id="shape-%s" data-shape="%s">' % (
        _e(shape["id"]), _e(shape["id"])),
        '<h3><span class="muted">%s</span> %s</h3>' % (_e(shape["id"]), title),
        '<div class="meta">%s</div>' % meta, _shape_hosts_list(shape)]
    if report is not None:
        out.append(_shape_problem_links(report, shape))
    out.append('<div class="maps">')
    for policy in POLICIES:
        plan = host["plans"][policy]
        pbase = base + "plans/%s/" % policy
        out.append('<figure id="fig-%d-%s"><figcaption>%s' % (
            index, policy, _e(policy_caption(policy))))
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


def _titled_shapes(report):
    return [(sh["id"], sh["hosts"][0] if sh["host_count"] == 1 else sh["hosts_text"],
             report["hosts"][sh["host"]]) for sh in shapes_of(report)]


def _basis_html(report, section):
    """The section's basis (``report["sources"]``: installed plan or what-if), one line."""
    source = (report.get("sources") or {}).get(section) or {}
    if not source:
        return ""
    text = source["text"]
    return '<p class="meta" data-basis="%s">%s.</p>' % (_e(source["basis"]),
                                                        _e(text[0].upper() + text[1:]))


def render_html(report):
    """One self-contained page: inline CSS and SVG, one inline script (the host filter, the
    only script the page's Content-Security-Policy allows), no external assets."""
    s = report["summary"]
    shape_of = _shape_of(report)
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<meta http-equiv="Content-Security-Policy" content="%s">' % _e(CSP),
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>npuops.fleet fleet report</title>", "<style>%s</style></head><body>" % _CSS,
             '<header><h1>Fleet report</h1>%s%s</header><main>' % (_summary_cards(report),
                                                                   _filter_html()),
             '<section id="problems"><h2>Problems and fixes</h2>%s</section>'
             % _problems_html(report, shape_of),
             '<section id="drift"><h2>Binding drift (read back vs plan)</h2>%s%s</section>'
             % (_basis_html(report, "drift"), drift_html(report, shape_of)),
             '<section id="fleet"><h2>Device types</h2>%s<h2>Hosts by shape</h2>%s'
             "<h2>%s</h2>%s%s</section>" % (
                 _types_html(report), _hosts_html(report), _e(comparison_title()),
                 _basis_html(report, "plans"), _binding_html(report)),
             whatif_html(_titled_shapes(report), _e),
             inventory.html(_titled_shapes(report), _e),
             '<section id="maps"><h2>CPU maps, one per host shape</h2>%s%s' % (
                 _basis_html(report, "plans"), _legend_html())]
    for shape in shapes_of(report):
        parts.append(_host_article(report["hosts"][shape["host"]], shape["host"], shape, report))
    parts.append('</section></main><footer class="meta" style="padding:0 28px 20px">'
                 "npuops.fleet fleet report schema %s \u00b7 %s</footer>" % (
                     _e(report.get("schema")), plural(s["hosts"], "host")))
    parts.append("<script>%s</script></body></html>" % _SCRIPT)
    return "\n".join(parts) + "\n"
