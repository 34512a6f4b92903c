# -*- coding: utf-8 -*-
"""model/binding.drift on a binder report of the wrong shape: the binder runs on
the host, so its JSON is checked once before any of it is read; a report of the wrong shape is
that instance's ``binder_failed`` row naming the field, the other instances as usual."""

import json

import pytest
from hypothesis import HealthCheck, given, settings

from ansible_collections.npuops.fleet.plugins.module_utils.model import binding
from npuops_testing.hostile import fuzz_examples, mutated_value


def _report(**extra):
    base = {
        "changed": False,
        "workers": [],
        "frontend": [],
        "irqs": [],
        "missing": [],
        "failed": None,
        "unit_running": True,
    }
    base.update(extra)
    return base


GOOD = _report(
    workers=[
        {
            "role": "worker",
            "device": 0,
            "pid": 42,
            "title": "VLLM::Worker_TP0",
            "threads": 9,
            "remote_memory_ratio": 0.4,
            "changed": [{"tid": 43, "role": "acl", "before": "0-191", "after": "14"}],
        }
    ],
    irqs=[{"irq": 300, "device": 0, "role": "sq", "drift": True, "before": "5", "after": "12-13"}],
    missing=[3],
)

# every place drift() reads the report, each given a value of the wrong shape
WRONG = [
    ("report a list", [1], "expected a mapping"),
    ("workers: 1", _report(workers=1), "workers: expected a list"),
    ("workers: [1]", _report(workers=[1]), "workers[0]: expected a mapping"),
    ("workers without threads", _report(workers=[{"pid": 1}]), "threads: missing"),
    ("frontend: 'x'", _report(frontend="x"), "frontend: expected a list"),
    ("changed: 1", _report(workers=[{"changed": 1}]), "changed: expected a list"),
    ("changed: [1]", _report(workers=[{"changed": [1]}]), "changed[0]: expected a mapping"),
    ("changed tid: {}", _report(workers=[{"changed": [{"tid": {}}]}]), "tid: expected a string"),
    ("title: []", _report(workers=[{"title": [], "changed": [{}]}]), "title: expected a string"),
    (
        "remote_memory_ratio: 'x'",
        _report(workers=[{"remote_memory_ratio": "x"}]),
        "remote_memory_ratio: expected a number",
    ),
    ("missing: 1", _report(missing=1), "missing: expected a list"),
    ("missing: [[1]]", _report(missing=[[1]]), "missing[0]: expected a string"),
    ("irqs: 1", _report(irqs=1), "irqs: expected a list"),
    ("irqs: [1]", _report(irqs=[1]), "irqs[0]: expected a mapping"),
    ("irqs irq: [1]", _report(irqs=[{"irq": [1]}]), "irq: expected an integer"),
    ("irqs without irq", _report(irqs=[{"drift": True}]), "irq: missing"),
    ("failed: [1]", _report(failed=[1]), "failed: expected a string"),
    ("unit_running: 'no'", _report(unit_running="no"), "unit_running: expected true or false"),
    ("threads: None", _report(workers=[{"threads": None, "changed": [{}]}]), "threads: expected an integer"),
    ("threads: inf", _report(workers=[{"threads": float("inf"), "changed": [{}]}]), "threads: expected an integer"),
    ("nested 100 deep", _report(workers=[{"x": json.loads("[" * 100 + "]" * 100)}]), "deep"),
]


def _state(report):
    return {
        "instances": {
            "bad": {"unit": "vllm-bad.service", "unit_state": "active", "report": report},
            "good": {"unit": "vllm-good.service", "unit_state": "active", "report": GOOD},
        }
    }


@pytest.mark.parametrize("label, report, words", WRONG, ids=[w[0] for w in WRONG])
def test_a_wrong_shaped_report_is_that_instances_row(label, report, words):
    good_rows = binding.drift(
        {"instances": {"good": _state(None)["instances"]["good"]}}, {"active": True, "banned_irqs": []}
    )
    rows = binding.drift(_state(report), {"active": True, "banned_irqs": []})
    bad = [r for r in rows if r["instance"] == "bad"]
    assert [r["kind"] for r in bad] == ["binder_failed"]
    assert bad[0]["evidence"].startswith("the binder's report for bad: ")
    assert words in bad[0]["evidence"] and bad[0]["fix"] == binding.FIX_SHAPE
    assert [r for r in rows if r["instance"] == "good"] == good_rows
    assert len(good_rows) == 5


@pytest.mark.parametrize(
    "state, irqbalance, words",
    [
        ({"instances": [1]}, None, "binding state: instances: expected a mapping"),
        ({"instances": {"a": 1}}, None, "binding state: instances[a]: expected a mapping"),
        ({"instances": {"a": {"unit_state": "failed"}}}, None, "instances[a]: unit: missing"),
        ({"instances": {}}, {"banned_irqs": [[1]]}, "topology irqbalance: banned_irqs[0]"),
        ({"instances": {}}, [1], "topology irqbalance: expected a mapping"),
    ],
)
def test_a_wrong_shaped_state_is_one_row(state, irqbalance, words):
    rows = binding.drift(state, irqbalance)
    assert [r["kind"] for r in rows] == ["binder_failed"] and words in rows[0]["evidence"]


@settings(max_examples=fuzz_examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_value({"instances": {"svc": {"unit": "vllm-svc.service", "unit_state": "active", "report": GOOD}}}))
def test_fuzzed_binder_reports_give_rows(state):
    rows = binding.drift(state, {"active": True, "banned_irqs": [300]})
    for row in rows:
        assert set(row) == {"instance", "device", "kind", "evidence", "fix"}
        assert isinstance(row["kind"], str) and isinstance(row["evidence"], str)
