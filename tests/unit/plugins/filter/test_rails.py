# -*- coding: utf-8 -*-
"""npuops.fleet.rail_check: hosts whose GPU k -> NIC differs from identical hosts."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.fleet.plugins.filter.rails import FilterModule, rail_check
from ansible_collections.npuops.fleet.plugins.module_utils.plan import gpu as gpu_plan

# real fixtures planned exactly as in the GPU planner tests
from npuops_testing import gpu_hosts

DGX_RAILS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]


def plan_of(nics):
    return {
        "mode": "gpu_numa",
        "gpus": dict(
            (str(k), {"pool": str(k), "numa_node": 0, "nic": nic, "link": "PIX"}) for k, nic in enumerate(nics)
        ),
    }


def test_registered_as_filter():
    assert FilterModule().filters()["rail_check"] is rail_check


def test_consistent_fleet_reports_nothing():
    fleet = dict(("node%02d" % n, plan_of(DGX_RAILS)) for n in range(5))
    assert rail_check(fleet) == {}


def test_swapped_rails_on_one_host_are_reported_with_differences():
    fleet = dict(("node%02d" % n, plan_of(DGX_RAILS)) for n in range(4))
    swapped = list(DGX_RAILS)
    swapped[1], swapped[2] = swapped[2], swapped[1]
    fleet["node03"] = plan_of(swapped)
    result = rail_check(fleet)
    assert list(result) == ["node03"]
    entry = result["node03"]
    assert entry["majority"] == dict((str(k), nic) for k, nic in enumerate(DGX_RAILS))
    assert entry["differences"] == {
        "1": {"expected": "mlx5_3", "actual": "mlx5_4"},
        "2": {"expected": "mlx5_4", "actual": "mlx5_3"},
    }
    assert (entry["group_hosts"], entry["majority_hosts"], entry["tie"]) == (4, 3, False)


def test_host_using_another_nic_is_still_compared():
    # mlx5_1 (a storage port) instead of mlx5_0: same counts, so same default shape
    fleet = {"a": plan_of(DGX_RAILS), "b": plan_of(DGX_RAILS), "c": plan_of(["mlx5_1"] + DGX_RAILS[1:])}
    assert rail_check(fleet)["c"]["differences"] == {"0": {"expected": "mlx5_0", "actual": "mlx5_1"}}


def test_different_shapes_are_not_compared():
    fleet = {
        "dgx1": plan_of(DGX_RAILS),
        "dgx2": plan_of(DGX_RAILS),
        "pcie1": plan_of(["mlx5_0", "mlx5_1"]),
        "pcie2": plan_of(["mlx5_1", "mlx5_0"]),
    }
    result = rail_check(fleet)
    # the two-GPU hosts tie 1:1; the stable choice is the smaller mapping text
    assert list(result) == ["pcie2"] and result["pcie2"]["tie"] is True


def test_explicit_shapes_group_hosts():
    fleet = {"a": plan_of(DGX_RAILS), "b": plan_of(list(reversed(DGX_RAILS))), "c": plan_of(DGX_RAILS)}
    shapes = {"a": "H100", "b": "H200", "c": "H100"}
    assert rail_check(fleet, shapes) == {}
    assert list(rail_check(fleet)) == ["b"]


def test_hosts_without_gpu_plans_are_ignored():
    fleet = {
        "a": plan_of(DGX_RAILS),
        "b": plan_of(DGX_RAILS),
        "npu": {"mode": "topo_affinity", "npus": {"0": {}}, "gpus": {}},
        "none": None,
    }
    assert rail_check(fleet) == {}


def test_compare_by_pci_address():
    one = plan_of(DGX_RAILS)
    for k, entry in one["gpus"].items():
        entry["nic_bus_id"] = "0000:%02d:00.0" % int(k)
    other = plan_of(DGX_RAILS)  # same names, NICs enumerated in another PCI order
    for k, entry in other["gpus"].items():
        entry["nic_bus_id"] = "0000:%02d:00.0" % (7 - int(k))
    fleet = {"a": one, "b": one, "c": other}
    assert rail_check(fleet) == {}
    assert sorted(rail_check(fleet, key="nic_bus_id")) == ["c"]


def test_real_identical_hosts_tpgds_0007_0008_agree():
    # the same hardware captured on two hosts (one paste with fused cells): same rails
    plans = dict(
        (name, gpu_plan.plan_gpus(gpu_hosts.topology_of(rel)))
        for name, rel in (("tpgds-aihub0007", gpu_hosts.TPG7), ("tpgds-aihub0008", gpu_hosts.TPG8))
    )
    plans["tpgds-aihub0009"] = plans["tpgds-aihub0007"]
    assert rail_check(plans) == {}


@pytest.mark.parametrize(
    "args,needle",
    [
        ((["x"],), "expects a dict"),
        (({}, ["x"]), "shapes must be a dict"),
        (({"a": {"gpus": ["x"]}},), "'gpus' must be a dict"),
        (({"a": {"gpus": {"0": "mlx5_0"}}},), "entry is not a dict"),
    ],
)
def test_bad_input(args, needle):
    with pytest.raises(AnsibleFilterError) as err:
        rail_check(*args)
    assert needle in str(err.value)


def test_bad_key():
    with pytest.raises(AnsibleFilterError):
        rail_check({}, key="pool")
