# -*- coding: utf-8 -*-
"""The binder on a vLLM that starts its workers at once (vLLM >= 0.33,
``MultiprocExecutor._can_start_workers_concurrently``): the stand-in engine starts local rank 1
before rank 0 and both stay titled ``python3``, as vLLM's workers are until their parallel
groups exist. The plan says which engine and version run (``worker_start``,
model/worker_start): a worker without ranks in its title is placed by nvidia-smi's process
table, or left pending until its title carries them; spawn order decides only where the
engine starts the workers in rank order. Every thread is read back from /proc."""

import copy
import json
import os
import subprocess

import pytest

from npuops_testing.binder import BINDER_APP, allowed, gpu_plan, stand_in_tree

HAVE_TWO_CPUS = {0, 1} <= set(os.sched_getaffinity(0))
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAVE_TWO_CPUS, reason="needs CPUs 0 and 1 allowed")]
BUS = {0: "00000000:18:00.0", 1: "00000000:3B:00.0"}
NAMES = ("acl_thread", "release_thread", "worker_thread")


def _plan(tmp_path, version, engine="vllm"):
    plan = copy.deepcopy(gpu_plan("nvidia"))  # GPU0 pool CPU 0, GPU1 pool CPU 1
    plan["npuops_instance"]["frontend"] = "0-1"
    if version is not None:
        plan["worker_start"] = {
            "engine": engine,
            "version": version,
            "order": "rank",
            "source": "/usr/lib/python3/site-packages/vllm-x.dist-info",
        }
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(plan))
    return str(path)


def _nvidia_smi(tmp_path, apps):
    """A stand-in nvidia-smi on PATH: two GPUs and the process table ``apps`` [(pid, gpu)]."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "gpus.csv").write_text("".join("%d, %s\n" % (i, BUS[i]) for i in sorted(BUS)))
    (bindir / "apps.csv").write_text("".join("%d, %s, 900 MiB\n" % (pid, BUS[gpu]) for pid, gpu in apps))
    tool = bindir / "nvidia-smi"
    tool.write_text(
        '#!/bin/sh\ncase "$1" in\n  --query-gpu=*) exec /bin/cat "%s" ;;\n'
        '  --query-compute-apps=*) exec /bin/cat "%s" ;;\nesac\nexit 2\n' % (bindir / "gpus.csv", bindir / "apps.csv")
    )
    tool.chmod(0o755)
    return dict(os.environ, PATH=str(bindir))


def _no_tools(tmp_path):
    bindir = tmp_path / "empty"
    bindir.mkdir(exist_ok=True)
    return dict(os.environ, PATH=str(bindir))


def _run(args, env, timeout=60):
    proc = subprocess.run(
        [BINDER_APP, "--json"] + args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _placed(result):
    return sorted((w["pid"], w["device"]) for w in result["workers"])


OUT_OF_ORDER = {"STAND_IN_START_ORDER": "1,0", "STAND_IN_TITLES": "60,60"}


def test_out_of_order_start_is_placed_by_nvidia_smi(tmp_path):
    """vLLM 0.34: rank 1 started first, both ``python3``; nvidia-smi says which pid holds which
    GPU, and each worker gets its own GPU's CPUs (spawn order would swap them)."""
    with stand_in_tree(tmp_path, workers=2, env=OUT_OF_ORDER) as tree:
        rank0, rank1 = tree.workers
        assert rank1.pid < rank0.pid  # rank 1 really started first
        env = _nvidia_smi(tmp_path, [(rank1.pid, 1), (rank0.pid, 0)])
        code, result, log = _run(
            ["--plan", _plan(tmp_path, "0.34.0"), "--root-pid", str(tree.main), "--once", "--no-migrate"], env
        )
        assert code == 0, log
        assert _placed(result) == sorted([(rank0.pid, 0), (rank1.pid, 1)])
        for name in NAMES:
            assert allowed(rank0.pid, rank0.threads[name]) == "0"
            assert allowed(rank1.pid, rank1.threads[name]) == "1"
        assert result["worker_start"] == {"engine": "vllm", "version": "0.34.0", "order": "concurrent"}
        assert "workers start in concurrent order (vllm 0.34.0" in log


