# -*- coding: utf-8 -*-
"""model/drift_kinds: every kind model/binding.drift can emit is one of KINDS (so the report
titles and orders it), and the report reads the same table and the same irqbalance fix."""

import ast
import inspect

from ansible_collections.npuops.fleet.plugins.module_utils.model import binding, drift_kinds, instance_files
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import drift as report_drift
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import schema as report_schema


def _emitted_kinds():
    """The third argument of every ``_row(...)`` call in model/binding.py."""
    tree = ast.parse(inspect.getsource(binding))
    kinds = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_row" and len(node.args) >= 3:
            arg = node.args[2]
            if isinstance(arg, ast.Constant):
                kinds.add(arg.value)
            elif isinstance(arg, ast.Name):
                kinds.add(getattr(drift_kinds, arg.id))
            elif isinstance(arg, ast.Attribute):
                kinds.add(getattr(drift_kinds, arg.attr))
    return kinds


def test_every_emitted_kind_is_listed():
    emitted = _emitted_kinds()
    assert emitted and emitted <= set(drift_kinds.KINDS)


def test_every_listed_kind_is_emitted():
    assert set(drift_kinds.KINDS) == _emitted_kinds()


def test_one_table_one_irqbalance_fix():
    assert report_drift.KINDS is drift_kinds.KINDS
    assert report_schema.FIX_IRQBALANCE == binding.FIX_IRQBALANCE == drift_kinds.FIX_IRQBALANCE


def test_drift_rows_use_the_fix_texts():
    state = {
        "instances": {
            "svc": {
                "unit": "vllm-svc.service",
                "unit_state": "failed",
                "report": {"irqs": [{"irq": 7, "role": "sq", "device": 0, "drift": True, "before": "0", "after": "3"}]},
            }
        }
    }
    rows = binding.drift(state, {"active": True, "banned_irqs": []})
    by_kind = dict((r["kind"], r["fix"]) for r in rows)
    assert by_kind[drift_kinds.UNIT_DOWN] == drift_kinds.FIX_UNIT % instance_files.unit_names("svc")
    assert by_kind[drift_kinds.IRQ_MOVED] == drift_kinds.FIX_IRQ
    assert by_kind[drift_kinds.IRQBALANCE_UNDOING] == drift_kinds.FIX_IRQBALANCE
