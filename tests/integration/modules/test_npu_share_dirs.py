# -*- coding: utf-8 -*-
"""npu_share_dirs through a real ansible-playbook, in a sandbox host root: one run that creates
and one that changes nothing prove the wiring (diff included). Check mode, vnpu.cfg, pruning and
the refused roots: tests/unit/plugins/modules/test_npu_share_dirs_module.py, in-process."""

import os
import stat

import pytest

from npuops_testing.runner import run_module

pytestmark = pytest.mark.slow

EXPECTED_DIRS = [
    "share_device",
    "share_device/0",
    "share_device/1",
    "share_device/15",
    "etc/enpu",
    "var/log/mindx-dl/devicePlugin",
]


def sandbox(tmp_path):
    root = tmp_path / "host"
    (root / "etc").mkdir(parents=True)
    return root


def topology(phys):
    return {
        "device_type": "A3",
        "npus": [{"npu_id": i // 2, "logic_id": i, "phy_id": p, "health": "OK"} for i, p in enumerate(phys)],
    }


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_creates_then_unchanged_and_keeps_vnpu_cfg(tmp_path):
    host = sandbox(tmp_path)
    (host / "etc" / "vnpu.cfg").write_text("existing vnpu config\n")
    args = {"root": "/share_device", "topology": topology([0, 1, 15]), "host_root": str(host)}
    first = run_module("npu_share_dirs", args, diff=True)
    assert first.get("failed") is not True, first
    assert first["changed"] is True and first["chips"] == [0, 1, 15]
    for rel in EXPECTED_DIRS:
        assert (host / rel).is_dir(), rel
    assert mode_of(host / "share_device" / "15") == 0o750
    assert mode_of(host / "var/log/mindx-dl/devicePlugin") == 0o750
    assert first["group"] == "root"  # no HwHiAiUser group on the test machine
    assert "/etc/vnpu.cfg" not in first["created"]
    assert (host / "etc" / "vnpu.cfg").read_text() == "existing vnpu config\n"
    assert any(d.get("after", {}).get("path") == "/share_device/15" for d in first["diff"])
    second = run_module("npu_share_dirs", args)
    assert second["changed"] is False and second["created"] == []
