# -*- coding: utf-8 -*-
"""model/binding.py: the live binding state of installed instances (the binder's check-mode
report) and the drift rows built from it - on a stand-in vLLM tree of this machine, then
recorded and replayed from a snapshot."""

import json
import os
import subprocess

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import binding, instance_files
from npuops_testing.binder import DEST, PLAN, install_instance, stand_in_tree
from npuops_testing.fake_io import FakeIO


def _report(**extra):
    base = {
        "changed": False,
        "workers": [],
        "frontend": [],
        "irqs": [],
        "missing": [],
        "failed": None,
        "unit_running": True,
    }
    base.update(extra)
    return base


def test_drift_rows_for_every_kind():
    state = {
        "instances": {
            "svc": {
                "unit": "vllm-svc.service",
                "unit_state": "failed",
                "report": _report(
                    workers=[
                        {
                            "role": "worker",
                            "device": 0,
                            "pid": 42,
                            "title": "VLLM::Worker_TP0",
                            "threads": 9,
                            "remote_memory_ratio": 0.4,
                            "changed": [{"tid": 43, "role": "acl", "before": "0-191", "after": "14"}],
                        },
                        {
                            "role": "worker",
                            "device": 1,
                            "pid": 44,
                            "title": "VLLM::Worker_TP1",
                            "threads": 9,
                            "remote_memory_ratio": 0.02,
                            "changed": [],
                        },
                    ],
                    irqs=[
                        {"irq": 300, "device": 0, "role": "sq", "drift": True, "before": "5", "after": "12-13"},
                        {"irq": 301, "device": 0, "role": "cq", "drift": False, "before": "12-13", "after": "12-13"},
                    ],
                    missing=[3],
                ),
            }
        }
    }
    rows = binding.drift(state, {"active": True, "banned_irqs": [301]})
    kinds = [(r["kind"], r["device"]) for r in rows]
    assert kinds == [
        ("unit_down", None),
        ("threads_off_plan", "NPU0"),
        ("worker_missing", "NPU3"),
        ("memory_remote", "NPU0"),
        ("irq_moved", "NPU0"),
        ("irqbalance_undoing", None),
    ]
    assert "tid 43 (acl) on 0-191, planned 14" in rows[1]["evidence"]
    assert "40%" in rows[3]["evidence"] and "300" in rows[5]["evidence"]
    assert all(r["fix"] for r in rows)
    assert binding.drift({"instances": {"svc": {"unit": "u", "unit_state": "active", "report": _report()}}}) == []


def test_gather_reads_plans_and_asks_each_binder_through_the_io_object():
    calls = []

    def binder(argv, timeout):
        calls.append(argv)
        return hostio.CommandResult(argv, stdout=json.dumps(_report()))

    io = FakeIO(
        files={
            DEST + "/svc.plan.json": json.dumps(PLAN),
            DEST + "/svc-bind": "zip",
            DEST + "/svc-launch": "#!",
            DEST + "/bad.plan.json": "{",
        },
        commands={
            "systemctl is-active vllm-svc.service": "active\n",
            "systemctl is-active vllm-bad.service": "inactive\n",
            " ".join(
                [
                    DEST + "/svc-bind",
                    "--plan",
                    DEST + "/svc.plan.json",
                    "--instance",
                    "svc",
                    "--once",
                    "--check",
                    "--json",
                    "--no-migrate",
                    "--irq-state",
                    instance_files.DEFAULT_IRQ_STATE,
                    "--unit",
                    "vllm-svc.service",
                ]
            ): binder,
        },
    )
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
        assert binding.drift(binding.gather(live, DEST, host_root=str(root), root_pids=pids)) == []
        w1 = tree.workers[1]
        os.sched_setaffinity(w1.threads["release_thread"], {1})
        recorder = hostio.RecordingHostIO(live)
        state = binding.gather(recorder, DEST, host_root=str(root), root_pids=pids)
        (row,) = binding.drift(state)
        assert (row["kind"], row["device"]) == ("threads_off_plan", "NPU1")
        assert "(release) on 1, planned 0" in row["evidence"]
        recorder.save(str(tmp_path / "snap"))
    replay = binding.gather(hostio.SnapshotHostIO(str(tmp_path / "snap")), DEST, host_root=str(root), root_pids=pids)
    assert replay == state


def _three_device_plan():
    """PLAN with a third device (no worker will serve it) and NPU1's home node 1, which this
    machine does not have (so all of its worker's memory is off its node)."""
    plan = json.loads(json.dumps(PLAN))
    plan["npus"]["2"] = dict(plan["npus"]["0"])
    plan["npus"]["1"]["numa_nodes"] = [1]
    plan["npuops_instance"]["devices"] = [0, 1, 2]
    return plan


