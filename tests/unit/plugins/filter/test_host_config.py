# -*- coding: utf-8 -*-
"""filter/host_config.py: the validate role's filters, on real topology facts."""

import pytest
import yaml

from ansible_collections.npuops.fleet.plugins.filter import host_config
from npuops_testing import REPO
from npuops_testing import cpu_hosts


def test_instance_problems_uses_the_facts_device_ids():
    topo = cpu_hosts.a2()
    insts = [{"name": "a", "npus": [0, 9], "command": ["vllm"]}]
    assert host_config.instance_problems(insts) == []
    found = host_config.instance_problems(insts, topology=topo, npus=[0, 1])
    assert found == [
        "npuops_vllm_instances[0] (a): NPU 9 is not usable: this host has [0..7], npuops_npus restricts to [0, 1]"
    ]


def test_gpu_hosts_are_worded_gpu():
    topo = {"vendor": "nvidia", "gpus": [{"index": i} for i in range(8)]}
    found = host_config.instance_problems([{"name": "a", "npus": [8]}], topology=topo)
    assert found == ["npuops_vllm_instances[0] (a): GPU 8 is not usable: this host has [0..7]"]


def test_host_env_null_is_refused():
    assert host_config.instance_problems([], host_env={"X": None}) == [
        "npuops_vllm_env.X: value must be a string, a number or a boolean, got null (quote it; '' for an empty value)"
    ]


def test_unknown_variables_name_the_nearest_known_one():
    with open(REPO + "/roles/validate/vars/main.yml") as handle:
        known = yaml.safe_load(handle)["__npuops_validate_known"]
    out = host_config.unknown_variables(
        ["npuops_vllm_instance", "npuops_cpu_polcy", "npuops_host_root", "ansible_host", "npuops_zzzz_qqqq"], known
    )
    assert out == [
        "npuops_cpu_polcy is not a variable of npuops.fleet: no role reads it; did you mean npuops_cpu_policy?",
        "npuops_vllm_instance is not a variable of npuops.fleet: no role reads it; did you mean npuops_vllm_instances?",
        "npuops_zzzz_qqqq is not a variable of npuops.fleet: no role reads it",
    ]


def test_plan_instances_keeps_order_and_duplicates():
    insts = [{"name": "a", "npus": [0], "command": ["x"]}, {"name": "a", "npus": [1]}]
    # the command goes on: its --device-ids puts the devices in rank order in the plan
    assert host_config.plan_instances(insts) == [
        {"name": "a", "npus": [0], "command": ["x"]},
        {"name": "a", "npus": [1]},
    ]


def test_unknown_variables_needs_the_known_list():
    with pytest.raises(Exception, match="known variables"):
        host_config.unknown_variables(["npuops_x"])
