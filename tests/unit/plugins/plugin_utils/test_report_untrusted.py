# -*- coding: utf-8 -*-
"""The fleet report treats each host's facts as untrusted: a compromised host's
malformed facts, plan or binding read-back give that host its own "facts unusable: <why>" row
and every other host is reported as before; host text cannot make structure in the Markdown
or the HTML (line separators of every kind)."""

import copy
import json

import pytest

from ansible_collections.npuops.fleet.plugins.filter import report as flt
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import untrusted
from npuops_testing.report_fleet import sample_fleet

SEPARATORS = ["\r", "\n", "\r\n", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85"]


def _set_first_npu(field, value):
    def edit(entry):
        entry["facts"]["npus"][0][field] = value

    return edit


def _set(path, value):
    def edit(entry):
        node = entry
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
        node[path[-1]] = value

    return edit


ATTACKS = [
    ("a2-bad", "vendor: 1", _set(("facts", "vendor"), 1), "facts: vendor: expected a string"),
    ("a2-bad", "vendor: [1]", _set(("facts", "vendor"), [1]), "facts: vendor: expected a string"),
    ("a2-bad", "numa_node: Infinity", _set_first_npu("numa_node", float("inf")), "numa_node"),
    ("a2-bad", "numa_node: NaN", _set_first_npu("numa_node", float("nan")), "numa_node"),
    (
        "a2-bad",
        "tools.migratepages: []",
        _set(("facts", "tools", "migratepages"), []),
        "facts: tools['migratepages']: expected true or false",
    ),
    (
        "a2-bad",
        "binding.drift: [{}]",
        _set(("binding",), {"instances": {"a": {}}, "drift": [{}]}),
        "binding: drift[0].instance: missing",
    ),
    (
        "gpu-a",
        "plan gpus['0'].nic: [1]",
        _set(("plan_strict", "gpus", "0", "nic"), [1]),
        "plan_strict: gpus['0'].nic: expected a string",
    ),
    ("a2-bad", "entry: a list", None, "the host's entry must be a mapping"),
    ("a2-bad", "facts nested 200,000 deep", None, "nested too deep"),
]


def _deep(levels):
    value = {}
    for dummy in range(levels):
        value = {"x": value}
    return value


def _attacked(host, label, edit):
    fleet = sample_fleet()
    if label == "entry: a list":
        fleet[host] = [1]
    elif label.startswith("facts nested"):
        fleet[host]["facts"]["extra"] = _deep(200000)
    else:
        edit(fleet[host])
    return fleet


def _without_fleet_context(host):
    """A host summary less what depends on the other hosts (rails, shapes, problem counts)."""
    return dict((k, v) for k, v in host.items() if k not in ("rails", "shape", "problems"))


@pytest.mark.parametrize("host, label, edit, why", ATTACKS, ids=[a[1] for a in ATTACKS])
def test_a_malformed_host_gets_its_own_row(host, label, edit, why):
    clean = flt.fleet_report(sample_fleet())
    report = flt.fleet_report(_attacked(host, label, edit))
    by_name = dict((h["name"], h) for h in report["hosts"])
    bad = by_name[host]
    assert why in bad["facts_unusable"]
    rows = [p for p in report["problems"] if p["host"] == host]
    assert [p["kind"] for p in rows] == ["facts_unusable"]
    assert rows[0]["evidence"].startswith("facts unusable: ") and why in rows[0]["evidence"]
    for other in clean["hosts"]:
        if other["name"] != host:
            assert _without_fleet_context(by_name[other["name"]]) == _without_fleet_context(other)
    markdown = flt.fleet_report_markdown(report)
    assert "facts unusable: " in markdown and "| %s |" % host.replace("-", "-") in markdown
    assert flt.fleet_report_html(report).startswith("<!DOCTYPE html>")
    json.loads(flt.fleet_report_json(report))


def test_the_renderers_screen_a_hosts_mapping_too():
    fleet = _attacked("a2-bad", "vendor: [1]", _set(("facts", "vendor"), [1]))
    assert "facts unusable: facts: vendor" in flt.fleet_report_markdown(fleet)
    assert "facts unusable: facts: vendor" in flt.fleet_report_html(fleet)


def test_the_screen_passes_every_real_and_sample_host():
    from npuops_testing.report_fleet import real_fleet

    for fleet in (sample_fleet(), real_fleet()):
        for name, entry in fleet.items():
            assert untrusted.entry_problem(entry) is None, name


def test_an_analysis_error_the_screen_missed_is_that_hosts_row():
    def analyse(name, entry):
        if name == "bad" and "facts_error" not in entry:
            raise TypeError("unhashable type: 'list'")
        return {"name": name}

    run = untrusted.guarded(analyse, lambda host: [])
    assert run("good", {}) == {"name": "good"}
    assert run("bad", {})[untrusted.UNUSABLE] == "TypeError: unhashable type: 'list'"


def test_a_forged_report_dict_is_a_filter_error():
    from ansible.errors import AnsibleFilterError

    report = flt.fleet_report(sample_fleet())
    report["hosts"][0]["numa_nodes"] = [1]
    with pytest.raises(AnsibleFilterError, match="not the fleet_report dict"):
        flt.fleet_report_markdown(report)


def _string_paths(value, prefix=()):
    if isinstance(value, str):
        yield prefix
    elif isinstance(value, dict):
        for key in value:
            yield from _string_paths(value[key], prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _string_paths(item, prefix + (index,))


def _injected(text):
    """Lines of the report that the payload started: one beginning ``# ALL OK``."""
    return [line for line in text.splitlines() if line.lstrip().startswith("# ALL OK")]


def _binding_with_evidence(comm):
    return {
        "instances": {"svc": {"checked": True}},
        "drift": [
            {
                "instance": "svc",
                "device": "NPU0",
                "kind": "threads_off_plan",
                "evidence": "pid 4242 (%s): 1 of 40 threads off their planned CPUs" % comm,
                "fix": "run the reconciler",
            }
        ],
    }


@pytest.mark.parametrize("separator", SEPARATORS, ids=[repr(s) for s in SEPARATORS])
def test_a_process_comm_cannot_make_a_heading(separator):
    comm = "x%s# ALL OK%s" % (separator, separator)
    fleet = sample_fleet()
    fleet["a2-clean"]["binding"] = _binding_with_evidence(comm)
    report = flt.fleet_report(fleet)
    assert report["summary"]["drift_rows"] == 1
    markdown, page = flt.fleet_report_markdown(report), flt.fleet_report_html(report)
    assert "x # ALL OK" in markdown.replace("  ", " ") and not _injected(markdown)
    assert "x # ALL OK" in page.replace("  ", " ") and not _injected(page)
    for char in set(SEPARATORS) - {"\n", "\r\n"}:
        assert char not in page and char not in markdown


def test_no_host_field_can_make_report_structure():
    """The payload in every text field of every sample host (round k: each host's k-th text
    field, so one report tries one field per host), and in the inventory names: no line of
    the Markdown or the HTML starts with it."""
    base = sample_fleet()
    paths = dict((host, list(_string_paths(base[host]))) for host in base)
    tried = 0
    for number in range(max(len(p) for p in paths.values())):
        separator = SEPARATORS[number % len(SEPARATORS)]
        fleet = copy.deepcopy(base)
        for host in sorted(fleet):
            if number >= len(paths[host]):
                continue
            path = paths[host][number]
            node = fleet[host]
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = "x%s# ALL OK%s" % (separator, separator)
            tried += 1
        report = flt.fleet_report(fleet)
        assert not _injected(flt.fleet_report_markdown(report)), number
        assert not _injected(flt.fleet_report_html(report)), number
    fleet = dict(
        ("x%s# ALL OK%s%s" % (s, s, host), entry) for s, (host, entry) in zip(SEPARATORS, sorted(base.items()))
    )
    report = flt.fleet_report(fleet)
    assert not _injected(flt.fleet_report_markdown(report))
    assert not _injected(flt.fleet_report_html(report))
    assert tried > 300
