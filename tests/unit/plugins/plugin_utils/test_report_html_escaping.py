# -*- coding: utf-8 -*-
"""The report page is Jinja2 templates with autoescape on (plugins/plugin_utils/report/html.py):
text a host provides - its name, its devices' model, a facts error, the processes, units and
instances of its binding drift, a drift's fix, the binding module's error - lands on the page
as text wherever it is printed (element text and attributes), never as markup. The check is
run once against the same templates with autoescape off, where it must find the markup."""

import re
from html.parser import HTMLParser

import pytest

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from npuops_testing.report_fleet import a2_facts, a2_strict, a2_vllm, sample_fleet


def hostile(tag):
    """Text that is markup if printed raw - an element ``<i-TAG>``, both quotes, an ``&`` - and
    a Jinja2 expression, which stays text (a value is printed, never templated)."""
    return "<i-%s>\"'&{{ 7 * 7 }}" % tag


FIELDS = ("host", "model", "src", "errmsg", "inst", "proc", "unit", "fix", "binderr")


def _drift(instance, evidence, kind, device="NPU0"):
    return {
        "instance": instance,
        "device": device,
        "kind": kind,
        "evidence": evidence,
        "fix": "restart %s" % hostile("fix"),
    }


def _binding(rows):
    return {"schema_version": 1, "instances": {hostile("inst"): {"checked": True}}, "drift": rows, "errors": []}


def hostile_fleet():
    fleet = sample_fleet()
    evil = fleet.pop("a2-bad")
    evil["facts"]["hostname"] = hostile("host")
    for npu in evil["facts"]["npus"]:
        npu["name"] = hostile("model")
    evil["facts"]["errors"] = [{"source": hostile("src"), "msg": hostile("errmsg")}]
    evil["binding"] = _binding(
        [
            _drift(hostile("inst"), "pid 7 (%s): tid 9 on 3, planned 0" % hostile("proc"), "threads_off_plan"),
            _drift(hostile("inst"), "%s.service is failed" % hostile("unit"), "unit_down", None),
        ]
    )
    fleet[hostile("host")] = evil
    # a second host with other threads off plan: that drift row lists examples, not one evidence
    other = {
        "facts": a2_facts("a2-other"),
        "plan_strict": a2_strict(),
        "plan_vllm_ascend": a2_vllm(),
        "binding": _binding(
            [_drift(hostile("inst"), "pid 8 (%s): tid 1 on 5, planned 0" % hostile("proc"), "threads_off_plan")]
        ),
    }
    fleet["a2-other"] = other
    fleet["a2-clean"]["binding_error"] = "vllm_binding_facts failed: %s" % hostile("binderr")
    return fleet


class _Page(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.tags, self.text, self.attrs = set(), [], []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.extend(v for _k, v in attrs if v)

    def handle_data(self, data):
        self.text.append(data)


def markup_from_hosts(page):
    """What is wrong with the page: host text that became markup, or that is not on it."""
    wrong = []
    parsed = _Page()
    parsed.feed(page)
    made = sorted(t for t in parsed.tags if t.startswith("i-"))
    if made:
        wrong.append("host text became elements: %s" % made)
    if re.search(r"<i-[a-z]+", page):
        wrong.append("host text is raw on the page")
    text = "".join(parsed.text)
    for field in FIELDS:
        if hostile(field) not in text:
            wrong.append("%s is not on the page as text" % field)
    if not any(a == hostile("host") for a in parsed.attrs):
        wrong.append("the host name is not an attribute value (data-host) as it is")
    return wrong


@pytest.fixture(scope="module")
def report():
    return analysis.build_report(hostile_fleet())


def test_every_host_text_is_text_on_the_page(report):
    page = report_html.render_html(report)
    assert markup_from_hosts(page) == []
    # escaped the way Jinja2 escapes, in text and in attributes
    escaped = "&lt;i-host&gt;&#34;&#39;&amp;{{ 7 * 7 }}"
    assert 'data-host="%s"' % escaped in page
    assert 'aria-label="CPU map of %s, strict policy"' % escaped in page
    for field in FIELDS:
        assert "&lt;i-%s&gt;&#34;&#39;&amp;{{ 7 * 7 }}" % field in page, field


def test_the_check_finds_the_markup_without_autoescape(report, monkeypatch):
    monkeypatch.setattr(report_html, "_ENV", report_html._ENV.overlay(autoescape=False))
    wrong = markup_from_hosts(report_html.render_html(report))
    assert "host text is raw on the page" in wrong
    assert any(w.startswith("host text became elements: ") for w in wrong)
