# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The problems section of the fleet report page: one row per problem kind and fix, the hosts
as a compact list, the evidence once per group of hosts that share it, an anchor per problem
(``problem-Pn``); rows carry the shapes they concern (``data-shapes``) for the host filter."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html_base import Ptr as _Ptr, escape as _e
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.shapes import (
    compact_host_parts, shapes_of)

HOSTS_SHOWN = 12  # compact host items shown in a table cell before "... N more"


def shapes_by_host(report):
    """``{host name: shape id}`` (a report from before shapes: one shape per host)."""
    out = {}
    for shape in shapes_of(report):
        for name in shape["hosts"]:
            out[name] = shape["id"]
    return out


def hosts_inline(names, limit=HOSTS_SHOWN):
    """Host names as compact items (``a2-[0001-0950]``), each a ``span.h``; past ``limit``
    items, how many more."""
    parts = compact_host_parts(names)
    shown = ", ".join('<span class="h">%s</span>' % _e(p) for p in parts[:limit])
    if len(parts) > limit:
        shown += ', <span class="muted">\u2026 %d more</span>' % (len(parts) - limit)
    return shown


def _problem_row(p, shape=None):
    return ('<tr id="problem-%s" data-severity="%s" data-kind="%s"%s><td>%s</td>'
            '<td><span class="sev sev-%s">%s</span></td><td>%s</td><td>%s</td>'
            '<td><code>%s</code></td><td class="fix">%s</td></tr>' % (
                _e(p["id"]), _e(p["severity"]), _e(p["kind"]),
                ' data-shapes="%s"' % _e(shape) if shape else "", _e(p["id"]),
                _e(p["severity"]), _e(p["severity"]), _e(p["host"]), _e(p["title"]),
                _e(p["evidence"]), _e(p["fix"])))


def _evidence_items(report, g, shape_of):
    """``g["evidence_groups"]``, or one item per problem for a report from before them."""
    items = g.get("evidence_groups")
    if items is not None:
        return items
    out = []
    for i in g["problems"]:
        p = report["problems"][i]
        out.append({"evidence": p["evidence"], "hosts_text": p["host"], "ids": [p["id"]],
                    "id_text": p["id"], "problems": [i],
                    "shapes": [shape_of[p["host"]]] if p["host"] in shape_of else []})
    return out


def _group_row(report, g, index, shape_of):
    """One row for a problem on several hosts: the hosts (compact), and the evidence per group
    of hosts that share it (their problem ids; every problem id is an anchor ``problem-Pn``) in
    a details element."""
    base = "/problem_groups/%d/" % index
    items = []
    for item in _evidence_items(report, g, shape_of):
        ids = item["ids"]
        anchors = "".join('<a id="problem-%s"></a>' % _e(i) for i in ids[1:])
        items.append('<li id="problem-%s" data-kind="%s" data-shapes="%s"><b>%s</b> '
                     '<span class="muted">%s</span>%s%s</li>' % (
                         _e(ids[0]), _e(g["kind"]), _e(" ".join(item["shapes"])),
                         _e(item["hosts_text"]), _e(item["id_text"]),
                         "" if g["evidence"] is not None
                         else " <code>%s</code>" % _e(item["evidence"]), anchors))
    summary = ("the same on every host" if g["evidence"] is not None
               else "evidence per host")
    evidence = "%s<details><summary>%s</summary><ul class=\"per-host\">%s</ul></details>" % (
        "<code>%s</code>" % _e(g["evidence"]) if g["evidence"] is not None else "",
        _e(summary), "".join(items))
    hosts = '%s hosts: <span class="hosts">%s</span>' % (
        _Ptr.num(g["host_count"], base + "host_count", cls="num count"), hosts_inline(g["hosts"]))
    shapes = g.get("shapes")
    if shapes is None:
        shapes = sorted(set(shape_of.get(h) for h in g["hosts"] if h in shape_of))
    return ('<tr id="problem-group-%d" class="group" data-severity="%s" data-kind="%s" '
            'data-shapes="%s"><td>%s</td><td><span class="sev sev-%s">%s</span></td><td>%s</td>'
            '<td>%s</td><td>%s</td><td class="fix">%s</td></tr>' % (
                index, _e(g["severity"]), _e(g["kind"]), _e(" ".join(shapes)), _e(g["id_text"]),
                _e(g["severity"]), _e(g["severity"]), hosts, _e(g["title"]), evidence,
                _e(g["fix"])))


def groups(report):
    groups = report.get("problem_groups")
    if groups is None:  # a report dict from before problem_groups
        groups = [{"problems": [i]} for i in range(len(report["problems"]))]
    return groups


def problems_html(report, shape_of):
    """One row per problem group: a problem of the same kind and fix on several hosts is one
    row listing the hosts compactly, with the evidence per group of hosts in a details
    element."""
    if not report["problems"]:
        return '<p class="ok" id="no-problems">No problems found.</p>'
    head = ('<thead><tr><th>id</th><th>severity</th><th>host</th><th>problem</th>'
            '<th>evidence</th><th>fix</th></tr></thead><tbody>')
    rows, notes = [], []
    for index, g in enumerate(groups(report)):
        if len(g["problems"]) == 1:
            p = report["problems"][g["problems"][0]]
            row = _problem_row(p, shape_of.get(p["host"]))
        else:
            row = _group_row(report, g, index, shape_of)
        severity = report["problems"][g["problems"][0]]["severity"]
        (notes if severity == "info" else rows).append(row)
    out = ['<table id="problems-table">' + head] + rows + ["</tbody></table>"]
    if not rows:
        out.insert(0, '<p class="ok" id="no-errors">No errors or warnings.</p>')
    if notes:  # below the fold: assumptions and optional facts, not what to fix first
        out.append('<details id="info-notes"><summary>%d info %s (assumed versions, optional '
                   'facts)</summary><table id="info-table">%s%s</tbody></table></details>' % (
                       len(notes), "note" if len(notes) == 1 else "notes", head, "\n".join(notes)))
    out.append('<p class="ok" id="no-matching-problems" hidden>No problems on the hosts found.</p>')
    return "\n".join(out)
