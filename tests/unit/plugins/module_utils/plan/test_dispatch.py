# -*- coding: utf-8 -*-
"""make_plan: option validation, instances, dispatch (vendor none, NVIDIA), plan schema."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules
from ansible_collections.npuops.fleet.plugins.module_utils.errors import GpuPlanError, NpuopsError, PlanError
from npuops_testing import SNAPSHOTS, cpu_hosts


SCHEMA_KEYS = {
    "policy",
    "mode",
    "device_type",
    "skipped",
    "reason",
    "numa_nodes",
    "npus",
    "instances",
    "gpus",
    "env",
    "log",
    "warnings",
}
ENTRY_KEYS = {"pool", "numa_nodes", "irq", "main", "acl", "release", "pool_order"}


@pytest.mark.parametrize("policy", ["strict", "vllm_ascend"])
def test_schema(policy):
    plan = plan_mod.make_plan(cpu_hosts.a2(), policy, npus=[0, 1])
    assert SCHEMA_KEYS <= set(plan)
    assert plan["policy"] == policy and plan["device_type"] == "A2"
    assert plan["numa_nodes"] == {"0": "0-47", "1": "48-95", "2": "96-143", "3": "144-191"}
    assert sorted(plan["npus"]) == ["0", "1"]
    for entry in plan["npus"].values():
        assert ENTRY_KEYS <= set(entry)
        assert all(isinstance(entry[k], str) for k in ENTRY_KEYS - {"numa_nodes"})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"policy": "greedy"}, "unknown policy 'greedy'; choose one of strict, vllm_ascend"),
        ({"device_type": "A9"}, "unknown device_type 'A9'"),
        ({"npus": [0, 9]}, "NPU 9: unknown NPU id(s) [9]; this host has logic ids [0, 1, 2, 3, 4, 5, 6, 7]"),
        ({"npus": ["x"]}, "npus must be a list of integers, got item 'x'"),
        ({"npus": [0, True]}, "npus must be a list of integers, got item True"),
        (
            {"instances": [{"name": "a", "npus": [0, False]}]},
            "instances[0] (a) npus must be a list of integers, got item False",
        ),
        ({"instances": [{"name": "a", "npus": "0,1"}]}, "instances[0] (a) npus must be a list of integers, got '0,1'"),
        (
            {"instances": [{"name": "a", "npus": [0]}, {"name": "b", "npus": [0, 1]}]},
            "NPU 0: NPU 0 is in two instances: a and b",
        ),
        ({"instances": [{"name": "a", "npus": []}]}, "instance a has no NPUs"),
        ({"instances": [{"name": "a", "npus": [12]}]}, "NPU 12: instance a: unknown NPU id 12"),
        ({"instances": [{"name": "a"}]}, "instances[0] must be a dict with 'name' and 'npus'"),
        (
            {"instances": [{"name": "a", "npus": [0]}, {"name": "a", "npus": [1]}]},
            "name 'a' is already used by another instance",
        ),
        ({"npus": [0], "instances": [{"name": "a", "npus": [1]}]}, "instance a: unknown NPU id 1"),
        ({"allowed_cpus": "0-3", "reserved_cpus": "0-3"}, "no allowed CPUs left"),
        ({"allowed_cpus": "0-x"}, "allowed_cpus: invalid cpulist item"),
    ],
)
def test_bad_options(kwargs, message):
    with pytest.raises(NpuopsError) as err:
        plan_mod.make_plan(cpu_hosts.a2(), **kwargs)
    assert message in str(err.value)


def test_instances_union_without_visibility_env():
    insts = [{"name": "svc1", "npus": [1, 3]}, {"name": "svc0", "npus": [0]}]
    plan = plan_mod.make_plan(cpu_hosts.a2(), "strict", instances=insts)
    assert sorted(plan["npus"]) == ["0", "1", "3"]
    # the design document's A2: every node is some NPU's home, so no free CPU is near: the
    # frontend (2 + 2 cores) is carved from the ends of the workers' main CPUs
    assert plan["instances"]["svc1"] == {
        "npus": [1, 3],
        "main": "2-19,26-43",
        "pool": "0-19,22-43,46-47",
        "numa_nodes": [0],
        "frontend": "20-21,44-45",
        "frontend_nodes": [0],
        "frontend_source": "carved",
    }
    # one NPU: 2 + 1 cores carved from the end of its main CPUs
    assert plan["instances"]["svc0"]["main"] == "146-162"
    assert plan["instances"]["svc0"]["frontend"] == "163-165"
    assert plan["npus"]["0"]["pool_order"] == "144-162,166-167"


def test_instance_order_does_not_matter():
    a = plan_mod.make_plan(cpu_hosts.a2(), instances=[{"name": "x", "npus": [0]}, {"name": "y", "npus": [2]}])
    b = plan_mod.make_plan(cpu_hosts.a2(), instances=[{"name": "y", "npus": [2]}, {"name": "x", "npus": [0]}])
    assert a["npus"] == b["npus"] and a["instances"] == b["instances"]


def test_device_type_override():
    plan = plan_mod.make_plan(cpu_hosts.a2(), "vllm_ascend", npus=[0], device_type="A3")
    assert plan["mode"] == "global_slice" and plan["npus"]["0"]["pool"] == "0-23"


def test_allowed_cpus_override_and_list_form():
    plan = plan_mod.make_plan(cpu_hosts.a2(), "strict", npus=[0], allowed_cpus=list(range(144, 192)))
    assert plan["npus"]["0"]["pool"] == "144-167"


@pytest.mark.parametrize("vendor", ["none", "intel"])
def test_no_npu_skipped(vendor):
    topo = cpu_hosts.host([], {0: "0-7"}, "0-7", vendor=vendor, device_type=None)
    plan = plan_mod.make_plan(topo)
    assert plan["skipped"] is True and "CPU binding does not apply" in plan["reason"]
    assert plan["vendor"] == vendor


@pytest.mark.parametrize("vendor,tool", [("nvidia", "nvidia-smi"), ("amd", "rocm-smi")])
def test_gpu_vendor_without_gpus_names_its_tool(vendor, tool):
    topo = cpu_hosts.host([], {0: "0-7"}, "0-7", vendor=vendor, device_type=None)
    with pytest.raises(GpuPlanError, match="lists no GPUs \\(%s missing" % tool):
        plan_mod.make_plan(topo)


def gpu_host():
    topo = cpu_hosts.host([], {0: "0-23", 1: "24-47"}, "0-47", vendor="nvidia", device_type=None)
    topo["gpus"] = [
        {
            "index": 0,
            "name": "GPU0",
            "bus_id": "0000:18:00.0",
            "numa_node": 0,
            "affinity": "0-23",
            "links": {"GPU1": "SYS", "mlx5_0": "PIX", "mlx5_1": "SYS"},
        },
        {
            "index": 1,
            "name": "GPU1",
            "bus_id": "0000:98:00.0",
            "numa_node": 1,
            "affinity": "24-47",
            "links": {"GPU0": "SYS", "mlx5_0": "SYS", "mlx5_1": "PIX"},
        },
    ]
    topo["nics"] = [
        {"name": "mlx5_0", "legend": "NIC0", "netdev": "ib0", "bus_id": "0000:19:00.0", "numa_node": 0},
        {"name": "mlx5_1", "legend": "NIC1", "netdev": "ib1", "bus_id": "0000:99:00.0", "numa_node": 1},
    ]
    return topo


def test_gpu_host_dispatch():
    plan = plan_mod.make_plan(gpu_host(), instances=[{"name": "g", "npus": [1]}])
    assert plan["mode"] == "gpu_numa" and plan["npus"] == {}
    assert plan["gpus"]["0"]["nic"] == "mlx5_0" and plan["gpus"]["1"]["nic"] == "mlx5_1"
    assert plan["instances"]["g"]["pool"] == plan["gpus"]["1"]["pool"]
    assert "env" not in plan["instances"]["g"]  # the wrapper writes CUDA_VISIBLE_DEVICES


def test_gpu_unknown_index():
    with pytest.raises(PlanError, match=r"unknown GPU index\(es\) \[5\]"):
        plan_mod.make_plan(gpu_host(), npus=[5])


def test_a5_strict_plan_has_uvb_and_no_irq():
    plan = plan_mod.make_plan(cpu_hosts.a5(), "strict")
    assert plan["mode"] == "ascend950" and plan["uvb"] == "80-95"
    assert plan["npus"]["2"]["irq"] == ""


CGROUP_SNAPSHOT = os.path.join(SNAPSHOTS, "h100-cgroup")
CPUSET_HINT = (
    "the facts were gathered in a cpuset of 1 CPU (Cpus_allowed_list 1; the host has "
    "96 online: 0-95): gather the facts outside the job's cgroup, or pass allowed_cpus "
    "(role variable npuops_cpu_allowed) with the CPUs the service may use"
)


def test_plan_failing_in_a_cut_cpuset_says_what_to_do():
    """h100-cgroup was recorded inside a 1-CPU job cgroup: the plan names the GPU, the cpuset
    and both ways out; with allowed_cpus it plans."""
    from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

    topo = topology.gather(hostio.SnapshotHostIO(CGROUP_SNAPSHOT))
    for policy in plan_mod.POLICIES:
        with pytest.raises(PlanError) as err:
            plan_mod.make_plan(topo, policy=policy)
        assert str(err.value) == "GPU 5: NUMA node 1 has 1 allowed CPUs for 4 GPUs; " + CPUSET_HINT
        assert err.value.hint == CPUSET_HINT
    assert rules.cpuset_hint(topo) == CPUSET_HINT
    ok = plan_mod.make_plan(topo, allowed_cpus="0-95")
    assert sorted(ok["gpus"], key=int) == [str(i) for i in range(8)]


def test_cpuset_hint_only_for_a_cut_cpuset_and_a_cpu_shortage():
    # NPU host in a 0-7 cpuset: too few CPUs -> hint; the same shortage with allowed_cpus -> none
    with pytest.raises(PlanError) as err:
        plan_mod.make_plan(cpu_hosts.a2("0-7"), npus=[1])
    assert (
        "; the facts were gathered in a cpuset of 8 CPUs (Cpus_allowed_list 0-7; the host "
        "has 192 online: 0-191)" in str(err.value)
    )
    with pytest.raises(PlanError) as err:
        plan_mod.make_plan(cpu_hosts.a2(), npus=[1], allowed_cpus="0-7")
    assert err.value.hint is None and "cpuset" not in str(err.value)
    # not a CPU shortage (unknown NPU id): no hint even in a cut cpuset
    with pytest.raises(PlanError) as err:
        plan_mod.make_plan(cpu_hosts.a2("0-7"), npus=[9])
    assert err.value.hint is None and "cgroup" not in str(err.value)
    # the whole host allowed: no hint
    assert rules.cpuset_hint(cpu_hosts.a2()) is None
