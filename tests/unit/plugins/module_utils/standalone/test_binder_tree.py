# -*- coding: utf-8 -*-
"""The installed binder (zipapp) on a stand-in vLLM process tree of this machine: a main
process (the API server), ``VLLM::EngineCore`` and ``VLLM::Worker_TP<n>`` processes titled as
vLLM titles them, workers with ``acl_thread`` / ``release_thread`` threads named by prctl, and a
thread that starts late. Every process and thread is read back from /proc."""

import http.server
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app
from npuops_testing.binder import BINDER_APP, PLAN, allowed, build_binder, read_module, stand_in_tree

HAVE_TWO_CPUS = {0, 1} <= set(os.sched_getaffinity(0))
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAVE_TWO_CPUS, reason="needs CPUs 0 and 1 allowed")]


def _plan(tmp_path, plan=None):
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(plan or PLAN))
    return str(path)


def _run(binder, args, env, timeout=60):
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


def _env(bindir):
    env = dict(os.environ)
    env["PATH"] = str(bindir)  # no npu-smi: workers are found by their titles
    return env


def test_whole_tree_lands_on_its_planned_cpus_and_late_threads_are_bound(tmp_path):
    binder = build_binder(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    with stand_in_tree(tmp_path, workers=2, late_thread_after=1.5) as tree:
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
                "4",
                "--no-migrate",
            ],
            _env(bindir),
        )
        assert code == 0, log
        # frontend: the main process, EngineCore and every thread in them
        for pid in (tree.main, tree.engine):
            for tid in os.listdir("/proc/%d/task" % pid):
                assert allowed(pid, int(tid)) == "0", (pid, tid)
        # workers by TP rank: rank k serves devices[k]
        w0, w1 = tree.workers
        assert allowed(w0.pid, w0.threads["acl_thread"]) == "0"
        assert allowed(w0.pid, w0.threads["release_thread"]) == "1"
        assert allowed(w0.pid, w0.threads["worker_thread"]) == "1"
        assert allowed(w1.pid, w1.threads["acl_thread"]) == "1"
        assert allowed(w1.pid, w1.threads["release_thread"]) == "0"
        # the thread each worker started 1.5 s after the first bind
        for worker, want in ((w0, "1"), (w1, "0")):
            late = worker.late_tid()
            assert late is not None and allowed(worker.pid, late) == want
        roles = dict((r["pid"], r["role"]) for r in result["workers"] + result["frontend"])
        assert roles[tree.main] == "frontend" and roles[tree.engine] == "frontend"
        assert roles[w0.pid] == "worker" and roles[w1.pid] == "worker"
        assert sorted(r["device"] for r in result["workers"]) == [0, 1]
        # a second, one-pass run (the reconciler) finds nothing to change
        code, again, log = _run(
            binder, ["--plan", _plan(tmp_path), "--root-pid", str(tree.main), "--once", "--no-migrate"], _env(bindir)
        )
        assert code == 0 and again["changed"] is False, log


class _Health(http.server.BaseHTTPRequestHandler):
    ready_at = None

    def do_GET(self):  # noqa: N802 - http.server's name
        ok = _Health.ready_at is not None and time.time() >= _Health.ready_at
        self.send_response(200 if ok else 503)
        self.end_headers()

    def log_message(self, *args):  # quiet
        pass


