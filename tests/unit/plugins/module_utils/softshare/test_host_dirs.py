# -*- coding: utf-8 -*-
"""softshare/host_dirs: the share root, chip ids, the mode option and the layout, as data."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.softshare import host_dirs


def test_normal_root():
    assert host_dirs.normal_root("/share_device//x/") == "/share_device/x"
    with pytest.raises(NpuopsError, match="^root: "):
        host_dirs.normal_root("share_device")


def test_chip_ids_from_the_option_or_the_topology():
    assert host_dirs.chip_ids(chips=[3, 1, 3]) == [1, 3]
    topo = {"npus": [{"npu_id": 0, "logic_id": 0, "phy_id": 4}, {"npu_id": 0, "logic_id": 1, "phy_id": 5}]}
    assert host_dirs.chip_ids(topology=topo) == [4, 5]
    with pytest.raises(NpuopsError, match="no NPU"):
        host_dirs.chip_ids(topology={"npus": []})
    for bad in ([-1], [True], [65536], ["1"]):
        with pytest.raises(NpuopsError, match="chips: physical ids"):
            host_dirs.chip_ids(chips=bad)


@pytest.mark.parametrize("text,want", [("0750", 0o750), ("750", 0o750), ("1777", 0o1777), ("00750", 0o750)])
def test_parse_mode(text, want):
    assert host_dirs.parse_mode(text) == want


@pytest.mark.parametrize(
    "text,problem",
    [
        ("75", "not an octal mode"),
        ("0789", "not an octal"),
        (750, "not an octal"),
        ("4750", "setuid"),
        ("2750", "setgid"),
        ("0777", "world-writable"),
    ],
)
def test_parse_mode_refuses(text, problem):
    with pytest.raises(NpuopsError, match=problem):
        host_dirs.parse_mode(text)


def test_world_writable_when_allowed():
    assert host_dirs.parse_mode("0777", allow_world_writable=True) == 0o777


def test_layout_order():
    rows = host_dirs.layout("/share", [0, 2], 0o750, "svc", "grp")
    assert rows[:3] == [
        ("dir", "/share", 0o750, "svc", "grp"),
        ("dir", "/share/0", 0o750, "svc", "grp"),
        ("dir", "/share/2", 0o750, "svc", "grp"),
    ]
    assert ("file", host_dirs.VNPU_CFG, 0o644, "root", "root") in rows
    assert [r[1] for r in rows].index("/etc/enpu") < [r[1] for r in rows].index(host_dirs.VNPU_CFG)
