# -*- coding: utf-8 -*-
"""vllm_binding_facts through a real ansible-playbook: a stand-in vLLM tree of this machine
bound by its installed binder, a thread moved by hand, the drift reported, recorded into a
snapshot and replayed from it."""

import os
import subprocess

import pytest

from npuops_testing.binder import install_instance, stand_in_tree
from npuops_testing.runner import run_module


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not {0, 1} <= set(os.sched_getaffinity(0)), reason="needs CPUs 0 and 1"),
]


def test_drift_is_read_back_recorded_and_replayed(tmp_path):
    root, dest = install_instance(tmp_path)
    with stand_in_tree(tmp_path, workers=2) as tree:
        subprocess.run(
            [
                str(dest / "svc-bind"),
                "--plan",
                str(dest / "svc.plan.json"),
                "--once",
                "--no-migrate",
                "--root-pid",
                str(tree.main),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        args = {"host_root": str(root), "root_pids": {"svc": tree.main}}
        clean = run_module("vllm_binding_facts", args)
        assert clean.get("failed") is not True, clean
        assert clean["ansible_facts"]["npu_binding"]["drift"] == []
        assert clean["changed"] is False
        os.sched_setaffinity(tree.workers[0].threads["acl_thread"], {1})
        snap = str(tmp_path / "snap")
        drifted = run_module("vllm_binding_facts", dict(args, save_snapshot=snap))
        assert drifted["changed"] is True and drifted["snapshot_saved"] == snap
        rows = drifted["ansible_facts"]["npu_binding"]["drift"]
        assert [(r["kind"], r["device"]) for r in rows] == [("threads_off_plan", "NPU0")]
    # the processes are gone now: the snapshot still answers as the host did
    replayed = run_module("vllm_binding_facts", dict(args, snapshot=snap))
    assert replayed["ansible_facts"]["npu_binding"] == drifted["ansible_facts"]["npu_binding"]


def test_bad_input_is_a_message(tmp_path):
    result = run_module("vllm_binding_facts", {"root_pids": {"svc": "x"}, "host_root": str(tmp_path)})
    assert result["failed"] and "root_pids[svc]" in result["msg"]
    empty = run_module("vllm_binding_facts", {"host_root": str(tmp_path)})
    assert empty["ansible_facts"]["npu_binding"]["instances"] == {}
    assert "no instance is installed" in empty["ansible_facts"]["npu_binding"]["errors"][0]["msg"]
