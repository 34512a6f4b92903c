# -*- coding: utf-8 -*-
"""Filters npuops.fleet.fleet_report / _markdown / _json / _html (plugins/filter/report.py)."""

import json
from collections import OrderedDict

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.fleet.plugins.filter import report as flt
from npuops_testing.report_fleet import sample_fleet


class _TaggedStr(str):
    """Stands in for Ansible's tagged strings."""


def test_filters_are_registered():
    assert set(flt.FilterModule().filters()) == {
        "fleet_report",
        "fleet_report_markdown",
        "fleet_report_json",
        "fleet_report_html",
    }


def test_fleet_report_returns_plain_json_serialisable_dict():
    fleet = sample_fleet()
    fleet["a2-bad"]["facts"]["hostname"] = _TaggedStr("a2-bad")
    report = flt.fleet_report(fleet)
    assert report["summary"]["hosts"] == 6
    text = json.dumps(report)
    assert type(report["hosts"][0]["hostname"]) is str  # pylint: disable=unidiomatic-typecheck
    assert json.loads(text)["problems"][0]["severity"] == "error"


def test_renderers_accept_the_report_or_the_hosts_mapping():
    fleet = sample_fleet()
    report = flt.fleet_report(fleet)
    assert flt.fleet_report_markdown(report) == flt.fleet_report_markdown(fleet)
    assert flt.fleet_report_html(report) == flt.fleet_report_html(fleet)
    parsed = json.loads(flt.fleet_report_json(OrderedDict(report)))
    assert parsed == json.loads(json.dumps(report))
    assert flt.fleet_report_html(report).startswith("<!DOCTYPE html>")
    assert "| P1 | error |" in flt.fleet_report_markdown(report)


@pytest.mark.parametrize("name", ["fleet_report", "fleet_report_markdown", "fleet_report_json", "fleet_report_html"])
def test_wrong_input_is_a_filter_error(name):
    with pytest.raises(AnsibleFilterError, match="expects"):
        flt.FilterModule().filters()[name](["not", "a", "mapping"])


def test_fleet_report_passes_the_rail_check_result():
    fleet = sample_fleet()
    assert [p["host"] for p in flt.fleet_report(fleet)["problems"] if p["kind"] == "rail_inconsistent"] == ["gpu-c"]
    quiet = flt.fleet_report(fleet, rails={})
    assert not [p for p in quiet["problems"] if p["kind"] == "rail_inconsistent"]
    with pytest.raises(AnsibleFilterError, match="rails"):
        flt.fleet_report(fleet, rails=["x"])
