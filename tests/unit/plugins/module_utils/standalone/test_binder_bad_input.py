# -*- coding: utf-8 -*-
"""The binder on bad plans and bad tool output: every bad plan is an error with a message and
exit code 1, in the report and in the metrics (``npuops_binder_last_run_success 0``), never a
traceback; a ``--follow`` run whose plan is rewritten badly keeps the plan in use; a run that
crashes still writes its report and metrics; the service's main process is never a worker,
whatever a device tool lists; one process reader per tool, built on the collection's parser."""

import ast
import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors
from ansible_collections.npuops.fleet.plugins.module_utils.parse import npu_smi
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import binder, metrics, procs, smi
from npuops_testing.binder import BINDER_APP, PLAN, gpu_plan

STANDALONE = os.path.dirname(binder.__file__)


def _plan_with(**changes):
    plan = json.loads(json.dumps(PLAN))
    for key, value in changes.items():
        if key == "npu0":
            plan["npus"]["0"].update(value)
        elif key == "instance":
            plan["npuops_instance"].update(value)
        else:
            plan[key] = value
    return plan


BAD_PLANS = {
    "numa_nodes a list": (_plan_with(numa_nodes=["0-1"]), "numa_nodes"),
    "numa_nodes a string": (_plan_with(numa_nodes="0-1"), "numa_nodes"),
    "numa_nodes key not a node": (_plan_with(numa_nodes={"zero": "0-1"}), "numa_nodes"),
    "numa_nodes cpus not a cpulist": (_plan_with(numa_nodes={"0": "0-x"}, npu0={"numa_nodes": None}), "numa"),
    "npu numa_nodes not a node": (_plan_with(npu0={"numa_nodes": ["a"]}), "numa_nodes"),
    "npu numa_nodes a dict": (_plan_with(npu0={"numa_nodes": {"0": 1}}), "numa_nodes"),
    "devices not a list": (_plan_with(instance={"devices": "01"}), "devices"),
    "device not a number": (_plan_with(instance={"devices": ["x"]}), "devices"),
    "name not a string": (_plan_with(instance={"name": 7}), "name"),
    "npus not a table": (_plan_with(npus=["0"]), "npus"),
}


def _metrics(directory, name="svc"):
    path = os.path.join(str(directory), "npuops_%s.prom" % name)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return handle.read()


def _run(args, timeout=60, env=None):
    proc = subprocess.run(
        [BINDER_APP, "--json"] + args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=timeout,
        env=dict(os.environ, PATH="/nonexistent", **(env or {})),
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("case", sorted(BAD_PLANS))
def test_a_bad_plan_is_an_error_with_report_and_metrics(tmp_path, case, sleeper):
    plan, word = BAD_PLANS[case]
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(plan))
    code, out, log = _run(
        [
            "--plan",
            str(path),
            "--root-pid",
            str(sleeper.pid),
            "--once",
            "--instance",
            "svc",
            "--metrics-dir",
            str(tmp_path),
        ]
    )
    assert "Traceback" not in log, log
    assert code == binder.EXIT_ERROR
    result = json.loads(out)
    assert word in result["failed"] and str(path) in result["failed"]
    assert 'npuops_binder_last_run_success{instance="svc"} 0' in _metrics(tmp_path)


def test_a_follow_run_keeps_its_plan_when_the_plan_is_rewritten_badly(tmp_path, sleeper):
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(PLAN))
    proc = subprocess.Popen(
        [
            BINDER_APP,
            "--json",
            "--plan",
            str(path),
            "--root-pid",
            str(sleeper.pid),
            "--interval",
            "0.1",
            "--timeout",
            "1.5",
            "--follow",
            "1.5",
            "--no-migrate",
            "--metrics-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        env=dict(os.environ, PATH="/nonexistent"),
    )
    time.sleep(0.6)
    path.write_text(json.dumps(_plan_with(numa_nodes={"zero": "0-1"})))
    out, log = proc.communicate(timeout=60)
    assert "Traceback" not in log, log
    assert "the plan changed but cannot be used; keeping the one in use" in log
    assert "numa_nodes" in log
    # still running on the old plan: it ends as a run whose devices showed no worker
    assert proc.returncode == binder.EXIT_MISSING, log
    assert json.loads(out)["missing"] == [0, 1]
    assert 'npuops_instance_workers_missing{instance="svc"} 2' in _metrics(tmp_path)


def test_a_crashed_run_still_writes_its_report_and_failed_metrics(tmp_path, sleeper, monkeypatch, capsys):
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(PLAN))
    # a success exported by the run before
    (tmp_path / "npuops_svc.prom").write_text('npuops_binder_last_run_success{instance="svc"} 1\n')

    def crash(self):
        raise KeyError("an unexpected bug")

    monkeypatch.setattr(binder.Binder, "run", crash)
    code = binder.main(
        ["--json", "--plan", str(path), "--root-pid", str(sleeper.pid), "--once", "--metrics-dir", str(tmp_path)]
    )
    captured = capsys.readouterr()
    assert code == binder.EXIT_ERROR
    result = json.loads(captured.out)
    assert "internal error" in result["failed"] and "an unexpected bug" in result["failed"]
    assert "Traceback" in captured.err  # the bug is shown in the log, for a report
    assert 'npuops_binder_last_run_success{instance="svc"} 0' in _metrics(tmp_path)


