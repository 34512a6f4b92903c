# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's drift section: what ``vllm_binding_facts`` read back on each host (is the
binding still what the plan says?) and the same kind of drift grouped across hosts.

``summarize_binding(entry)`` is one host's ``binding`` summary; ``drift_groups(hosts)`` the
section's rows: one per kind of drift and fix, with the hosts that show it (compact), how many
instances and devices, the evidence (once when every row has the same) and the fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.module_utils.model import drift_kinds
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import INSTALLED, as_dict, as_list
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.shapes import compact_hosts

# the drift kinds vllm_binding_facts reports, in the order the section lists them, with the
# title each row gets (model/drift_kinds); a kind not listed keeps its own name as its title
KINDS = drift_kinds.KINDS
EVIDENCE_SHOWN = 3  # evidence lines per row when the rows' evidence differs


def _text(value):
    return None if value is None else str(value)


def summarize_binding(entry):
    """One host's binding summary from its audit entry (``binding``: the ``npu_binding`` facts,
    ``binding_error``: why they could not be read): ``{state, instances, checked, drift,
    errors, error}``. ``state``: ``not_read`` (no binding facts), ``failed`` (the module
    failed), ``none`` (no instance installed), ``not_checked`` (installed, but nothing running
    could be asked: a sandbox), ``ok`` or ``drifted``."""
    entry = as_dict(entry)
    facts = entry.get("binding")
    summary = OrderedDict(
        [
            ("state", "not_read"),
            ("instances", 0),
            ("checked", 0),
            ("drift", []),
            ("errors", []),
            ("error", None),
            ("basis", INSTALLED),
        ]
    )  # the installed plan JSON, read back
    if entry.get("binding_error"):
        summary["state"] = "failed"
        summary["error"] = str(entry["binding_error"])
        return summary
    if not isinstance(facts, dict):
        return summary
    instances = as_dict(facts.get("instances"))
    summary["instances"] = len(instances)
    summary["checked"] = sum(
        1 for i in instances.values() if isinstance(i, dict) and i.get("checked", True) is not False
    )
    for row in as_list(facts.get("drift")):
        if isinstance(row, dict):
            summary["drift"].append(
                OrderedDict((key, _text(row.get(key))) for key in ("instance", "device", "kind", "evidence", "fix"))
            )
    summary["errors"] = [
        OrderedDict([("source", str(e.get("source"))), ("msg", str(e.get("msg")))])
        for e in as_list(facts.get("errors"))
        if isinstance(e, dict)
    ]
    if summary["drift"]:
        summary["state"] = "drifted"
    elif not instances:
        summary["state"] = "none"
    elif not summary["checked"]:
        summary["state"] = "not_checked"
    else:
        summary["state"] = "ok"
    return summary


def drift_groups(hosts):
    """The drift rows of every host, grouped by kind and fix: ``[{kind, title, fix, count,
    host_count, hosts, hosts_text, instances, devices, evidence, examples}]`` in the order of
    ``KINDS``. ``evidence`` is the rows' evidence when all have the same, else None, and then
    ``examples`` holds the first ``EVIDENCE_SHOWN`` as ``host: instance device: evidence``."""
    groups = OrderedDict()
    for host in hosts:
        for row in as_dict(host.get("binding")).get("drift") or []:
            key = (row["kind"], row["fix"])
            group = groups.get(key)
            if group is None:
                group = groups[key] = OrderedDict(
                    [
                        ("kind", row["kind"]),
                        ("title", KINDS.get(row["kind"], row["kind"])),
                        ("fix", row["fix"]),
                        ("count", 0),
                        ("host_count", 0),
                        ("hosts", []),
                        ("hosts_text", ""),
                        ("instances", []),
                        ("devices", 0),
                        ("evidence", row["evidence"]),
                        ("examples", []),
                    ]
                )
            group["count"] += 1
            if not group["hosts"] or group["hosts"][-1] != host["name"]:
                group["hosts"].append(host["name"])
            if row["instance"] not in group["instances"]:
                group["instances"].append(row["instance"])
            if row["device"]:
                group["devices"] += 1
            if group["evidence"] != row["evidence"]:
                group["evidence"] = None
            if len(group["examples"]) < EVIDENCE_SHOWN:
                group["examples"].append(
                    "%s: %s %s: %s" % (host["name"], row["instance"], row["device"] or "", row["evidence"])
                )
    order = dict((kind, i) for i, kind in enumerate(KINDS))
    out = sorted(groups.values(), key=lambda g: order.get(g["kind"], len(order)))
    for group in out:
        group["host_count"] = len(group["hosts"])
        group["hosts_text"] = compact_hosts(group["hosts"])
        if group["evidence"] is not None:
            group["examples"] = []
    return out


def drift_summary(hosts):
    """The summary tiles' counts: hosts whose binding was checked, hosts with drift, rows."""
    states = [as_dict(h.get("binding")).get("state") for h in hosts]
    return OrderedDict(
        [
            ("binding_checked_hosts", sum(1 for s in states if s in ("ok", "drifted"))),
            ("drift_hosts", sum(1 for s in states if s == "drifted")),
            ("drift_rows", sum(len(as_dict(h.get("binding")).get("drift") or []) for h in hosts)),
        ]
    )
