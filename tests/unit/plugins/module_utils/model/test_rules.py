# -*- coding: utf-8 -*-
"""Soft-share capacity (plugins/module_utils/model/rules.py softshare_capacity). Each table row says where the rule comes from:
``shipped`` = MindCluster 26.x code (device plugin / ascend-for-volcano), ``rfc`` = the RFC text."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.model import rules


def _npus(healths, dies_per_npu=1):
    out = []
    for idx, health in enumerate(healths):
        out.append(
            {
                "npu_id": idx // dies_per_npu,
                "chip_id": idx % dies_per_npu,
                "logic_id": idx,
                "phy_id": idx,
                "health": health,
            }
        )
    return out


CAPACITY_CASES = [
    # (source, npus, device_type, single_die, expected (total, healthy, capacity))
    ("shipped: 8 healthy A2 chips -> 800", _npus(["OK"] * 8), "A2", True, (8, 8, 800)),
    ("shipped: a broken chip costs 100", _npus(["OK"] * 7 + ["Critical"]), "A2", True, (8, 7, 700)),
    ("shipped: Warning (general alarm) stays healthy", _npus(["Warning"] + ["OK"] * 7), "A2", True, (8, 8, 800)),
    ("shipped: Alarm is unhealthy", _npus(["Alarm"] + ["OK"] * 7), "A2", True, (8, 7, 700)),
    ("shipped: unknown health is unhealthy", _npus([None, "Unknown", "OK"]), "A2", True, (3, 1, 100)),
    ("shipped: A3 single-die counts dies -> 1600", _npus(["OK"] * 16, 2), "A3", True, (16, 16, 1600)),
    ("shipped: A3 one broken die -100", _npus(["OK"] * 15 + ["Critical"], 2), "A3", True, (16, 15, 1500)),
    ("shipped: A3 union mode counts packages", _npus(["OK"] * 16, 2), "A3", False, (8, 8, 800)),
    (
        "shipped: A3 union mode, a broken die breaks its package",
        _npus(["OK"] * 15 + ["Critical"], 2),
        "A3",
        False,
        (8, 7, 700),
    ),
    ("shipped: no NPUs", [], None, True, (0, 0, 0)),
    ("shipped: health case-insensitive", _npus(["ok", " OK "]), "A2", True, (2, 2, 200)),
]


@pytest.mark.parametrize(
    "source,npus,device_type,single_die,expected", CAPACITY_CASES, ids=[c[0] for c in CAPACITY_CASES]
)
def test_capacity(source, npus, device_type, single_die, expected):
    got = rules.softshare_capacity(npus, device_type, single_die_mode=single_die)
    assert (got["chips_total"], got["chips_healthy"], got["capacity"]) == expected
