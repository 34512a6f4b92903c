# -*- coding: utf-8 -*-
"""The installed binder (zipapp) on the process trees real vLLM 0.32 builds (docs/research: the
real process tree), reproduced by the stand-in with real processes that title themselves as
vLLM does (their own argv, as setproctitle writes it): a worker is ``python3``, then
``VLLM::Worker``, then its final title; TP=1's ``VLLM::Worker``; DP=2's ``EngineCore_DP<r>`` each
with one ``VLLM::Worker``; the uniproc EngineCore (no worker process); a custom title prefix;
processes titled like workers that are none (decoys); a title of 4,300 digits. Every thread is
read back from /proc."""

import json
import os
import subprocess
import time

import pytest

from npuops_testing.binder import PLAN, allowed, binder_at_engine_start, build_binder, stand_in_tree, wait_final

HAVE_TWO_CPUS = {0, 1} <= set(os.sched_getaffinity(0))
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAVE_TWO_CPUS, reason="needs CPUs 0 and 1 allowed")]
# frontend CPU 0; NPU0 main 1 / acl 0 / release 1; NPU1 main 0 / acl 1 / release 0 (PLAN)
WANT = {
    0: {"acl_thread": "0", "release_thread": "1", "worker_thread": "1"},
    1: {"acl_thread": "1", "release_thread": "0", "worker_thread": "0"},
}
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


@pytest.fixture(scope="module")
def binder(tmp_path_factory):
    return build_binder(tmp_path_factory.mktemp("bin"))


def _plan(tmp_path, plan=None):
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(plan or PLAN))
    return str(path)


def _env(tmp_path, path=None):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    return dict(os.environ, PATH=path or str(bindir))  # no npu-smi: the tree decides