def test_out_of_order_start_without_tools_waits_for_titles(tmp_path):
    """No device tool answers: the unranked workers are left alone (pending, their inherited
    CPUs kept), never bound by spawn order; the devices are reported missing."""
    with stand_in_tree(tmp_path, workers=2, env=OUT_OF_ORDER) as tree:
        code, result, log = _run(
            ["--plan", _plan(tmp_path, "0.33.1"), "--root-pid", str(tree.main), "--once", "--no-migrate"],
            _no_tools(tmp_path),
        )
        assert code == 2, log
        assert result["workers"] == [] and sorted(result["missing"]) == [0, 1]
        for worker in tree.workers:
            start = ",".join(str(c) for c in worker.start_cpus)
            for name in NAMES:
                assert allowed(worker.pid, worker.threads[name]) in (start, _ranges(start))


def _ranges(text):
    cpus = [int(c) for c in text.split(",")]
    out, first = [], cpus[0]
    for prev, cur in zip(cpus, cpus[1:] + [None]):
        if cur != prev + 1:
            out.append(str(first) if first == prev else "%d-%d" % (first, prev))
            first = cur
    return ",".join(out)


def test_out_of_order_start_is_placed_once_titles_carry_ranks(tmp_path):
    """No device tool: once the workers take their ``VLLM::Worker_TP<n>`` titles the binder
    places each by its rank, whatever the start order."""
    env = {"STAND_IN_START_ORDER": "1,0", "STAND_IN_TITLES": "0.5,0.5"}
    with stand_in_tree(tmp_path, workers=2, env=env) as tree:
        rank0, rank1 = tree.workers
        code, result, log = _run(
            [
                "--plan",
                _plan(tmp_path, "0.34.0"),
                "--root-pid",
                str(tree.main),
                "--timeout",
                "20",
                "--interval",
                "0.2",
                "--no-migrate",
            ],
            _no_tools(tmp_path),
        )
        assert code == 0, log
        assert _placed(result) == sorted([(rank0.pid, 0), (rank1.pid, 1)])
        assert allowed(rank0.pid, rank0.threads["acl_thread"]) == "0"
        assert allowed(rank1.pid, rank1.threads["acl_thread"]) == "1"


@pytest.mark.parametrize("version, environ", [("0.32.0", {}), ("0.34.0", {"VLLM_WORKER_MULTIPROC_METHOD": "fork"})])
def test_engines_that_start_in_rank_order_are_placed_by_spawn_order(tmp_path, version, environ):
    """vLLM 0.32 (one by one) and vLLM 0.34 under the fork start method: spawn order is rank
    order, so unranked workers are placed from the first pass without any tool."""
    env = dict({"STAND_IN_TITLES": "60,60"}, **environ)
    with stand_in_tree(tmp_path, workers=2, env=env) as tree:
        rank0, rank1 = tree.workers
        code, result, log = _run(
            ["--plan", _plan(tmp_path, version), "--root-pid", str(tree.main), "--once", "--no-migrate"],
            _no_tools(tmp_path),
        )
        assert code == 0, log
        assert _placed(result) == sorted([(rank0.pid, 0), (rank1.pid, 1)])
        assert result["worker_start"]["order"] == "rank"


def test_a_plan_without_worker_start_on_a_gpu_host_trusts_no_spawn_order(tmp_path):
    """A plan written before ``worker_start`` on an NVIDIA host: the vLLM version is unknown,
    so spawn order is not trusted (the tools' table places the workers)."""
    with stand_in_tree(tmp_path, workers=2, env=OUT_OF_ORDER) as tree:
        rank0, rank1 = tree.workers
        env = _nvidia_smi(tmp_path, [(rank0.pid, 0), (rank1.pid, 1)])
        code, result, log = _run(
            ["--plan", _plan(tmp_path, None), "--root-pid", str(tree.main), "--once", "--no-migrate"], env
        )
        assert code == 0, log
        assert _placed(result) == sorted([(rank0.pid, 0), (rank1.pid, 1)])
        assert result["worker_start"] == {"engine": "vllm", "version": None, "order": "unknown"}


def test_a_bad_worker_start_block_is_a_plan_error(tmp_path):
    path = tmp_path / "svc.plan.json"
    plan = gpu_plan("nvidia")
    plan["worker_start"] = ["vllm", "0.34.0"]
    path.write_text(json.dumps(plan))
    code, result, log = _run(
        ["--plan", str(path), "--root-pid", str(os.getpid()), "--once", "--check"], _no_tools(tmp_path)
    )
    assert code == 1
    assert "worker_start is a list, not a mapping" in result["failed"]
