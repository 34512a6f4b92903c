# -*- coding: utf-8 -*-
"""Soft-share filters called directly (their run through ansible-playbook by FQCN is in
tests/integration/filter/test_softshare.py)."""

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.fleet.plugins.filter import softshare as flt
from npuops_testing.softshare_hosts import JOB, facts


def test_filters_registered():
    names = set(flt.FilterModule().filters())
    assert {"softshare_place", "softshare_capacity", "softshare_daemonset", "softshare_node_labels"} <= names


def test_place_from_hostvars_shaped_facts():
    fleet = {"n1": {"ansible_facts": {"npu_topology": facts()}}, "n2": {"npu_topology": facts()}}
    got = flt.softshare_place(fleet, [], JOB)
    assert got["placed"] is True
    # both replicas share chip 0 of n1: the second is an exact fit (50 + 50)
    assert [(r["host"], r["chip"]) for r in got["replicas"]] == [("n1", 0), ("n1", 0)]
    assert got["replicas"][1]["score"] == 200 * 16


@pytest.mark.parametrize(
    "job,allocations,fragment",
    [
        (dict(JOB, aicore_quota=0), [], "not in range [1,100]"),
        (JOB, [{"host": "n9", "chip": 0, "aicore_quota": 1, "hbm_quota": 1, "policy": "elastic"}], "not in the fleet"),
        (None, [], "job"),
    ],
)
def test_place_errors_are_filter_errors(job, allocations, fragment):
    with pytest.raises(AnsibleFilterError) as err:
        flt.softshare_place({"n1": facts()}, allocations, job)
    assert fragment in str(err.value) and "softshare_place" in str(err.value)


@pytest.mark.parametrize(
    "value,expected",
    [
        (facts(), {"chips_total": 8, "chips_healthy": 8, "capacity": 800}),
        (facts(healths=["OK"] * 7 + ["Critical"]), {"chips_total": 8, "chips_healthy": 7, "capacity": 700}),
        (
            {"npu_topology": facts(chips=16, device_type="A3")},
            {"chips_total": 16, "chips_healthy": 16, "capacity": 1600},
        ),
        (facts()["npus"][:2], {"chips_total": 2, "chips_healthy": 2, "capacity": 200}),
    ],
)
def test_capacity_one_host(value, expected):
    assert flt.softshare_capacity(value) == expected


def test_capacity_fleet_total():
    got = flt.softshare_capacity(
        {"a": {"npu_topology": facts()}, "b": {"npu_topology": facts(healths=["Alarm"] + ["OK"] * 7)}}
    )
    assert got["total"] == {"chips_total": 16, "chips_healthy": 15, "capacity": 1500}
    assert got["hosts"]["b"]["capacity"] == 700


def test_capacity_rejects_garbage():
    with pytest.raises(AnsibleFilterError):
        flt.softshare_capacity("eight chips")


def test_daemonset_and_labels_filters():
    docs = list(yaml.safe_load_all(flt.softshare_daemonset("/share_device", "A3", "26.0.0")))
    assert docs[-1]["kind"] == "DaemonSet"
    with pytest.raises(AnsibleFilterError) as err:
        flt.softshare_daemonset("/share_device", "A2", "26.0.0", extra_args=["-useAscendDocker=true"])
    assert "useAscendDocker" in str(err.value)
    labels = yaml.safe_load(flt.softshare_node_labels("n1"))["metadata"]["labels"]
    assert labels["huawei.com/scheduler.chip1softsharedev.enable"] == "true"
