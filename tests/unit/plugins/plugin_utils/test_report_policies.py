# -*- coding: utf-8 -*-
"""The report's policy columns follow the planner's registry (``plan/dispatch.POLICIES``): a
policy added there gets its columns, its map and its input screening with no edit of the
report. The report package is reloaded over a registry with a third policy, then restored."""

import importlib

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis, html, markdown, schema, untrusted
from npuops_testing.report_fleet import a2_facts, a2_strict

# the modules that read the policy list, each after the ones it imports from
READERS = (schema, untrusted, analysis, markdown, html)


def _reload():
    for module in READERS:
        importlib.reload(module)


@pytest.fixture
def third_policy(monkeypatch):
    monkeypatch.setattr(dispatch, "POLICIES", ("pinned",) + dispatch.POLICIES)
    _reload()
    try:
        yield "pinned"
    finally:
        monkeypatch.undo()
        _reload()


def _entry(*policies):
    entry = {"facts": a2_facts()}
    for policy in policies:
        entry["plan_" + policy] = dict(a2_strict(), policy=policy)
    return entry


def test_a_third_policy_gets_its_columns_without_edits(third_policy):
    report = analysis.build_report({"a2": _entry("pinned", "strict", "vllm_ascend")})
    plans = report["hosts"][0]["plans"]
    assert list(plans) == ["pinned", "strict", "vllm_ascend"]
    assert plans["pinned"]["status"] == "ok" and plans["pinned"]["cpus_used"] == 192
    text = markdown.render_markdown(report)
    assert "## pinned plan, vllm-ascend in-process binding vs the strict plan" in text
    assert (
        "| hosts | pinned mode | CPUs used | overlap CPUs | cross-NUMA | note | strict mode | "
        "CPUs used | overlap CPUs | cross-NUMA | vllm_ascend mode |"
    ) in text
    assert "| device | pinned pool | pinned roles | strict pool | strict roles |" in text
    page = html.render_html(report)
    assert (
        '<th colspan="5">pinned</th><th colspan="4">strict (ours)</th><th colspan="5">vllm_ascend (in-process)</th>'
    ) in page
    assert '<figure id="fig-0-pinned"><figcaption>pinned plan' in page
    # its plan is screened as the others are: a broken one makes the host unusable
    assert untrusted.entry_problem(dict(_entry("strict"), plan_pinned={"npus": 7})) is not None


def test_two_policies_keep_the_published_columns():
    report = analysis.build_report({"a2": _entry("strict", "vllm_ascend")})
    text = markdown.render_markdown(report)
    assert (
        "| hosts | strict mode | CPUs used | overlap CPUs | cross-NUMA | vllm_ascend mode | "
        "CPUs used | overlap CPUs | cross-NUMA | note |"
    ) in text
    page = html.render_html(report)
    assert '<th colspan="4">strict (ours)</th><th colspan="5">vllm_ascend (in-process)</th>' in page
    assert "<h2>vllm-ascend in-process binding vs the strict plan</h2>" in page
