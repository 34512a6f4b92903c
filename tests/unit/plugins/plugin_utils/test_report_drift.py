# -*- coding: utf-8 -*-
"""The report's drift section (plugins/plugin_utils/report/drift.py): each host's binding
summary from vllm_binding_facts, the rows grouped by kind and fix across hosts, the summary
counts, and the Markdown and HTML that show them."""

import copy

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.model import binding as model_binding
from ansible_collections.npuops.fleet.plugins.module_utils.model import instance_files
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis, drift
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as report_markdown
from npuops_testing.report_fleet import a2_facts, a2_strict, a2_vllm


def row(kind, evidence, device="NPU0", instance="svc", fix=None):
    return {"instance": instance, "device": device, "kind": kind, "evidence": evidence, "fix": fix or "fix %s" % kind}


def facts(rows, instances=("svc",), checked=True):
    return {
        "schema_version": 1,
        "instances": dict((name, {"checked": checked}) for name in instances),
        "drift": rows,
        "errors": [],
    }


def entry(binding=None, binding_error=""):
    out = {"facts": a2_facts(), "plan_strict": a2_strict(), "plan_vllm_ascend": a2_vllm()}
    if binding is not None:
        out["binding"] = binding
    if binding_error:
        out["binding_error"] = binding_error
    return out


@pytest.mark.parametrize(
    "given, state",
    [
        (entry(), "not_read"),
        (entry(binding_error="vllm_binding_facts failed: boom"), "failed"),
        (entry(facts([], instances=())), "none"),
        (entry(facts([], checked=False)), "not_checked"),
        (entry(facts([])), "ok"),
        (entry(facts([row("irq_moved", "IRQ 1 on 1, planned 0")])), "drifted"),
    ],
)
def test_binding_state_of_a_host(given, state):
    assert drift.summarize_binding(given)["state"] == state


def test_rows_group_by_kind_and_fix_across_hosts_in_kind_order():
    hosts = {
        "a2-001": entry(
            facts(
                [
                    row("threads_off_plan", "pid 1: tid 2 on 1, planned 0"),
                    row("irq_moved", "IRQ 1024 (sq) on CPUs 1, planned 0"),
                ]
            )
        ),
        "a2-002": entry(
            facts(
                [
                    row("threads_off_plan", "pid 7: tid 9 on 3, planned 0"),
                    row("unit_down", "vllm-svc.service is failed", device=None),
                ]
            )
        ),
        "a2-003": entry(facts([row("irq_moved", "IRQ 1024 (sq) on CPUs 1, planned 0")])),
        "a2-004": entry(facts([])),
        "a2-005": entry(facts([], checked=False)),
    }
    report = analysis.build_report(hosts)
    groups = report["drift"]
    assert [g["kind"] for g in groups] == ["unit_down", "threads_off_plan", "irq_moved"]
    threads = groups[1]
    assert threads["hosts"] == ["a2-001", "a2-002"] and threads["hosts_text"] == "a2-[001-002]"
    assert threads["evidence"] is None  # different pids: examples, one per row
    assert threads["examples"] == [
        "a2-001: svc NPU0: pid 1: tid 2 on 1, planned 0",
        "a2-002: svc NPU0: pid 7: tid 9 on 3, planned 0",
    ]
    irq = groups[2]
    assert irq["evidence"] == "IRQ 1024 (sq) on CPUs 1, planned 0" and irq["examples"] == []
    assert irq["host_count"] == 2 and irq["count"] == 2 and irq["fix"] == "fix irq_moved"
    summary = report["summary"]
    assert (summary["binding_checked_hosts"], summary["drift_hosts"], summary["drift_rows"]) == (4, 3, 5)
    # a drifted host is not the same shape as a clean one
    shapes = dict((h["name"], h["shape"]) for h in report["hosts"])
    assert shapes["a2-004"] != shapes["a2-003"]


def test_an_instance_named_fix_keeps_its_own_row():
    fix_a = model_binding.FIX_THREADS % instance_files.unit_names("a")
    fix_b = model_binding.FIX_THREADS % instance_files.unit_names("b")
    hosts = {
        "h1": entry(facts([row("threads_off_plan", "x", instance="a", fix=fix_a)], ("a",))),
        "h2": entry(facts([row("threads_off_plan", "x", instance="b", fix=fix_b)], ("b",))),
    }
    groups = analysis.build_report(hosts)["drift"]
    assert [(g["instances"], g["fix"]) for g in groups] == [(["a"], fix_a), (["b"], fix_b)]


def test_examples_are_capped_and_the_rest_counted():
    rows = [row("threads_off_plan", "pid %d" % i) for i in range(7)]
    report = analysis.build_report({"h": entry(facts(rows))})
    group = report["drift"][0]
    assert group["count"] == 7 and len(group["examples"]) == drift.EVIDENCE_SHOWN
    md = report_markdown.render_markdown(report)
    assert "(and 4 more)" in md
    page = report_html.render_html(report)
    assert "and 4 more in the JSON report" in page


def test_markdown_and_html_show_the_section_tiles_and_escape_host_text():
    hostile = "<script>alert(1)</script> | `rm -rf` [x](y)"
    report = analysis.build_report(
        {
            "h1": entry(facts([row("irq_moved", hostile)])),
            "h2": entry(facts([])),
        }
    )
    md = report_markdown.render_markdown(report)
    section = md[md.index("## Binding drift") : md.index("## Device types")]
    assert "Binding read back on 2 hosts; drift on 1 host." in section
    assert "<script>" not in section and "&lt;script&gt;" in section and "\\|" in section
    assert "| DRIFTED (1) |" in md and "| as planned |" not in md
    page = report_html.render_html(report)
    assert '<section id="drift">' in page and 'id="drift-table"' in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'id="sum-drift-hosts"' in page and 'class="card c-bad" id="sum-drift-hosts"' in page
    assert 'data-ptr="/summary/drift_hosts">1<' in page
    assert 'data-ptr="/drift/0/count">1<' in page


def test_no_binding_read_says_so_and_a_clean_fleet_says_no_drift():
    unread = analysis.build_report({"h": entry()})
    assert unread["drift"] == [] and unread["summary"]["drift_hosts"] == 0
    assert "No running instance was checked" in report_markdown.render_markdown(unread)
    assert 'class="card " id="sum-drift-hosts"' in report_html.render_html(unread)
    clean = analysis.build_report({"h": entry(facts([]))})
    assert "No drift found." in report_markdown.render_markdown(clean)
    assert 'id="no-drift"' in report_html.render_html(clean)


def test_a_report_from_before_the_drift_section_still_renders():
    report = analysis.build_report({"h": entry(facts([row("irq_moved", "x")]))})
    old = copy.deepcopy(report)
    del old["drift"]
    for key in ("binding_checked_hosts", "drift_hosts", "drift_rows"):
        del old["summary"][key]
    for host in old["hosts"]:
        del host["binding"]
    assert "Binding read back on 0 hosts" in report_markdown.render_markdown(old)
    assert '<section id="drift">' in report_html.render_html(old)


def test_malformed_binding_facts_are_read_as_far_as_they_go():
    weird = {
        "instances": ["not", "a", "dict"],
        "drift": [None, "x", row("memory_remote", 5)],
        "errors": [{"source": 1, "msg": None}, "x"],
    }
    summary = drift.summarize_binding(entry(weird))
    assert summary["state"] == "drifted" and summary["instances"] == 0
    assert summary["drift"][0]["evidence"] == "5"
    assert summary["errors"] == [{"source": "1", "msg": "None"}]
