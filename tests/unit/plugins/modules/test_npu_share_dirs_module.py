# -*- coding: utf-8 -*-
"""npu_share_dirs in-process (npuops_testing.module_harness), in sandbox host roots: check
mode, creation then no change, vnpu.cfg, pruning and the refused roots. These were
ansible-playbook runs; tests/integration/modules/test_npu_share_dirs.py keeps one for the
wiring."""

import os

import pytest

from npuops_testing.module_harness import call_module
from npuops_testing.share_dirs import EXPECTED_DIRS, mode_of, sandbox, topology


def test_check_mode_creates_nothing(tmp_path):
    host = sandbox(tmp_path)
    result = call_module(
        "npu_share_dirs", {"root": "/share_device", "chips": [0, 1], "host_root": str(host)}, check=True
    )
    assert result.get("failed") is not True, result
    assert result["changed"] is True
    assert "/share_device/1" in result["created"] and "/etc/vnpu.cfg" in result["created"]
    assert sorted(os.listdir(str(host))) == ["etc"] and os.listdir(str(host / "etc")) == []


def test_creates_then_unchanged_and_keeps_vnpu_cfg(tmp_path):
    host = sandbox(tmp_path)
    (host / "etc" / "vnpu.cfg").write_text("existing vnpu config\n")
    args = {"root": "/share_device", "topology": topology([0, 1, 15]), "host_root": str(host)}
    first = call_module("npu_share_dirs", args, diff=True)
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
    second = call_module("npu_share_dirs", args)
    assert second["changed"] is False and second["created"] == []


def test_vnpu_cfg_created_empty(tmp_path):
    host = sandbox(tmp_path)
    result = call_module("npu_share_dirs", {"root": "/share_device", "chips": [3], "host_root": str(host)})
    assert result["changed"] is True
    assert (host / "etc" / "vnpu.cfg").read_text() == ""


def test_prune_removes_only_empty_dirs_of_gone_chips(tmp_path):
    host = sandbox(tmp_path)
    for name in ("0", "1", "2", "notes"):
        (host / "share_device" / name).mkdir(parents=True)
    (host / "share_device" / "1" / "die0").write_text("")
    result = call_module(
        "npu_share_dirs", {"root": "/share_device", "chips": [0], "prune": True, "host_root": str(host)}
    )
    assert result.get("failed") is not True, result
    assert result["removed"] == ["/share_device/2"]
    assert result["kept"] == ["/share_device/1"]
    assert sorted(os.listdir(str(host / "share_device"))) == ["0", "1", "notes"]
    # in-process a warning is the module's wire form ({"event": {"msg": ...}}), not a string
    assert any("/share_device/1" in str(w) for w in result.get("warnings", []))


REFUSED = [
    # (what, setup, root, message fragment)
    ("root is a symlink", "link_root", "/share_device", "is a symlink"),
    ("root passes through a symlink", "link_parent", "/data/share_device", "is a symlink"),
    ("root contains ..", None, "/etc/../share_device", "'..'"),
    ("root relative", None, "share_device", "must be absolute"),
    ("root parent missing", None, "/missing/share_device", "parent directory /missing does not exist"),
]


@pytest.mark.parametrize("what,setup,root,message", REFUSED, ids=[r[0] for r in REFUSED])
def test_refuses_unsafe_root(tmp_path, what, setup, root, message):
    host = sandbox(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    if setup == "link_root":
        os.symlink(str(outside), str(host / "share_device"))
    elif setup == "link_parent":
        os.symlink(str(outside), str(host / "data"))
    result = call_module("npu_share_dirs", {"root": root, "chips": [0], "host_root": str(host)})
    assert result["failed"] is True
    assert message in result["msg"] and "Traceback" not in result["msg"]
    assert os.listdir(str(outside)) == [] and not (host / "etc" / "enpu").exists()