def test_a_plan_that_cannot_be_read_still_says_failed_in_the_metrics(tmp_path):
    path = tmp_path / "svc.plan.json"
    path.write_text("{not json")
    code, out, log = _run(["--plan", str(path), "--instance", "svc", "--once", "--metrics-dir", str(tmp_path)])
    assert code == binder.EXIT_ERROR and "not valid JSON" in json.loads(out)["failed"]
    assert 'npuops_binder_last_run_success{instance="svc"} 0' in _metrics(tmp_path)


def _discovery(monkeypatch, plan, titles, parents, rows, root=100):
    args = binder.parse_args(["--plan", "unused", "--uniproc-after", "600"])
    one = binder.Binder(plan, args, root)
    monkeypatch.setattr(procs, "title", lambda pid, prefix=None: titles.get(pid, "python3"))
    monkeypatch.setattr(procs, "start_ticks", lambda pid: pid)
    monkeypatch.setattr(procs, "age", lambda pid: 1.0)
    monkeypatch.setattr(smi, "device_rows", lambda row, timeout=30: rows)
    pids = [root] + sorted(p for p in parents if p != root)
    one.discover(pids, parents)
    return one


def test_the_main_process_listed_on_a_gpu_is_never_a_worker(monkeypatch):
    """rocm-smi lists the service's main process on GPU0 (it opened a HIP context) and the one
    worker the engine has so far on GPU1: the main process is not bound as GPU0's worker."""
    titles = {101: "VLLM::EngineCore"}
    parents = {100: None, 101: 100, 102: 101}
    one = _discovery(monkeypatch, gpu_plan("amd"), titles, parents, rows=[(1, 100, 0), (0, 102, 0)])
    assert 100 not in one.workers
    assert one.workers == {102: 0}


def test_a_tool_listed_process_outside_the_engines_is_no_worker(monkeypatch):
    """A tokenizer process the main process started holds GPU1 (a stray context): the engine's
    workers alone are workers once an engine exists."""
    titles = {101: "VLLM::EngineCore"}
    parents = {100: None, 101: 100, 102: 101, 103: 100}
    one = _discovery(monkeypatch, gpu_plan("amd"), titles, parents, rows=[(0, 102, 0), (1, 103, 0)])
    assert one.workers == {102: 0}


def test_without_an_engine_tool_listed_children_still_are_workers(monkeypatch):
    parents = {100: None, 102: 100, 103: 100}
    one = _discovery(monkeypatch, gpu_plan("amd"), {}, parents, rows=[(0, 100, 0), (0, 102, 0), (1, 103, 0)])
    assert one.workers == {102: 0, 103: 1}


def test_one_process_reader_per_tool_and_no_name_defined_twice():
    for name in sorted(os.listdir(STANDALONE)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(STANDALONE, name)) as handle:
            tree = ast.parse(handle.read())
        names = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
        assert len(names) == len(set(names)), (name, sorted(n for n in names if names.count(n) > 1))
    assert sorted(smi.READERS) == sorted(set(row.tool for row in vendors.VENDORS.values()))


def test_the_npu_process_reader_is_the_collection_parser(monkeypatch):
    row = {"npu_id": 5, "chip_id": 1, "pid": 4242, "memory_mb": None}
    monkeypatch.setattr(npu_smi, "parse_info", lambda text: {"processes": [row]})
    assert smi.parse_npu_processes("anything") == [(5, 1, 4242, 0)]


def test_a_name_that_is_not_a_string_is_no_metrics_typeerror(tmp_path, sleeper):
    """The plan's name 7, no --instance: metrics used to raise TypeError (no report at all)."""
    with pytest.raises(ValueError, match="cannot name a metrics file"):
        metrics.write(str(tmp_path), 7, [])
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(_plan_with(instance={"name": 7})))
    code, out, log = _run(
        ["--plan", str(path), "--root-pid", str(sleeper.pid), "--once", "--metrics-dir", str(tmp_path)]
    )
    assert "Traceback" not in log and code == binder.EXIT_ERROR
    assert "npuops_instance.name 7 is not a name" in json.loads(out)["failed"]
    assert "metrics: no instance name (give --instance)" in log
