# -*- coding: utf-8 -*-
"""model/binding.py: the live binding state of installed instances (the binder's check-mode
report) and the drift rows built from it - on a stand-in vLLM tree of this machine, then
recorded and replayed from a snapshot."""

import json
import os
import subprocess

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import binding
from npuops_testing.binder import DEST, PLAN, install_instance, stand_in_tree
from npuops_testing.fake_io import FakeIO


def _report(**extra):
    base = {"changed": False, "workers": [], "frontend": [], "irqs": [], "missing": [],
            "failed": None, "unit_running": True}
    base.update(extra)
    return base


def test_drift_rows_for_every_kind():
    state = {"instances": {"svc": {
        "unit": "vllm-svc.service", "unit_state": "failed", "report": _report(
            workers=[{"role": "worker", "device": 0, "pid": 42, "title": "VLLM::Worker_TP0",
                      "threads": 9, "remote_memory_ratio": 0.4,
                      "changed": [{"tid": 43, "role": "acl", "before": "0-191", "after": "14"}]},
                     {"role": "worker", "device": 1, "pid": 44, "title": "VLLM::Worker_TP1",
                      "threads": 9, "remote_memory_ratio": 0.02, "changed": []}],
            irqs=[{"irq": 300, "device": 0, "role": "sq", "drift": True, "before": "5",
                   "after": "12-13"},
                  {"irq": 301, "device": 0, "role": "cq", "drift": False, "before": "12-13",
                   "after": "12-13"}],
            missing=[3])}}}
    rows = binding.drift(state, {"active": True, "banned_irqs": [301]})
    kinds = [(r["kind"], r["device"]) for r in rows]
    assert kinds == [("unit_down", None), ("threads_off_plan", "NPU0"), ("worker_missing", "NPU3"),
                     ("memory_remote", "NPU0"), ("irq_moved", "NPU0"),
                     ("irqbalance_undoing", None)]
    assert "tid 43 (acl) on 0-191, planned 14" in rows[1]["evidence"]
    assert "40%" in rows[3]["evidence"] and "300" in rows[5]["evidence"]
    assert all(r["fix"] for r in rows)
    assert binding.drift({"instances": {"svc": {"unit": "u", "unit_state": "active",
                                                "report": _report()}}}) == []


def test_gather_reads_plans_and_asks_each_binder_through_the_io_object():
    calls = []

    def binder(argv, timeout):
        calls.append(argv)
        return hostio.CommandResult(argv, stdout=json.dumps(_report()))

    io = FakeIO(files={DEST + "/svc.plan.json": json.dumps(PLAN), DEST + "/svc-bind": "zip",
                       DEST + "/svc-launch": "#!", DEST + "/bad.plan.json": "{"},
                commands={"systemctl is-active vllm-svc.service": "active\n",
                          "systemctl is-active vllm-bad.service": "inactive\n",
                          " ".join([DEST + "/svc-bind", "--plan", DEST + "/svc.plan.json",
                                    "--instance", "svc", "--once", "--check", "--json",
                                    "--no-migrate", "--irq-state", binding.DEFAULT_IRQ_STATE,
                                    "--unit", "vllm-svc.service"]): binder})
    state = binding.gather(io)
    assert list(state["instances"]) == ["svc"]
    assert state["instances"]["svc"]["unit_state"] == "active"
    assert state["instances"]["svc"]["report"]["changed"] is False
    assert [e["source"] for e in state["errors"]] == [DEST + "/bad.plan.json"]
    assert len(calls) == 1
    empty = binding.gather(FakeIO())
    assert empty["instances"] == {} and "no instance is installed" in empty["errors"][0]["msg"]


def test_a_sandbox_asks_no_systemd_and_checks_only_the_instances_with_a_root_pid():
    # this machine's systemd is not the sandbox's: no systemctl, no binder for unit-run instances
    calls = []

    def record(argv, timeout):
        calls.append(argv)
        return hostio.CommandResult(argv, stdout=json.dumps(_report()))

    files = {DEST + "/svc.plan.json": json.dumps(PLAN), DEST + "/svc-bind": "zip"}
    io = FakeIO(files=files, commands={"systemctl is-active vllm-svc.service": record})
    state = binding.gather(io, systemd=False)
    entry = state["instances"]["svc"]
    assert entry["checked"] is False and entry["unit_state"] is None and entry["report"] is None
    assert calls == [] and binding.drift(state) == []
    # the same host with systemd: the unit is asked
    assert binding.gather(io)["instances"]["svc"]["checked"] is True and len(calls) == 1


@pytest.mark.slow
@pytest.mark.skipif(not {0, 1} <= set(os.sched_getaffinity(0)), reason="needs CPUs 0 and 1")
def test_live_state_shows_a_moved_thread_and_replays_from_a_snapshot(tmp_path):
    root, dest = install_instance(tmp_path)
    with stand_in_tree(tmp_path, workers=2) as tree:
        live = hostio.LiveHostIO(str(root))
        pids = {"svc": tree.main}
        before = binding.gather(live, DEST, host_root=str(root), root_pids=pids)
        assert binding.drift(before)  # nothing bound yet: every process is off its plan
        # bind for real once, then move one thread by hand
        subprocess.run([str(dest / "svc-bind"), "--plan", str(dest / "svc.plan.json"), "--once",
                        "--no-migrate", "--root-pid", str(tree.main)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert binding.drift(binding.gather(live, DEST, host_root=str(root), root_pids=pids)) == []
        w1 = tree.workers[1]
        os.sched_setaffinity(w1.threads["release_thread"], {1})
        recorder = hostio.RecordingHostIO(live)
        state = binding.gather(recorder, DEST, host_root=str(root), root_pids=pids)
        (row,) = binding.drift(state)
        assert (row["kind"], row["device"]) == ("threads_off_plan", "NPU1")
        assert "(release) on 1, planned 0" in row["evidence"]
        recorder.save(str(tmp_path / "snap"))
    replay = binding.gather(hostio.SnapshotHostIO(str(tmp_path / "snap")), DEST,
                            host_root=str(root), root_pids=pids)
    assert replay == state
