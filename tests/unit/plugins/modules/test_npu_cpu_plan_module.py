# -*- coding: utf-8 -*-
"""npu_cpu_plan in-process (npuops_testing.module_harness): the plan's numbers, its options,
check mode and its failure messages. These were ansible-playbook runs; the playbook wiring
keeps one run in tests/integration/modules/test_npu_cpu_plan.py."""

import pytest

from npuops_testing import cpu_hosts
from npuops_testing.module_harness import call_module


@pytest.mark.parametrize("check", [False, True])
def test_strict_plan_with_instances(check):
    result = call_module(
        "npu_cpu_plan",
        {"topology": cpu_hosts.a2(), "instances": [{"name": "a", "npus": [0, 2]}, {"name": "b", "npus": [1]}]},
        check=check,
    )
    assert not result.get("failed"), result
    assert result["changed"] is False
    plan = result["plan"]
    # every node of the design document's A2 is an NPU's home: each instance's frontend
    # (2 + devices cores) is carved from the ends of its workers' main CPUs
    assert plan["npus"]["0"]["pool"] == "144-163,166-167"
    assert plan["npus"]["2"]["pool"] == "168-187,190-191"
    assert plan["instances"]["a"]["main"] == "146-163,170-187"
    assert plan["instances"]["a"]["frontend"] == "164-165,188-189"
    assert set(plan["cpu_budget"]) == {"workers", "frontend", "reserved", "spare"}
    assert "NPU0     144-163,166-167  node 3   IIMMMMMMMMMMMMMMMMMMAR" in result["cpu_map"]
    assert "a        164-165,188-189  node 3   frontend (carved)" in result["cpu_map"]


def test_frontend_cpus_option():
    result = call_module(
        "npu_cpu_plan", {"topology": cpu_hosts.a2(), "frontend_cpus": 0, "instances": [{"name": "a", "npus": [0, 2]}]}
    )
    plan = result["plan"]
    assert plan["instances"]["a"]["frontend"] == "" and plan["npus"]["0"]["pool"] == "144-167"
    bad = call_module("npu_cpu_plan", {"topology": cpu_hosts.a2(), "frontend_cpus": -2})
    assert bad["failed"] is True and "frontend_cpus must be a non-negative integer" in bad["msg"]


def test_vllm_ascend_prediction_and_failure_message():
    result = call_module("npu_cpu_plan", {"topology": cpu_hosts.a2(), "policy": "vllm_ascend"})
    assert result["plan"]["npus"]["1"]["pool_order"] == "0-23,48-59"
    assert "NPU0: main=[" in "\n".join(result["plan"]["log"])
    bad = call_module("npu_cpu_plan", {"topology": cpu_hosts.a2("0-7"), "policy": "vllm_ascend", "npus": [1]})
    assert bad["failed"] is True
    # vllm-ascend's own words, then what to do: the facts' cpuset (0-7) is smaller than the host
    assert bad["msg"] == (
        "npu_cpu_plan: NPU 1: The number of CPUs is insufficient. "
        "Each NPU requires at least 5 CPUs; the facts were gathered in a cpuset "
        "of 8 CPUs (Cpus_allowed_list 0-7; the host has 192 online: 0-191): "
        "gather the facts outside the job's cgroup, or pass allowed_cpus (role "
        "variable npuops_cpu_allowed) with the CPUs the service may use"
    )
    wide = call_module(
        "npu_cpu_plan", {"topology": cpu_hosts.a2("0-7"), "policy": "vllm_ascend", "npus": [1], "allowed_cpus": "0-7"}
    )
    assert wide["msg"] == (
        "npu_cpu_plan: NPU 1: The number of CPUs is insufficient. Each NPU requires at least 5 CPUs."
    )


@pytest.mark.parametrize(
    "args, message",
    [
        ({"npus": [9]}, "npu_cpu_plan: NPU 9: unknown NPU id(s) [9]"),
        ({"policy": "greedy"}, "value of policy must be one of: strict, vllm_ascend"),
        ({"reserved_cpus": "0-zz"}, "npu_cpu_plan: reserved_cpus: invalid cpulist item"),
        ({"nics": ["mlx5_0"], "nics_regex": "mlx5_.*"}, "mutually exclusive"),
    ],
)
def test_failures(args, message):
    args = dict(args, topology=cpu_hosts.a2())
    result = call_module("npu_cpu_plan", args)
    assert result["failed"] is True and message in result["msg"]
    assert "Traceback" not in result["msg"]


def test_skipped_on_x86_under_vllm_ascend():
    result = call_module("npu_cpu_plan", {"topology": cpu_hosts.a2(arch="x86_64"), "policy": "vllm_ascend"})
    assert result["plan"]["skipped"] is True and result["changed"] is False
