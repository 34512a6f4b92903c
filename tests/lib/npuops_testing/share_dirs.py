# -*- coding: utf-8 -*-
"""What the npu_share_dirs tests share: the sandbox host root, an A3 topology with given
physical ids, the directories the module creates for chips 0, 1 and 15, and a path's mode."""

import os
import stat

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
