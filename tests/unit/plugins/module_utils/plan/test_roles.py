# -*- coding: utf-8 -*-
"""Role split and the plan entries of cpu_roles (their cpulist text: test_cpuset / test_cpulist)."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus.nodemap import NodeMap
from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError


@pytest.mark.parametrize(
    "pool, reserve_irq, expected",
    [
        ([0, 1, 2, 3, 4], True, {"irq": [0, 1], "main": [2], "acl": [3], "release": [4]}),
        ([5, 6, 7, 0, 1, 2], True, {"irq": [5, 6], "main": [7, 0], "acl": [1], "release": [2]}),
        ([0, 1, 2], False, {"irq": [], "main": [0], "acl": [1], "release": [2]}),
    ],
)
def test_split_roles(pool, reserve_irq, expected):
    assert cpu_roles.split_roles(pool, reserve_irq) == expected


@pytest.mark.parametrize("pool, reserve_irq, minimum", [([0, 1, 2, 3], True, 5), ([0, 1], False, 3)])
def test_split_roles_too_small(pool, reserve_irq, minimum):
    with pytest.raises(PlanError) as err:
        cpu_roles.split_roles(pool, reserve_irq, npu=7)
    assert str(err.value) == (
        "NPU 7: The number of CPUs is insufficient. Each NPU requires at least %d CPUs." % minimum
    )


@pytest.mark.parametrize("tpc, size", [(1, 8), (2, 16), (None, None), (4, None), (True, None)])
def test_cluster_size(tpc, size):
    assert cpu_roles.cluster_size(tpc) == size


def test_npu_entry_keeps_positions():
    pool = list(range(48, 60)) + list(range(0, 12))
    entry = cpu_roles.npu_entry(pool, cpu_roles.split_roles(pool), NodeMap({0: range(0, 48), 1: range(48, 96)}))
    assert entry == {
        "pool": "0-11,48-59",
        "pool_order": "48-59,0-11",
        "numa_nodes": [0, 1],
        "irq": "48-49",
        "main": "0-9,50-59",
        "acl": "10",
        "release": "11",
    }
