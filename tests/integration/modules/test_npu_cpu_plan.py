# -*- coding: utf-8 -*-
"""npu_cpu_plan through a real ansible-playbook: one run proves the wiring (the module found
under npuops.fleet, its options and its result through AnsiballZ). The plan's numbers, the
options, check mode and the failure messages: tests/unit/plugins/modules/
test_npu_cpu_plan_module.py, in-process."""

import pytest

from npuops_testing import cpu_hosts
from npuops_testing.runner import run_module


pytestmark = pytest.mark.slow


def test_strict_plan_with_instances_through_a_playbook():
    result = run_module(
        "npu_cpu_plan",
        {"topology": cpu_hosts.a2(), "instances": [{"name": "a", "npus": [0, 2]}, {"name": "b", "npus": [1]}]},
    )
    assert not result.get("failed"), result
    assert result["changed"] is False
    plan = result["plan"]
    assert plan["npus"]["0"]["pool"] == "144-163,166-167"
    assert plan["instances"]["a"]["frontend"] == "164-165,188-189"
    assert "a        164-165,188-189  node 3   frontend (carved)" in result["cpu_map"]
