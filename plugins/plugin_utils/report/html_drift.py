# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift section of the fleet report page (``report["drift"]``, report/drift.py): one row
per kind of drift and fix, its hosts as a compact list, the evidence (or examples of it) and
the fix; rows carry the shapes of their hosts (``data-shapes``) for the host filter."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html_base import Ptr as _Ptr, escape as _e
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.html_problems import hosts_inline
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import plural


def _hosts_word(count):
    return "host" if count == 1 else "hosts"


def binding_cell(host):
    """(class, HTML) of the hosts table's binding cell."""
    binding = host.get("binding") or {}
    state = binding.get("state", "not_read")
    if state == "drifted":
        return "bad", "drifted (%s)" % plural(len(binding.get("drift") or []), "row")
    if state == "ok":
        return "ok", "as planned"
    if state == "failed":
        return "bad", "not read: %s" % _e(binding.get("error"))
    return "muted", {"not_read": "-", "none": "no instance",
                     "not_checked": "not checked"}.get(state, _e(state))


def drift_html(report, shape_of):
    s = report["summary"]
    groups = report.get("drift") or []
    checked, drifted = s.get("binding_checked_hosts", 0), s.get("drift_hosts", 0)
    head = "<p>Binding read back on %s %s; drift on %s %s.</p>" % (
        _Ptr.num(checked, "/summary/binding_checked_hosts", cls="n"), _hosts_word(checked),
        _Ptr.num(drifted, "/summary/drift_hosts", cls="n"), _hosts_word(drifted))
    if not groups:
        return head + '<p class="%s" id="no-drift">%s</p>' % (
            ("ok", "No drift found.") if s.get("binding_checked_hosts") else
            ("muted", "No running instance was checked (npuops.fleet.vllm_binding_facts)."))
    out = [head, '<table id="drift-table"><thead><tr><th>kind</th><th>drift</th><th>hosts</th>'
           '<th>instances</th><th>rows</th><th>evidence</th><th>fix</th></tr></thead><tbody>']
    for index, g in enumerate(groups):
        shapes = []
        for name in g["hosts"]:
            if shape_of.get(name) and shape_of[name] not in shapes:
                shapes.append(shape_of[name])
        if g["evidence"] is not None:
            evidence = "<code>%s</code>" % _e(g["evidence"])
        else:
            more = g["count"] - len(g["examples"])
            evidence = "<ul class=\"per-host\">%s</ul>%s" % (
                "".join("<li><code>%s</code></li>" % _e(x) for x in g["examples"]),
                '<span class="muted">and %d more in the JSON report</span>' % more if more > 0 else "")
        out.append('<tr id="drift-%d" data-kind="%s" data-shapes="%s"><td><code>%s</code></td>'
                   '<td class="bad">%s</td><td class="hosts">%s %s: %s</td><td>%s</td>%s'
                   '<td>%s</td><td class="fix">%s</td></tr>' % (
                       index + 1, _e(g["kind"]), _e(" ".join(shapes)), _e(g["kind"]), _e(g["title"]),
                       _Ptr.num(g["host_count"], "/drift/%d/host_count" % index),
                       _hosts_word(g["host_count"]), hosts_inline(g["hosts"]),
                       _e(", ".join(g["instances"])), _Ptr.td(g["count"], "/drift/%d/count" % index),
                       evidence, _e(g["fix"])))
    out.append("</tbody></table>")
    return "\n".join(out)