@pytest.mark.slow
@pytest.mark.skipif(not {0, 1} <= set(os.sched_getaffinity(0)), reason="needs CPUs 0 and 1")
def test_every_live_drift_kind_is_read_recorded_and_replayed(tmp_path):
    """A real process tree, real /proc/<pid>/numa_maps, sandbox IRQ files: each kind of drift
    the binder can see, read through the host I/O object, recorded and replayed."""
    root, dest = install_instance(tmp_path, plan=_three_device_plan())
    irq_dir = root / "proc" / "irq"
    for irq, cpus in ((101, "0"), (102, "0"), (201, "1")):
        (irq_dir / str(irq)).mkdir(parents=True)
        (irq_dir / str(irq) / "smp_affinity_list").write_text(cpus + "\n")
    state_file = root / instance_files.DEFAULT_IRQ_STATE.lstrip("/")
    state_file.parent.mkdir(parents=True)
    state_file.write_text(
        json.dumps(
            {
                "schema": 1,
                "irqs": [
                    {"irq": 101, "device": 0, "role": "sq", "cpus": "0"},
                    {"irq": 102, "device": 0, "role": "cq", "cpus": "0"},
                    {"irq": 201, "device": 1, "role": "sq", "cpus": "1"},
                ],
            }
        )
    )
    irqbalance = {"active": True, "banned_irqs": [101, 102]}
    kwargs = dict(host_root=str(root), proc_irq=str(irq_dir))
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
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.sched_setaffinity(tree.workers[0].threads["acl_thread"], {1})
        (irq_dir / "101" / "smp_affinity_list").write_text("1\n")
        recorder = hostio.RecordingHostIO(hostio.LiveHostIO(str(root)))
        state = binding.gather(recorder, DEST, root_pids={"svc": tree.main}, **kwargs)
        rows = binding.drift(state, irqbalance)
        recorder.save(str(tmp_path / "snap"))
        dead_pid = tree.main
    kinds = sorted((r["kind"], r["device"]) for r in rows)
    assert kinds == [
        ("irq_moved", "NPU0"),
        ("irqbalance_undoing", None),
        ("memory_remote", "NPU1"),
        ("threads_off_plan", "NPU0"),
        ("worker_missing", "NPU2"),
    ], rows
    by_kind = dict((r["kind"], r) for r in rows)
    assert "IRQ 101 (sq) on CPUs 1, planned 0" == by_kind["irq_moved"]["evidence"]
    assert "does not ban pinned IRQs 201" in by_kind["irqbalance_undoing"]["evidence"]
    assert "100%% of pid %d's" % tree.workers[1].pid in by_kind["memory_remote"]["evidence"]
    replay = hostio.SnapshotHostIO(str(tmp_path / "snap"))
    assert binding.gather(replay, DEST, root_pids={"svc": tree.main}, **kwargs) == state
    # the tree is gone, its main process with it: the instance is down (not its workers
    # missing); the moved IRQ is still moved
    gone = binding.gather(hostio.LiveHostIO(str(root)), DEST, root_pids={"svc": dead_pid}, **kwargs)
    assert [r["kind"] for r in binding.drift(gone)] == ["unit_down", "irq_moved"]
    # a plan file whose instance block names another instance: its binder refuses it
    (dest / "other.plan.json").write_text((dest / "svc.plan.json").read_text())
    os.link(str(dest / "svc-bind"), str(dest / "other-bind"))
    broken = binding.gather(
        hostio.LiveHostIO(str(root)), DEST, root_pids={"other": os.getpid()}, systemd=False, **kwargs
    )
    (row,) = [r for r in binding.drift(broken) if r["instance"] == "other"]
    assert row["kind"] == "binder_failed" and "svc" in row["evidence"]


GPU_PLAN = {
    "mode": "gpu_numa",
    "numa_nodes": {"0": "0-1"},
    "gpus": {"0": {"pool": "1", "numa_node": 0}},
    "npuops_instance": {
        "schema": 1,
        "name": "svc",
        "vendor": "nvidia",
        "devices": [0],
        "main": "1",
        "pool": "1",
        "frontend": "0",
        "binding": "host",
    },
}


@pytest.mark.slow
@pytest.mark.skipif(not {0, 1} <= set(os.sched_getaffinity(0)), reason="needs CPUs 0 and 1")
def test_gpu_tp1_worker_off_plan_is_reported_as_such_with_gpu_labels(tmp_path):
    """A GPU TP=1 instance on the multiprocess executor: its one worker is ``VLLM::Worker``.
    Running off plan it is a threads_off_plan row of ``GPU0`` with its evidence, not a
    worker_missing one."""
    root, dest = install_instance(tmp_path, plan=GPU_PLAN)
    with stand_in_tree(tmp_path, workers=1) as tree:
        worker = tree.workers[0]
        os.sched_setaffinity(worker.threads["worker_thread"], {0})
        state = binding.gather(hostio.LiveHostIO(str(root)), DEST, host_root=str(root), root_pids={"svc": tree.main})
        rows = [r for r in binding.drift(state) if r["device"] != "frontend"]
    assert [(r["kind"], r["device"]) for r in rows] == [("threads_off_plan", "GPU0")], rows
    assert "pid %d (VLLM::Worker)" % worker.pid in rows[0]["evidence"]
    assert "tid %d (main) on 0, planned 1" % worker.threads["worker_thread"] in rows[0]["evidence"]
    missing = binding.drift(
        {
            "instances": {
                "svc": {
                    "unit": "vllm-svc.service",
                    "unit_state": "active",
                    "vendor": "nvidia",
                    "report": _report(missing=[0]),
                }
            }
        }
    )
    assert [(r["kind"], r["device"]) for r in missing] == [("worker_missing", "GPU0")]
    assert "EngineCore" in missing[0]["fix"] and "journalctl -u vllm-svc.service" in missing[0]["fix"]
