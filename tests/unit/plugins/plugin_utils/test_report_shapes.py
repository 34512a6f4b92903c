# -*- coding: utf-8 -*-
"""The fleet report by host shape (plugins/plugin_utils/report/shapes.py and what
analysis.build_report, the HTML and the Markdown renderers make of it): identical hosts are one
shape, the JSON keeps every host, problem lists name hosts compactly, and the pages grow with
the number of shapes, not of hosts."""

import copy
import json

import pytest

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis as fr
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as report_markdown
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import shapes
from npuops_testing.report_fleet import sample_fleet
from npuops_testing.synthetic_fleet import demo_entries, synthetic_fleet


@pytest.fixture(scope="module")
def demo():
    return demo_entries()


def copies(fleet, times):
    """Every host of ``fleet`` ``times`` times (``<host>-<nn>``), hostnames set."""
    out = {}
    for name, entry in fleet.items():
        for n in range(times):
            host = "%s-%02d" % (name, n + 1)
            facts = dict(entry["facts"], hostname=host) if entry.get("facts") else entry["facts"]
            out[host] = dict(copy.deepcopy(entry), facts=facts)
    return out


@pytest.mark.parametrize(
    "names, text",
    [
        ([], ""),
        (["a2-0001"], "a2-0001"),
        (["a2-0001", "a2-0002", "a2-0003", "a2-0007", "gpu-x"], "a2-[0001-0003,0007], gpu-x"),
        (["n9", "n10", "n11"], "n9, n[10-11]"),
        (["x-01", "y-01", "x-02"], "x-[01-02], y-01"),
        (["a", "a", "b-1"], "a, b-1"),
        (["h<1>", "h<2>"], "h<1>, h<2>"),
    ],
)
def test_compact_hosts(names, text):
    assert shapes.compact_hosts(names) == text


def test_compact_ids():
    assert shapes.compact_ids(["P3", "P4", "P5"]) == "P3\u2013P5"
    assert shapes.compact_ids(["P1", "P3", "P5"]) == "P1, P3, P5"
    assert shapes.compact_ids(["P1", "P2", "P3", "P5"]) == "P1\u2013P3, P5"
    many = ["P%d" % n for n in range(1, 200, 2)]
    assert shapes.compact_ids(many) == "P1, P3, P5, P7, P9, P11, P13, \u2026 P199 (100 problems)"


def test_identical_hosts_are_one_shape_and_the_json_keeps_every_host():
    fleet = copies(sample_fleet(), 3)
    report = fr.build_report(fleet)
    assert report["summary"]["hosts"] == len(fleet) == 18
    assert [h["name"] for h in report["hosts"]] == sorted(fleet)
    for host in report["hosts"]:
        assert (
            host["hostname"] == fleet[host["name"]]["facts"]["hostname"]
            or fleet[host["name"]]["facts"].get("hostname") is None
        )
    # sample_fleet has 5 shapes (gpu-a and gpu-b are alike); copies add none
    assert report["summary"]["shapes"] == len(report["shapes"]) == 5
    by_shape = dict((s["id"], s) for s in report["shapes"])
    for index, host in enumerate(report["hosts"]):
        shape = by_shape[host["shape"]]
        assert host["name"] in shape["hosts"] and index in shape["host_indexes"]
    assert sum(s["host_count"] for s in report["shapes"]) == 18
    bad = next(s for s in report["shapes"] if "a2-bad-01" in s["hosts"])
    assert bad["hosts"] == ["a2-bad-01", "a2-bad-02", "a2-bad-03"]
    assert bad["hosts_text"] == "a2-bad-[01-03]" and bad["host"] == 0
    assert bad["kinds"][:2] == ["unhealthy_chip", "vllm_overlap"]
    assert bad["severities"] == {"error": 2, "warning": 3, "info": 0}
    assert bad["problems"] == 5 == report["hosts"][0]["problems"]
    json.loads(fr.render_json(report))


def test_the_per_input_cache_changes_nothing(monkeypatch, demo):
    """Hosts with equal inputs are analysed once; the report is the same as analysing each."""
    fleet, dummy = synthetic_fleet(130, seed=3, rate=0.1, base=demo)
    cached = fr.render_json(fr.build_report(fleet))
    monkeypatch.setattr(fr, "_input_key", lambda entry: None)
    assert fr.render_json(fr.build_report(copy.deepcopy(fleet))) == cached