def test_memory_moves_only_after_the_server_is_ready_and_only_private_pages(tmp_path):
    binder = build_binder(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "migratepages.log"
    tool = bindir / "migratepages"
    # records when it ran and its capability bounding set (CAP_SYS_NICE is bit 23)
    tool.write_text('#!/bin/sh\necho "$1 $(date +%%s.%%N) $(grep CapBnd /proc/self/status)" >> %s\n' % calls)
    tool.chmod(0o755)
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/health" % server.server_address[1]
    try:
        with stand_in_tree(tmp_path, workers=2) as tree:
            _Health.ready_at = time.time() + 2.0
            code, result, log = _run(
                binder,
                [
                    "--plan",
                    _plan(tmp_path),
                    "--root-pid",
                    str(tree.main),
                    "--interval",
                    "0.2",
                    "--ready-url",
                    url,
                    "--thread-wait",
                    "1",
                ],
                dict(_env(bindir), PATH=str(bindir) + ":/usr/bin:/bin"),
            )
            assert code == 0, log
            lines = calls.read_text().splitlines()
            assert sorted(int(line.split()[0]) for line in lines) == sorted(w.pid for w in tree.workers)
            for line in lines:
                ran_at = float(line.split()[1])
                assert ran_at >= _Health.ready_at - 0.05, (ran_at, _Health.ready_at)
                if os.geteuid() == 0:
                    bounding = int(line.split()[-1], 16)
                    assert not bounding & (1 << 23), "CAP_SYS_NICE kept: shared pages would move"
            assert all(w["migrated"] for w in result["workers"])
    finally:
        server.shutdown()


def test_a_hanging_tool_is_bounded(tmp_path):
    """npu-smi that never answers, with a child holding the pipe: bounded by --tool-timeout."""
    binder = build_binder(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "npu-smi"
    smi.write_text("#!/bin/sh\n/bin/sleep 300 &\n/bin/sleep 300\n")
    smi.chmod(0o755)
    start = time.time()
    code, result, log = _run(
        binder,
        ["--plan", _plan(tmp_path), "--timeout", "1", "--tool-timeout", "1", "--interval", "0.2"],
        _env(bindir),
        timeout=30,
    )
    assert time.time() - start < 10, log
    assert code == 2 and result["missing"] == [0, 1]


def test_binder_app_is_one_reproducible_file(tmp_path):
    first = build_binder(tmp_path / "a")
    second = build_binder(tmp_path / "b")
    with open(first, "rb") as one, open(second, "rb") as two:
        assert one.read() == two.read()
    with open(BINDER_APP, "rb") as handle:
        assert handle.read(2) == b"#!"
    out = subprocess.run(
        [sys.executable, first, "--help"], stdout=subprocess.PIPE, universal_newlines=True, check=False
    )
    assert out.returncode == 0 and "npuops-bind" in out.stdout


def test_the_module_imports_exactly_what_the_zipapp_holds():
    """vllm_launch_wrapper imports every module the zipapp needs (BINDER_MODULES: AnsiballZ
    ships the files a module imports) and builds the zipapp from their closure: a module the
    binder imports but the module does not would be missing on a real host; one the module
    lists but the binder never imports would be shipped for nothing. Every file of
    standalone/ is reached."""
    from ansible_collections.npuops.fleet.plugins.modules import vllm_launch_wrapper

    imported = set(m.__name__ for m in vllm_launch_wrapper.BINDER_MODULES)
    needed = set(binder_app.closure(read_module))
    assert imported == needed
    here = os.path.dirname(vllm_launch_wrapper.binder.__file__)
    package = vllm_launch_wrapper.binder.__name__.rsplit(".", 1)[0]
    assert (
        set("%s.%s" % (package, n[:-3]) for n in os.listdir(here) if n.endswith(".py") and n != "__init__.py") <= needed
    )
    # the module's own reader (pkgutil, as under AnsiballZ) gives the same bytes
    read = binder_app.reader(vllm_launch_wrapper.BINDER_MODULES)
    assert binder_app.closure(read) == binder_app.closure(read_module)
    with pytest.raises(WrapperError, match="missing on the host"):
        binder_app.closure(binder_app.reader(vllm_launch_wrapper.BINDER_MODULES[1:]))


def test_the_installed_binder_is_the_module_s_own_zipapp():
    from ansible_collections.npuops.fleet.plugins.modules import vllm_launch_wrapper

    data = vllm_launch_wrapper.binder_script()
    with open(BINDER_APP, "rb") as handle:
        ours = handle.read()
    assert data.split(b"\n", 1)[1] == ours.split(b"\n", 1)[1]
