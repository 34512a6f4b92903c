# -*- coding: utf-8 -*-
"""gpu_plan.plan_gpus on every real nvidia-smi topo fixture (with the host's NUMA layout),
invariants, options, errors."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules
from ansible_collections.npuops.fleet.plugins.module_utils.plan import gpu as gpu_plan
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from npuops_testing import gpu_hosts as fx
from npuops_testing.gpu_hosts import topology_of

# fixture: (expected NIC of GPU 0.., expected links); host layouts in npuops_testing.gpu_hosts
RAILS = {
    fx.DGXA100: (["mlx5_%d" % k for k in range(8)], ["PXB"] * 8),
    fx.B200: (["mlx5_4", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_10", "mlx5_13", "mlx5_14", "mlx5_15"], ["PXB"] * 8),
    # rails as in NVIDIA's DGX H100 table and the host's active IB list (DeepEP #397)
    fx.DELL_MP: (["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"], ["PIX"] * 8),
    fx.TPG7: (["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"], ["PIX"] * 8),
    fx.TPG8: (["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"], ["PIX"] * 8),
    fx.PLI: (
        ["mlx5_0", "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_3", "mlx5_5", "mlx5_4"],
        ["PIX", "NODE", "NODE", "PIX", "PIX", "NODE", "PIX", "NODE"],
    ),
    fx.ONENIC: (["mlx5_0"] * 8, ["SYS"] * 8),
    fx.V17516: (["NIC%d" % k for k in range(7)], ["PIX"] * 7),
    fx.H200: (["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"], ["PIX"] * 8),
    fx.SNC: (["NIC0", "NIC1", "NIC2", "NIC4", "NIC5", "NIC6"], ["PIX"] * 6),
    fx.JUWELS: (["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"], ["PIX"] * 4),
    fx.DELLA: (["mlx5_0", "mlx5_1"], ["NODE"] * 2),
    fx.BREV: ([None] * 4, [None] * 4),
    fx.PCIE8: ([None] * 8, [None] * 8),
}


@pytest.mark.parametrize("rel", sorted(RAILS))
def test_every_real_fixture_plans(rel):
    topology = topology_of(rel)
    plan = gpu_plan.plan_gpus(topology)
    allowed = fx.LAYOUT[rel][1]
    nics, links = RAILS[rel]
    keys = sorted(plan["gpus"], key=int)
    assert [plan["gpus"][k]["nic"] for k in keys] == nics
    assert [plan["gpus"][k]["link"] for k in keys] == links
    allowed_set = set(cpulist.parse(allowed))
    seen = set()
    numa_off = all(gpu["numa_node"] is None for gpu in topology["gpus"])
    for key in keys:
        entry = plan["gpus"][key]
        pool = set(cpulist.parse(entry["pool"]))
        assert pool, key
        assert pool <= allowed_set
        assert not pool & seen, "pools overlap at GPU %s" % key
        seen |= pool
        if numa_off:
            assert entry["numa_node"] is None
        else:
            node_cpus = set(cpulist.parse(topology["cpu"]["numa_nodes"][str(entry["numa_node"])]))
            assert pool <= node_cpus
    if any(nics):
        used = []
        for nic in nics:
            if nic not in used:
                used.append(nic)
        assert plan["env"]["NCCL_IB_HCA"] == "=" + ",".join(sorted(used, key=rules.natural_key))
    else:
        assert plan["env"] == {}


def test_dgx_a100_pools_written_out():
    plan = gpu_plan.plan_gpus(topology_of(fx.DGXA100))
    assert [plan["gpus"][str(k)]["pool"] for k in range(8)] == [
        "48-55,176-183",
        "56-63,184-191",
        "16-23,144-151",
        "24-31,152-159",
        "112-119,240-247",
        "120-127,248-255",
        "80-87,208-215",
        "88-95,216-223",
    ]
    assert [plan["gpus"][str(k)]["numa_node"] for k in range(8)] == [3, 3, 1, 1, 7, 7, 5, 5]
    assert plan["warnings"] == []


def test_b200_storage_and_frontend_nics_lose_and_pools_follow_cores():
    plan = gpu_plan.plan_gpus(topology_of(fx.B200))
    assert plan["gpus"]["0"]["pool"] == "0-13,112-125"  # whole cores with their siblings
    assert plan["gpus"]["7"]["pool"] == "98-111,210-223"
    assert plan["env"] == {"NCCL_IB_HCA": "=mlx5_4,mlx5_7,mlx5_8,mlx5_9,mlx5_10,mlx5_13,mlx5_14,mlx5_15"}


def test_numa_off_host_slices_allowed_cpus_and_warns():
    plan = gpu_plan.plan_gpus(topology_of(fx.TPG7))
    assert plan["gpus"]["0"]["pool"] == "0-11,96-107"
    assert any("numa=off" in w for w in plan["warnings"])


def test_parser_numa_off_flag_alone_disables_pinning():
    topology = topology_of(fx.DGXA100)
    topology["numa_off"] = True
    plan = gpu_plan.plan_gpus(topology)
    assert all(entry["numa_node"] is None for entry in plan["gpus"].values())


def test_cgroup_cut_cpu_affinity_is_not_trusted():
    # PLI's matrix was captured with only CPU 1 allowed: the pools still cover both nodes
    plan = gpu_plan.plan_gpus(topology_of(fx.PLI))
    assert plan["gpus"]["0"]["pool"] == "0,2,4,6,8,10,12,14,16,18,20,22"
    assert plan["gpus"]["4"]["pool"] == "1,3,5,7,9,11,13,15,17,19,21,23"
    # its matrix prints cross-socket paths as NODE: NICs are placed by their PIX GPU's node
    assert any("costed as SYS" in w for w in plan["warnings"])


def test_far_pairing_warns_about_gpudirect():
    plan = gpu_plan.plan_gpus(topology_of(fx.ONENIC))
    assert sum("GPUDirect" in w for w in plan["warnings"]) == 8


@pytest.mark.parametrize("rel", [fx.DGXA100, fx.B200, fx.PLI, fx.H200, fx.DELL_MP])
def test_input_order_does_not_change_the_plan(rel):
    topology = topology_of(rel)
    expected = gpu_plan.plan_gpus(topology)
    rng = random.Random(rel)
    for dummy in range(5):
        shuffled = dict(topology)
        shuffled["gpus"] = list(topology["gpus"])
        shuffled["nics"] = list(topology["nics"])
        rng.shuffle(shuffled["gpus"])
        rng.shuffle(shuffled["nics"])
        assert gpu_plan.plan_gpus(shuffled) == expected


def test_pci_addresses_rank_nics_before_names():
    # two identical PIX NICs for GPU 0: the lower PCI address wins even if its name sorts last
    topology = {
        "cpu": {"allowed": "0-7", "numa_nodes": {"0": "0-7"}},
        "gpus": [{"index": 0, "numa_node": 0, "links": {"mlx5_0": "PIX", "mlx5_1": "PIX"}}],
        "nics": [{"name": "mlx5_0", "bus_id": "0000:9a:00.0"}, {"name": "mlx5_1", "bus_id": "0000:1a:00.0"}],
    }
    assert gpu_plan.plan_gpus(topology)["gpus"]["0"]["nic"] == "mlx5_1"


@pytest.mark.parametrize(
    "option,expected",
    [
        (
            ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"],
            ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"],
        ),
        ("mlx5_(1|2|7|8)", ["mlx5_1", "mlx5_1", "mlx5_2", "mlx5_2", "mlx5_7", "mlx5_7", "mlx5_8", "mlx5_8"]),
    ],
)
def test_nics_option_restricts_pairing(option, expected):
    plan = gpu_plan.plan_gpus(topology_of(fx.DELL_MP), nics=option)
    assert [plan["gpus"][str(k)]["nic"] for k in range(8)] == expected


@pytest.mark.parametrize(
    "option,needle",
    [
        (["mlx5_99"], "mlx5_99 not found"),
        ("ib.*", "no RDMA device matches"),
        ("mlx5_(", "not a valid regular expression"),
        ([3], "list of RDMA device names"),
    ],
)
def test_bad_nics_option(option, needle):
    with pytest.raises(PlanError) as err:
        gpu_plan.plan_gpus(topology_of(fx.DELL_MP), nics=option)
    assert needle in str(err.value)


def test_allowed_and_reserved_override():
    plan = gpu_plan.plan_gpus(topology_of(fx.DGXA100), allowed="0-255", reserved="48-49,176-177")
    assert plan["gpus"]["0"]["pool"] == "50-56,178-184"
    assert plan["gpus"]["1"]["pool"] == "57-63,185-191"


def test_node_without_allowed_cpu_moves_its_gpus_off_node_with_a_warning():
    topology = topology_of(fx.BREV)
    topology["cpu"]["numa_nodes"]["2"] = "208-213"  # a node with CPUs and no GPU
    plan = gpu_plan.plan_gpus(topology, allowed="0-51,104-155,208-213")
    assert [plan["gpus"][str(k)]["pool"] for k in range(1, 4)] == ["208,211", "209,212", "210,213"]
    assert plan["gpus"]["0"]["pool"] == "0-51,104-155"
    assert any("no allowed CPU" in w for w in plan["warnings"])
    with pytest.raises(PlanError) as err:  # no spare node: impossible, names the GPU
        gpu_plan.plan_gpus(topology_of(fx.BREV), allowed="0-51,104-155")
    assert str(err.value).startswith("GPU 1: has no NUMA-local allowed CPU")


def test_too_few_cpus_names_the_gpu():
    with pytest.raises(PlanError) as err:
        gpu_plan.plan_gpus(topology_of(fx.DGXA100), allowed="0-48,64-175,192-255")
    assert str(err.value) == "GPU 1: NUMA node 3 has 1 allowed CPUs for 2 GPUs"


@pytest.mark.parametrize(
    "topology,needle",
    [
        ({}, "no GPUs"),
        ({"gpus": [{"name": "GPU0"}]}, "integer 'index'"),
        ({"gpus": [{"index": 0}, {"index": 0}], "cpu": {"allowed": "0-3"}}, "GPU 0: listed twice"),
        (
            {"gpus": [{"index": 0, "numa_node": 5}], "cpu": {"allowed": "0-3", "numa_nodes": {"0": "0-3"}}},
            "GPU 0: is on NUMA node 5",
        ),
        ({"gpus": [{"index": 0}], "cpu": {"allowed": "x"}}, "allowed CPUs"),
        ({"gpus": [{"index": 0}], "cpu": {}}, "no allowed CPUs"),
    ],
)
def test_bad_topologies_are_plan_errors(topology, needle):
    with pytest.raises(PlanError) as err:
        gpu_plan.plan_gpus(topology)
    assert needle in str(err.value)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 4), st.integers(0, 6), st.data())
def test_random_hosts_keep_invariants(n_gpus, n_nodes, n_nics, data):
    per_node = data.draw(st.integers(n_gpus, 16))
    nodes = dict((str(n), cpulist.format(range(n * per_node, (n + 1) * per_node))) for n in range(n_nodes))
    cells = ["PIX", "PXB", "PHB", "NODE", "SYS"]
    gpus = [
        {
            "index": i,
            "numa_node": data.draw(st.integers(0, n_nodes - 1)),
            "links": dict(("mlx5_%d" % k, data.draw(st.sampled_from(cells))) for k in range(n_nics)),
        }
        for i in range(n_gpus)
    ]
    topology = {
        "cpu": {"allowed": "0-%d" % (n_nodes * per_node - 1), "numa_nodes": nodes},
        "gpus": gpus,
        "nics": [{"name": "mlx5_%d" % k} for k in range(n_nics)],
    }
    plan = gpu_plan.plan_gpus(topology)
    seen = set()
    for gpu in gpus:
        entry = plan["gpus"][str(gpu["index"])]
        pool = set(cpulist.parse(entry["pool"]))
        assert pool and not pool & seen
        assert pool <= set(cpulist.parse(nodes[str(gpu["numa_node"])]))
        seen |= pool
        if n_nics:
            assert entry["nic"] is not None
    if n_nics:
        loads = [sum(1 for e in plan["gpus"].values() if e["nic"] == "mlx5_%d" % k) for k in range(n_nics)]
        assert max(loads) <= -(-n_gpus // n_nics)