def test_variations_are_shapes_of_their_own(demo):
    fleet, counts = synthetic_fleet(260, seed=5, rate=0.05, base=demo)
    assert all(counts.values())
    report = fr.build_report(fleet)
    kinds = dict((h["name"], h["shape"]) for h in report["hosts"])
    sick = [p["host"] for p in report["problems"] if p["kind"] == "unhealthy_chip"]
    assert sick
    for host in sick:
        shape = next(s for s in report["shapes"] if s["id"] == kinds[host])
        assert "unhealthy_chip" in shape["kinds"]
        assert shape["host_count"] < 20  # not the shape of the healthy hosts of its kind
    # every shape is alike inside: the same summary apart from the names, the same problems
    for shape in report["shapes"]:
        first = report["hosts"][shape["host"]]
        for index in shape["host_indexes"]:
            host = report["hosts"][index]
            assert shapes.summary_signature(host) == shapes.summary_signature(first)
            mine = [shapes.problem_signature(p) for p in report["problems"] if p["host"] == host["name"]]
            theirs = [shapes.problem_signature(p) for p in report["problems"] if p["host"] == first["name"]]
            assert sorted(mine) == sorted(theirs)


def test_problem_groups_by_evidence_and_shape(demo):
    fleet, dummy = synthetic_fleet(130, seed=7, rate=0.05, base=demo)
    report = fr.build_report(fleet)
    shape_of = dict((h["name"], h["shape"]) for h in report["hosts"])
    for group in report["problem_groups"]:
        members = [i for item in group["evidence_groups"] for i in item["problems"]]
        assert sorted(members) == sorted(group["problems"])
        assert group["hosts_text"] == shapes.compact_hosts(group["hosts"])
        assert set(group["shapes"]) == set(shape_of[h] for h in group["hosts"])
        for item in group["evidence_groups"]:
            assert all(report["problems"][i]["evidence"] == item["evidence"] for i in item["problems"])
            assert item["ids"] == [report["problems"][i]["id"] for i in item["problems"]]
        if group["evidence"] is not None:
            assert len(group["evidence_groups"]) == 1


def test_pages_grow_with_shapes_not_hosts(demo):
    small = fr.build_report(dict((k, dict(v, facts=dict(v["facts"], hostname=k + "-001"))) for k, v in demo.items()))
    big_fleet, dummy = synthetic_fleet(len(demo) * 40, rate=0.0, base=demo)
    big = fr.build_report(big_fleet)
    assert len(big["shapes"]) == len(small["shapes"])
    extra = len(big_fleet) - len(demo)
    small_html, big_html = report_html.render_html(small), report_html.render_html(big)
    # every extra host costs its name in its shape's list and a few bytes, not a CPU map
    assert len(big_html) < len(small_html) + 250 * extra
    assert big_html.count("<svg") == small_html.count("<svg")
    small_md, big_md = report_markdown.render_markdown(small), report_markdown.render_markdown(big)
    assert len(big_md) < len(small_md) + 40 * extra
    assert "40 hosts: a2-designdoc-\\[0001-0040\\]" in big_md  # Markdown-escaped brackets
    # the JSON keeps every host: one line each
    text = fr.render_json(big)
    assert len([line for line in text.splitlines() if line.startswith('    {"name": ')]) == len(big_fleet)


def test_html_lists_every_host_and_anchors_every_problem(demo):
    fleet, dummy = synthetic_fleet(130, seed=7, rate=0.05, base=demo)
    report = fr.build_report(fleet)
    page = report_html.render_html(report)
    for host in report["hosts"]:
        assert page.count('data-host="%s"' % host["name"]) == 1
    for problem in report["problems"]:
        assert page.count('id="problem-%s"' % problem["id"]) == 1
    for shape in report["shapes"]:
        assert page.count('<article class="shape" id="shape-%s" data-shape="%s">' % (shape["id"], shape["id"])) == 1


def test_a_report_from_before_shapes_still_renders():
    report = fr.build_report(sample_fleet())
    old = json.loads(json.dumps(report))
    del old["shapes"]
    for group in old["problem_groups"]:
        del group["evidence_groups"], group["shapes"], group["hosts_text"]
    page = report_html.render_html(old)
    assert page.count("<article") == len(old["hosts"])
    for problem in old["problems"]:
        assert 'id="problem-%s"' % problem["id"] in page
    md = report_markdown.render_markdown(old)
    assert "### a2-bad" in md
