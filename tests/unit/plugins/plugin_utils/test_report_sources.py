# -*- coding: utf-8 -*-
"""The report says which numbers are the installed plan and which a what-if: ``sources`` (per
section its basis), ``basis`` in each host's plan summaries (the audit's own plans, recomputed)
and in its binding summary (the installed plan JSON read back), and a line under the headings
of the Markdown and HTML pages. No existing key is renamed."""

import json

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis, schema
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as report_markdown
from npuops_testing.report_fleet import a2_facts, a2_strict, a2_vllm

BINDING = {
    "schema_version": 1,
    "instances": {"svc": {"checked": True}},
    "errors": [],
    "drift": [
        {"instance": "svc", "device": "NPU0", "kind": "irq_moved", "evidence": "IRQ 1 on 1, planned 0", "fix": "re-run"}
    ],
}


def _report():
    return analysis.build_report(
        {"a2-001": {"facts": a2_facts(), "plan_strict": a2_strict(), "plan_vllm_ascend": a2_vllm(), "binding": BINDING}}
    )


def test_the_json_labels_each_section_installed_or_what_if():
    report = _report()
    sources = report["sources"]
    assert sources["plans"]["basis"] == "what_if" and sources["binding"]["basis"] == "installed"
    assert sources["drift"]["basis"] == "installed"
    assert sources["irqbalance_bans"]["basis"] == "what_if"
    assert "recomputed by the audit" in sources["plans"]["text"]
    assert "plan JSON" in sources["binding"]["text"]
    host = report["hosts"][0]
    assert [host["plans"][p]["basis"] for p in schema.POLICIES] == ["what_if"] * len(schema.POLICIES)
    assert host["binding"]["basis"] == "installed"
    assert sources["config"]["basis"] == "configured" and host["config"]["basis"] == "configured"
    # the keys that were there are still there
    assert list(report)[:3] == ["schema", "sources", "summary"]
    assert host["binding"]["state"] == "drifted" and host["plans"]["strict"]["status"] == "ok"
    assert json.loads(analysis.render_json(report))["sources"] == json.loads(json.dumps(sources))


def test_the_pages_say_which_is_which_under_the_headings():
    report = _report()
    text = report_markdown.render_markdown(report)
    drift = text.index("## Binding drift (read back vs plan)\n\nInstalled plan: each instance's plan JSON")
    assert drift > 0
    comparison = text.index("## %s\n\nWhat-if: recomputed by the audit" % schema.comparison_title())
    pools = text.index("## Pools per shape\n\nWhat-if: recomputed by the audit")
    assert drift < comparison < pools
    page = report_html.render_html(report)
    # the drift section; the comparison table and the CPU maps
    assert page.count('data-basis="installed"') == 1 and page.count('data-basis="what_if"') == 2
    assert '<h2>Binding drift (read back vs plan)</h2><p class="meta" data-basis="installed">' in page
