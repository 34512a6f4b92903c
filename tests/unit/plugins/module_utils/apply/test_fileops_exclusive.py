# -*- coding: utf-8 -*-
"""apply/fileops.exclusive: one read-merge-write of a shared host file at a time (the IRQ state
file every instance's npu_irq_affinity run merges into)."""

import json
import os
import threading

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, UnsafePathError
from ansible_collections.npuops.fleet.plugins.module_utils.host import locks
from ansible_collections.npuops.fleet.plugins.modules import npu_irq_affinity

STATE = "/var/lib/npuops/irq-state.json"


def _target(irq, device):
    return {"irq": irq, "device": "NPU%d" % device, "role": "sq", "cpus": [device]}


def test_a_second_run_waits_and_keeps_the_first_runs_rows(tmp_path, monkeypatch):
    root = str(tmp_path)
    waiting = threading.Event()
    real_sleep = locks.time.sleep

    def sleep(seconds):  # the second run found the lock taken
        waiting.set()
        real_sleep(seconds)

    monkeypatch.setattr(locks.time, "sleep", sleep)
    params = {"host_root": root, "irq_state": STATE, "npus": [1]}
    outcome = {}

    def second_run():
        outcome["result"] = npu_irq_affinity.state_file(params, [_target(11, 1)], False, [])

    with fileops.exclusive(root, STATE):
        runner = threading.Thread(target=second_run)
        runner.start()
        assert waiting.wait(30), "the second run did not wait for the lock"
        # the first run writes its row while the second one waits
        npu_irq_affinity.merge_state_file(dict(params, npus=[0]), [_target(10, 0)], False, [])
    runner.join(30)
    assert outcome["result"]["changed"]
    with open(os.path.join(root, STATE.lstrip("/"))) as handle:
        rows = json.load(handle)["irqs"]
    assert [(r["irq"], r["device"]) for r in rows] == [(10, 0), (11, 1)]


def test_a_lock_held_too_long_is_an_error_naming_it(tmp_path):
    root = str(tmp_path)
    with fileops.exclusive(root, STATE):
        with pytest.raises(NpuopsError, match=r"\.irq-state\.json\.lock: another run has held"):
            with fileops.exclusive(root, STATE, timeout=0.2):
                pass
    with fileops.exclusive(root, STATE, timeout=0.2):  # released: taken at once
        pass


def test_a_symlinked_lock_file_is_refused(tmp_path):
    root = tmp_path / "root"
    (root / "var/lib/npuops").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(str(victim), str(root / "var/lib/npuops/.irq-state.json.lock"))
    with pytest.raises(UnsafePathError, match="symlink"):
        with fileops.exclusive(str(root), STATE):
            pass
    assert victim.read_text() == "keep"


def test_check_mode_takes_no_lock_and_writes_nothing(tmp_path):
    result = npu_irq_affinity.state_file(
        {"host_root": str(tmp_path), "irq_state": STATE, "npus": [0]}, [_target(10, 0)], True, []
    )
    assert result["changed"] and not (tmp_path / "var").exists()
