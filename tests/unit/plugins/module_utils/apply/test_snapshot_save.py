# -*- coding: utf-8 -*-
"""apply/snapshot_save: the snapshot a facts module records, and a truthful ``changed``."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import snapshot_save
from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from npuops_testing import SNAPSHOTS


def _recording(save_dir):
    rec = snapshot_save.recorder(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8")), save_dir)
    rec.run(["npu-smi", "info"])
    return rec


def test_no_snapshot_asked_no_recorder_no_change():
    assert snapshot_save.recorder(object(), None) is None
    assert snapshot_save.save(None, None, False, {"changed": False}) == {"changed": False}


def test_saved_is_a_change(tmp_path):
    dest = str(tmp_path / "saved")
    result = snapshot_save.save(_recording(dest), dest, False, {"changed": False})
    assert result == {"changed": True, "snapshot_saved": dest}
    assert os.path.isfile(os.path.join(dest, "snapshot.yml"))
    replayed = hostio.SnapshotHostIO(dest).run(["npu-smi", "info"])
    assert "910B3" in replayed.stdout


def test_check_mode_would_change_writes_nothing(tmp_path):
    dest = str(tmp_path / "saved")
    result = snapshot_save.save(_recording(dest), dest, True, {"changed": False})
    assert result == {"changed": True}
    assert not os.path.exists(dest)


def test_unwritable_destination_is_a_snapshot_error(tmp_path):
    (tmp_path / "file").write_text("x")
    dest = str(tmp_path / "file" / "saved")
    with pytest.raises(SnapshotError, match="file"):
        snapshot_save.save(_recording(dest), dest, False, {"changed": False})
