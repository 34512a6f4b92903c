# -*- coding: utf-8 -*-
"""model/schema: the instance-name rule and the first problem named, by field, for facts and
plans."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema


@pytest.mark.parametrize("name", ["svc0", "qwen-72b.tp4", "_x", "a" * schema.MAX_NAME])
def test_good_instance_names(name):
    assert schema.instance_name_problem(name) is None


@pytest.mark.parametrize(
    "name", ["", "-x", ".x", "a@b", "a/b", "../x", "a b", "a\nb", "a" * (schema.MAX_NAME + 1), 3, None]
)
def test_bad_instance_names(name):
    assert schema.instance_name_problem(name)


def test_topology_not_a_mapping():
    with pytest.raises(InputError, match="^facts: expected the npu_topology facts"):
        schema.check_topology([], "facts")


def test_topology_wrong_type_names_the_field():
    with pytest.raises(InputError, match=r"cpu.*numa_nodes"):
        schema.check_topology({"cpu": {"numa_nodes": "0-3"}})


def test_plan_not_a_mapping_and_a_wrong_field():
    with pytest.raises(InputError, match="^plan: must be a dict"):
        schema.check_plan("strict")
    with pytest.raises(InputError, match="npus"):
        schema.check_plan({"npus": ["0"]})


def test_a_good_plan_and_facts_pass_unchanged():
    plan = {
        "policy": "strict",
        "mode": "topo_affinity",
        "skipped": False,
        "npus": {"0": {"pool": "0-3", "main": "1", "irq": "0"}},
    }
    assert schema.check_plan(plan) is plan
    facts = {"cpu": {"numa_nodes": {"0": "0-3"}, "allowed": "0-3"}, "npus": []}
    assert schema.check_planner_input(facts) is facts
