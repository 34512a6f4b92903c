# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report by host shape: hosts whose analysed summary (topology, plans, health,
irqbalance, rails) and problems are the same are one shape, so a fleet of a thousand identical
servers is drawn once. Also the compact host lists (``a2-[0001-0950]``) and problem id lists
the renderers show.

Controller side, pure: ``group_shapes`` and ``evidence_groups`` are called by
``analysis.build_report``; the renderers only format what they return.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from collections import OrderedDict

# Fields of a host summary that name the host rather than describe it: left out of its shape.
IDENTITY_FIELDS = ("name", "hostname", "problems", "shape", "rails")

_TAIL = re.compile(r"^(.*?)(\d+)$", re.S)


def _runs(numbers):
    runs = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return runs


def compact_hosts(names):
    """Host names as a compact list: names that differ only in a trailing number of the same
    width collapse into ranges, in the order of their first name.

    ``['a2-0001', 'a2-0002', 'a2-0003', 'a2-0007', 'gpu-x']`` -> ``'a2-[0001-0003,0007], gpu-x'``.
    A name alone in its pattern stays as it is. Display text only: the report's ``hosts``
    lists keep every name.
    """
    return ", ".join(compact_host_parts(names))


def compact_host_parts(names):
    """The items of ``compact_hosts`` as a list (``['a2-[0001-0003,0007]', 'gpu-x']``)."""
    buckets = OrderedDict()
    for name in names:
        name = str(name)
        match = _TAIL.match(name)
        if match is None:
            buckets.setdefault((name, None), set())
            continue
        prefix, digits = match.groups()
        buckets.setdefault((prefix, len(digits)), set()).add(int(digits))
    parts = []
    for (prefix, width), numbers in buckets.items():
        if width is None:
            parts.append(prefix)
            continue
        ordered = sorted(numbers)
        if len(ordered) == 1:
            parts.append("%s%0*d" % (prefix, width, ordered[0]))
            continue
        ranges = ["%0*d" % (width, a) if a == b else "%0*d-%0*d" % (width, a, width, b) for a, b in _runs(ordered)]
        parts.append("%s[%s]" % (prefix, ",".join(ranges)))
    return parts


def compact_ids(ids, limit=8):
    """Problem ids as text: runs of three or more consecutive ids as ``P3\u2013P5``, the rest
    listed (``P1, P3, P5``); past ``limit`` items, the first ones, an ellipsis, the last one and
    the count (``P1, P3, P5, \u2026 P9999 (5000 problems)``)."""
    numbers = []
    for text in ids:
        try:
            numbers.append(int(str(text)[1:]))
        except ValueError:
            return ", ".join(str(i) for i in ids)
    items = []
    for first, last in _runs(numbers):
        if last - first >= 2:
            items.append("P%d\u2013P%d" % (first, last))
        else:
            items.extend("P%d" % n for n in range(first, last + 1))
    if len(items) <= limit:
        return ", ".join(items)
    return "%s, \u2026 %s (%d problems)" % (", ".join(items[: limit - 1]), items[-1], len(ids))


def summary_signature(host):
    """What makes two analysed hosts the same, apart from rails and problems (added later):
    their summary without the fields that name them, as canonical JSON text."""
    rest = dict((k, v) for k, v in host.items() if k not in IDENTITY_FIELDS)
    return json.dumps(rest, sort_keys=True, separators=(",", ":"), default=str)


def analyse_once(hosts, names, analyse, input_key, rebind):
    """``analyse(name, entry)`` of every host in ``names``, run once per distinct input: a host
    whose ``input_key(entry)`` was seen gets ``rebind(summary, name, entry)`` of the first
    one's summary (None keys are never shared). Returns the summaries and their
    ``summary_signature`` texts, which decide the hosts' shapes."""
    memo = {}
    summaries, signatures = [], []
    for name in names:
        entry = hosts[name]
        key = input_key(entry)
        cached = memo.get(key) if key is not None else None
        if cached is None:
            host = analyse(name, entry)
            cached = (host, summary_signature(host))
            if key is not None:
                memo[key] = cached
        else:
            host = rebind(cached[0], name, entry)
        summaries.append(host)
        signatures.append(cached[1])
    return summaries, signatures


