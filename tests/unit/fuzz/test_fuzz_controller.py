# -*- coding: utf-8 -*-
"""Fuzz: every controller-side filter on hostile facts. A compromised host controls
its own facts, plans and binding read-back: the fleet report gives a host whose entry is
malformed its own "facts unusable" row and every other host as before, and each filter
answers or raises a clear AnsibleFilterError, never another exception."""

import copy

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.filter import rails as rails_filter
from ansible_collections.npuops.fleet.plugins.filter import report as report_filter
from ansible_collections.npuops.fleet.plugins.filter import softshare as softshare_filter
from npuops_testing.hostile import HOSTILE_VALUES, fuzz_examples, mutated_value
from npuops_testing.report_fleet import sample_fleet
from npuops_testing.softshare_hosts import JOB, facts

SETTINGS = settings(max_examples=fuzz_examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLEET = sample_fleet()
HOSTS = sorted(FLEET)
CLEAN = report_filter.fleet_report(FLEET)
FILTERS = dict(report_filter.FilterModule().filters(), **softshare_filter.FilterModule().filters())
FILTERS.update(rails_filter.FilterModule().filters())
HOSTILE = st.sampled_from(HOSTILE_VALUES)


def _context_free(host):
    return dict((k, v) for k, v in host.items() if k not in ("rails", "shape", "problems"))


@settings(SETTINGS, max_examples=fuzz_examples(30))
@given(st.sampled_from(HOSTS), st.data())
def test_report_on_a_hostile_host(host, data):
    fleet = copy.deepcopy(FLEET)
    fleet[host] = data.draw(mutated_value(FLEET[host]))
    report = report_filter.fleet_report(fleet)
    by_name = dict((h["name"], h) for h in report["hosts"])
    gpu_rails = FLEET[host].get("plan_strict", {}).get("gpus") is not None
    for other in CLEAN["hosts"]:
        if other["name"] != host and not (gpu_rails and other["gpus"]):
            assert _context_free(by_name[other["name"]]) == _context_free(other)
    if by_name[host].get("facts_unusable"):
        assert [p["kind"] for p in report["problems"] if p["host"] == host] == ["facts_unusable"]
    report_filter.fleet_report_markdown(report)
    report_filter.fleet_report_html(report)
    report_filter.fleet_report_json(report)


def _filter_call(name, *args, **kwargs):
    try:
        return FILTERS[name](*args, **kwargs)
    except AnsibleFilterError as err:
        assert str(err) and "Traceback" not in str(err)
        return None


SOFT_FLEET = {"n1": {"npu_topology": facts()}, "n2": {"ansible_facts": {"npu_topology": facts(4)}}}
ALLOCATIONS = [
    {"host": "n1", "chip": 0, "aicore_quota": 50, "hbm_quota": 1024, "policy": "fixed-share", "job": "other"}
]


@SETTINGS
@given(
    mutated_value({"fleet": SOFT_FLEET, "allocations": ALLOCATIONS, "job": JOB}),
    st.sampled_from(["shipped", "rfc", "x", None]),
)
def test_softshare_place_on_hostile_facts(inputs, rules):
    _filter_call("softshare_place", inputs["fleet"], inputs["allocations"], inputs["job"], rules)


@SETTINGS
@given(
    st.one_of(
        mutated_value({"npu_topology": facts()}),
        mutated_value(facts()["npus"]),
        mutated_value({"a": {"npu_topology": facts()}, "b": {"npus": facts()["npus"]}}),
        HOSTILE,
    ),
    st.one_of(st.none(), HOSTILE),
    HOSTILE,
)
def test_softshare_capacity_on_hostile_facts(value, device_type, single):
    _filter_call("softshare_capacity", value, device_type, single)


@SETTINGS
@given(HOSTILE, HOSTILE, st.one_of(HOSTILE, st.dictionaries(st.text(max_size=8), HOSTILE)))
def test_softshare_node_labels_on_hostile_input(node, enable, extra):
    _filter_call("softshare_node_labels", node, enable, extra)


@SETTINGS
@given(HOSTILE, st.one_of(HOSTILE, st.sampled_from(["A2", "A3"])), HOSTILE, HOSTILE, HOSTILE, HOSTILE, HOSTILE)
def test_softshare_daemonset_on_hostile_input(root, device_type, version, image, extra, level, namespace):
    _filter_call(
        "softshare_daemonset",
        root,
        device_type,
        version,
        image=image,
        extra_args=extra,
        log_level=level,
        namespace=namespace,
    )


@SETTINGS
@given(
    mutated_value(dict((h, FLEET[h].get("plan_strict")) for h in HOSTS)),
    st.one_of(st.none(), HOSTILE),
    st.sampled_from(["nic", "nic_bus_id", "x"]),
)
def test_rail_check_on_hostile_plans(plans, shapes, key):
    _filter_call("rail_check", plans, shapes=shapes, key=key)


@settings(SETTINGS, max_examples=fuzz_examples(30))
@given(st.sampled_from(["fleet_report_markdown", "fleet_report_json", "fleet_report_html"]), mutated_value(CLEAN))
def test_renderers_on_a_forged_report(name, report):
    _filter_call(name, report)


@pytest.mark.parametrize("replicas", [10**7, 10**30, "9" * 5000, 4097])
def test_huge_replicas_are_refused_at_once(replicas):
    with pytest.raises(AnsibleFilterError, match="replicas must be"):
        softshare_filter.softshare_place(SOFT_FLEET, [], dict(JOB, replicas=replicas))


def test_a_gang_that_cannot_fit_stops_placing():
    """4,096 replicas on 12 chips: the rest of the gang after the first that finds no host
    is answered without placing (each would fail the same way)."""
    got = softshare_filter.softshare_place(SOFT_FLEET, [], dict(JOB, replicas=4096))
    assert got["placed"] is False and len(got["replicas"]) == 4096
    assert [r["replica"] for r in got["replicas"]] == list(range(4096))
    assert not [r for r in got["replicas"] if r["host"]]
    assert "all 4096 replicas" in got["replicas"][0]["reasons"]["n1"]
    assert all(r["reasons"] == got["replicas"][0]["reasons"] for r in got["replicas"])


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: softshare_filter.softshare_capacity([1]), "npus[0] must be a mapping"),
        (lambda: softshare_filter.softshare_capacity([{"health": ["OK"]}]), "npus[0].health"),
        (
            lambda: softshare_filter.softshare_place({"n1": {"npus": True}}, [], JOB),
            "fleet['n1']: npus: expected a list",
        ),
        (lambda: softshare_filter.softshare_place({"n1": 1}, [], JOB), "fleet['n1']"),
        (lambda: softshare_filter.softshare_place({"n1": dict(facts(), node_labels=[1])}, [], JOB), "node_labels"),
        (lambda: softshare_filter.softshare_node_labels("n1", extra=True), "extra must be a mapping"),
        (lambda: softshare_filter.softshare_node_labels("n1", extra={"a": [1]}), "extra[a]"),
        (lambda: rails_filter.rail_check({"h": {"gpus": {"0": {"nic": [1]}}}}), "must be a NIC name"),
    ],
)
def test_filter_refusals_are_messages(call, words):
    with pytest.raises(AnsibleFilterError) as err:
        call()
    assert words in str(err.value)