def _run(binder, args, env, timeout=90):
    proc = subprocess.run(
        [binder, "--json"] + args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _assert_workers_bound(tree, devices=(0, 1)):
    for worker, device in zip(tree.workers, devices):
        for name, cpu in WANT[device].items():
            assert allowed(worker.pid, worker.threads[name]) == cpu, (device, name)


def _all_threads(pid):
    return dict((int(t), allowed(pid, int(t))) for t in os.listdir("/proc/%d/task" % pid))


def test_title_timeline_workers_bound_from_spawn_and_report_ends_true(tmp_path, binder):
    """python3 (1 s) -> VLLM::Worker (1 s) -> VLLM::Worker_TP<n>: bound to their devices from
    the first pass (spawn order under EngineCore), never as frontend; the report's entries
    end with the final titles as workers."""
    env = {"STAND_IN_TITLES": "1,1"}
    with stand_in_tree(tmp_path, workers=2, env=env) as tree:
        code, result, log = _run(
            binder,
            [
                "--plan",
                _plan(tmp_path),
                "--root-pid",
                str(tree.main),
                "--interval",
                "0.2",
                "--follow",
                "3",
                "--no-migrate",
            ],
            _env(tmp_path),
        )
        assert code == 0, log
        wait_final(tree)
        _assert_workers_bound(tree)
        assert "frontend pid=%d " % tree.workers[0].pid not in log
        assert "frontend pid=%d " % tree.workers[1].pid not in log
        by_pid = dict((r["pid"], r) for r in result["workers"])
        assert sorted(by_pid) == sorted(w.pid for w in tree.workers)
        assert [by_pid[w.pid]["title"] for w in tree.workers] == ["VLLM::Worker_TP0", "VLLM::Worker_TP1"]
        assert [by_pid[w.pid]["device"] for w in tree.workers] == [0, 1]
        assert all(r["role"] == "frontend" for r in result["frontend"])
        assert set(r["pid"] for r in result["frontend"]) == {tree.main, tree.engine}
        for pid in (tree.main, tree.engine):
            assert set(_all_threads(pid).values()) == {"0"}


def test_main_process_mask_does_not_leak_into_workers_spawned_later(tmp_path, binder):
    """The binder runs while EngineCore has not spawned its workers yet (2 s): neither the main
    process nor EngineCore is pinned before they exist, so the workers inherit the mask the
    instance started with (CPUs 0-1), not the frontend's (0); EngineCore is pinned after."""
    env = _env(tmp_path)
    plan = _plan(tmp_path)
    delayed = tmp_path / "delayed"
    delayed.mkdir()

    def bind(main_pid):
        return _run(
            binder,
            ["--plan", plan, "--root-pid", str(main_pid), "--interval", "0.2", "--follow", "2", "--no-migrate"],
            env,
        )

    with binder_at_engine_start(delayed, bind, env={"STAND_IN_SPAWN_DELAY": "2"}) as (tree, run):
        code, _result, log = run
        assert code == 0, log
        with open(str(delayed / "tree.spawn")) as handle:
            assert json.load(handle)["cpus"] == [0, 1], log  # not the frontend's [0]
        assert "pid=%d tid=%d (main) 0-1 -> 0" % (tree.engine, tree.engine) in log
        _assert_workers_bound(tree)
        assert set(_all_threads(tree.main).values()) == {"0"}


def test_tp1_worker_titled_vllm_worker_is_device_0s(tmp_path, binder):
    with stand_in_tree(tmp_path, workers=1) as tree:
        code, result, log = _run(
            binder,
            [
                "--plan",
                _plan(tmp_path, dict(PLAN, npuops_instance=dict(PLAN["npuops_instance"], devices=[0]))),
                "--root-pid",
                str(tree.main),
                "--once",
                "--no-migrate",
            ],
            _env(tmp_path),
        )
        assert code == 0, log
        assert [(r["pid"], r["title"], r["device"]) for r in result["workers"]] == [
            (tree.workers[0].pid, "VLLM::Worker", 0)
        ]
        _assert_workers_bound(tree, devices=(0,))
        assert result["missing"] == []


def test_dp2_engines_each_with_one_vllm_worker(tmp_path, binder):
    """DP=2 (dense model): EngineCore_DP0 and _DP1, each with one ``VLLM::Worker``: DP rank r
    serves the r-th device."""
    with stand_in_tree(tmp_path, workers=1, dp=2, env={"STAND_IN_TITLES": "0.5,0.5"}) as tree:
        code, result, log = _run(
            binder,
            [
                "--plan",
                _plan(tmp_path),
                "--root-pid",
                str(tree.main),
                "--interval",
                "0.2",
                "--follow",
                "2",
                "--no-migrate",
            ],
            _env(tmp_path),
        )
        assert code == 0, log
        wait_final(tree)
        _assert_workers_bound(tree)
        assert sorted((r["pid"], r["device"], r["title"]) for r in result["workers"]) == sorted(
            [(tree.workers[0].pid, 0, "VLLM::Worker"), (tree.workers[1].pid, 1, "VLLM::Worker")]
        )
        for engine in tree.engines:
            assert set(_all_threads(engine).values()) == {"0"}


def test_uniproc_engine_is_device_0s_worker_once_no_worker_can_come(tmp_path, binder):
    """GPU TP=1 (uniproc executor): EngineCore runs the model; after --uniproc-after with no
    worker child it is GPU0's worker; before that it is left alone, never pinned as frontend."""
    plan = _plan(tmp_path, GPU_PLAN)
    with stand_in_tree(tmp_path, workers=1, env={"STAND_IN_UNIPROC": "1"}) as tree:
        code, early, log = _run(
            binder,
            [
                "--plan",
                plan,
                "--root-pid",
                str(tree.main),
                "--once",
                "--check",
                "--no-migrate",
                "--uniproc-after",
                "3600",
            ],
            _env(tmp_path),
        )
        assert code == 2 and early["missing"] == [0], log
        assert tree.engine not in [r["pid"] for r in early["frontend"]]
        code, result, log = _run(
            binder,
            [
                "--plan",
                plan,
                "--root-pid",
                str(tree.main),
                "--interval",
                "0.2",
                "--follow",
                "1",
                "--no-migrate",
                "--uniproc-after",
                "1",
            ],
            _env(tmp_path),
        )
        assert code == 0, log
        assert [(r["pid"], r["device"]) for r in result["workers"]] == [(tree.engine, 0)]
        assert set(_all_threads(tree.engine).values()) == {"1"}
        assert set(_all_threads(tree.main).values()) == {"0"}
        prom_dir = tmp_path / "prom"
        prom_dir.mkdir()
        code, _again, log = _run(
            binder,
            [
                "--plan",
                plan,
                "--root-pid",
                str(tree.main),
                "--once",
                "--no-migrate",
                "--metrics-dir",
                str(prom_dir),
                "--uniproc-after",
                "1",
            ],
            _env(tmp_path),
        )
        assert code == 0, log
        prom = (prom_dir / "npuops_svc.prom").read_text()
        assert 'npuops_binding_drift_threads{instance="svc",device="GPU0",role="main"} 0' in prom


def test_custom_title_prefix_from_the_instance_environment(tmp_path, binder):
    env = {"VLLM_PROCESS_NAME_PREFIX": "ACME", "STAND_IN_TITLES": "0.3,0.3"}
    with stand_in_tree(tmp_path, workers=2, env=env) as tree:
        wait_final(tree)
        code, result, log = _run(
            binder, ["--plan", _plan(tmp_path), "--root-pid", str(tree.main), "--once", "--no-migrate"], _env(tmp_path)
        )
        assert code == 0, log
        assert sorted(r["title"] for r in result["workers"]) == ["ACME::Worker_TP0", "ACME::Worker_TP1"]
        _assert_workers_bound(tree)


def test_decoys_titled_like_workers_are_no_workers_and_get_no_memory_move(tmp_path, binder):
    """Processes in the tree that title themselves ``VLLM::Worker_TP0`` / ``VLLM::Worker`` (the
    main process's children, not EngineCore's) are frontend; migratepages never sees them."""
    calls = tmp_path / "bin" / "calls"
    env = _env(tmp_path)
    tool = tmp_path / "bin" / "migratepages"
    tool.write_text('#!/bin/sh\necho "$1" >> %s\n' % calls)
    tool.chmod(0o755)
    with stand_in_tree(tmp_path, workers=2, decoys=4) as tree:
        code, result, log = _run(
            binder,
            ["--plan", _plan(tmp_path), "--root-pid", str(tree.main), "--interval", "0.2", "--thread-wait", "0"],
            dict(env, PATH=env["PATH"] + ":/usr/bin:/bin"),
        )
        assert code == 0, log
        assert sorted(r["pid"] for r in result["workers"]) == sorted(w.pid for w in tree.workers)
        frontend = dict((r["pid"], r) for r in result["frontend"])
        for pid in tree.decoys:
            assert frontend[pid]["role"] == "frontend"
            assert frontend[pid]["title"].startswith("VLLM::Worker")
            assert set(_all_threads(pid).values()) == {"0"}
        moved = [int(line) for line in calls.read_text().split()]
        assert sorted(moved) == sorted(w.pid for w in tree.workers)
        _assert_workers_bound(tree)


def test_a_worker_title_of_4300_digits_is_bounded(tmp_path, binder):
    """A worker retitles itself ``VLLM::Worker_TP<4,300 digits>``: no int() of it, no crash;
    the rank comes from the spawn order."""
    env = {"STAND_IN_TITLES": "0,0", "STAND_IN_FINAL": "Worker_TP" + "9" * 4300, "STAND_IN_PAD": "4400"}
    with stand_in_tree(tmp_path, workers=2, env=env) as tree:
        wait_final(tree)
        start = time.time()
        code, result, log = _run(
            binder, ["--plan", _plan(tmp_path), "--root-pid", str(tree.main), "--once", "--no-migrate"], _env(tmp_path)
        )
        assert code == 0, log
        assert time.time() - start < 30
        assert sorted(r["device"] for r in result["workers"]) == [0, 1]
        assert all(len(r["title"]) <= 130 for r in result["workers"])
        _assert_workers_bound(tree)


def test_down_instance_exits_3_and_still_writes_metrics(tmp_path, binder):
    """The reconcile contract: the instance not running is exit 3 (nothing to bind), the metrics
    file still says so (npuops_instance_up 0) beside the missing workers."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    prom_dir = tmp_path / "prom"
    prom_dir.mkdir()
    for how in (["--root-pid", str(gone.pid)], ["--unit", "vllm-svc.service"]):
        code, result, log = _run(
            binder,
            ["--plan", _plan(tmp_path), "--once", "--no-migrate", "--metrics-dir", str(prom_dir)] + how,
            _env(tmp_path),
        )
        assert code == 3 and result["unit_running"] is False, log
        prom = (prom_dir / "npuops_svc.prom").read_text()
        assert 'npuops_instance_up{instance="svc"} 0' in prom
        assert 'npuops_instance_workers_missing{instance="svc"} 2' in prom
    with stand_in_tree(tmp_path, workers=2) as tree:
        code, _result, log = _run(
            binder,
            [
                "--plan",
                _plan(tmp_path),
                "--once",
                "--no-migrate",
                "--root-pid",
                str(tree.main),
                "--metrics-dir",
                str(prom_dir),
            ],
            _env(tmp_path),
        )
        assert code == 0, log
        prom = (prom_dir / "npuops_svc.prom").read_text()
        assert 'npuops_instance_up{instance="svc"} 1' in prom
        assert 'npuops_instance_workers_missing{instance="svc"} 0' in prom


def test_follow_binds_to_a_changed_plan_and_keeps_it_over_a_bad_one(tmp_path, binder):
    """The plan file changes under a --follow run: the binder re-reads it and the threads end
    on the new plan (so the bind unit and the reconciler agree); a bad plan written after is
    refused with a logged error and the last good one stays."""
    plan = _plan(tmp_path)
    swapped = json.loads(json.dumps(PLAN))
    swapped["npus"]["0"], swapped["npus"]["1"] = PLAN["npus"]["1"], PLAN["npus"]["0"]
    with stand_in_tree(tmp_path, workers=2) as tree:
        proc = subprocess.Popen(
            [
                binder,
                "--json",
                "--plan",
                plan,
                "--root-pid",
                str(tree.main),
                "--interval",
                "0.2",
                "--follow",
                "4",
                "--no-migrate",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            env=_env(tmp_path),
        )
        try:
            deadline = time.time() + 20
            w0 = tree.workers[0]
            while allowed(w0.pid, w0.threads["worker_thread"]) != "1":
                assert time.time() < deadline, "the first plan was never bound"
                time.sleep(0.1)
            with open(plan + ".new", "w") as handle:
                json.dump(swapped, handle)
            os.rename(plan + ".new", plan)
            while allowed(w0.pid, w0.threads["worker_thread"]) != "0":
                assert time.time() < deadline, "the changed plan was never bound"
                time.sleep(0.1)
            with open(plan + ".new", "w") as handle:
                handle.write("{not json")
            os.rename(plan + ".new", plan)
            out, log = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait()
        assert proc.returncode == 0, log
        assert "the plan changed; binding to the new one" in log
        assert "the plan changed but cannot be used; keeping the one in use" in log
        _assert_workers_bound(tree, devices=(1, 0))
        assert json.loads(out)["missing"] == []


def test_a_slow_engine_is_left_alone_past_uniproc_after_while_the_ready_url_is_silent(tmp_path, binder):
    """The real vLLM tier on a loaded host: EngineCore spawned its workers long after the
    binder's --uniproc-after clock. With a ready URL that does not answer yet, the clock alone
    does not settle the engine: it stays unpinned until its workers exist, so they inherit the
    instance's mask (0-1), not the frontend's (0)."""
    import socket

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: the server is "still loading"
    env = _env(tmp_path)
    plan = _plan(tmp_path)
    delayed = tmp_path / "slow"
    delayed.mkdir()

    def bind(main_pid):
        return _run(
            binder,
            [
                "--plan",
                plan,
                "--root-pid",
                str(main_pid),
                "--interval",
                "0.2",
                "--follow",
                "2",
                "--no-migrate",
                "--uniproc-after",
                "0.5",
                "--ready-timeout",
                "3",
                "--ready-url",
                "http://127.0.0.1:%d/health" % port,
            ],
            env,
        )

    with binder_at_engine_start(delayed, bind, env={"STAND_IN_SPAWN_DELAY": "4"}) as (tree, run):
        _code, _result, log = run
        with open(str(delayed / "tree.spawn")) as handle:
            assert json.load(handle)["cpus"] == [0, 1], log  # not the frontend's [0]
        _assert_workers_bound(tree)