def problem_signature(problem):
    return (problem["severity"], problem["kind"], problem["title"], problem["evidence"], problem["fix"])


def group_shapes(hosts, signatures, problems_of):
    """Hosts with the same shape, in the order of their first host: ``[{id, host_count, hosts,
    host_indexes, hosts_text, host, vendor, device_type, problems, severities, kinds}]`` and
    each host's ``shape`` set (in place).

    ``signatures[i]``: ``summary_signature`` of ``hosts[i]``; ``problems_of[i]``: its problems.
    ``host`` is the index of the shape's first host (the one the pages draw); ``problems`` and
    ``severities`` count one host's problems; ``kinds`` are their kinds in order.
    """
    shapes = OrderedDict()
    for index, host in enumerate(hosts):
        key = (
            signatures[index],
            json.dumps(host["rails"], sort_keys=True, separators=(",", ":"), default=str),
            tuple(problem_signature(p) for p in problems_of[index]),
        )
        shape = shapes.get(key)
        if shape is None:
            found = problems_of[index]
            severities = OrderedDict((s, 0) for s in ("error", "warning", "info"))
            for problem in found:
                severities[problem["severity"]] = severities.get(problem["severity"], 0) + 1
            kinds = []
            for problem in found:
                if problem["kind"] not in kinds:
                    kinds.append(problem["kind"])
            shape = shapes[key] = OrderedDict(
                [
                    ("id", "S%d" % (len(shapes) + 1)),
                    ("host_count", 0),
                    ("hosts", []),
                    ("host_indexes", []),
                    ("hosts_text", ""),
                    ("host", index),
                    ("vendor", host["vendor"]),
                    ("device_type", host["device_type"]),
                    ("problems", len(found)),
                    ("severities", severities),
                    ("kinds", kinds),
                ]
            )
        shape["host_count"] += 1
        shape["hosts"].append(host["name"])
        shape["host_indexes"].append(index)
        host["shape"] = shape["id"]
    out = list(shapes.values())
    for shape in out:
        shape["hosts_text"] = compact_hosts(shape["hosts"])
    return out


def evidence_groups(group, problems, hosts_by_name):
    """A problem group's members by evidence: ``[{evidence, host_count, hosts_text, shapes,
    ids, id_text, problems}]`` in the order of their first problem (``problems``: indexes into
    the report's problems)."""
    by_text = OrderedDict()
    for index in group["problems"]:
        problem = problems[index]
        item = by_text.get(problem["evidence"])
        if item is None:
            item = by_text[problem["evidence"]] = OrderedDict(
                [
                    ("evidence", problem["evidence"]),
                    ("host_count", 0),
                    ("hosts_text", ""),
                    ("shapes", []),
                    ("ids", []),
                    ("id_text", ""),
                    ("problems", []),
                    ("_hosts", []),
                ]
            )
        item["ids"].append(problem["id"])
        item["problems"].append(index)
        if not item["_hosts"] or item["_hosts"][-1] != problem["host"]:
            item["_hosts"].append(problem["host"])
        shape = hosts_by_name.get(problem["host"], {}).get("shape")
        if shape is not None and shape not in item["shapes"]:
            item["shapes"].append(shape)
    out = list(by_text.values())
    for item in out:
        names = item.pop("_hosts")
        item["host_count"] = len(names)
        item["hosts_text"] = compact_hosts(names)
        item["id_text"] = compact_ids(item["ids"])
    return out


def shapes_of(report):
    """The report's ``shapes``, or one shape per host for a report dict from before shapes."""
    shapes = report.get("shapes")
    if shapes is not None:
        return shapes
    return [
        OrderedDict(
            [
                ("id", "S%d" % (i + 1)),
                ("host_count", 1),
                ("hosts", [h["name"]]),
                ("host_indexes", [i]),
                ("hosts_text", h["name"]),
                ("host", i),
                ("vendor", h.get("vendor")),
                ("device_type", h.get("device_type")),
                ("problems", h.get("problems", 0)),
                ("severities", {}),
                ("kinds", []),
            ]
        )
        for i, h in enumerate(report["hosts"])
    ]
