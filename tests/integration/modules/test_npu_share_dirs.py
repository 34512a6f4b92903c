# -*- coding: utf-8 -*-
"""npu_share_dirs through a real ansible-playbook, in a sandbox host root: one run that creates
and one that changes nothing prove the wiring (diff included). Check mode, vnpu.cfg, pruning and
the refused roots: tests/unit/plugins/modules/test_npu_share_dirs_module.py, in-process."""

import pytest

from npuops_testing.runner import run_module
from npuops_testing.share_dirs import EXPECTED_DIRS, mode_of, sandbox, topology

pytestmark = pytest.mark.slow


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
