# -*- coding: utf-8 -*-
"""The binder as the module installs it (a zipapp built from plugins/module_utils/standalone
and the module_utils files it imports: ``build_binder``, ``read_module``),
and a stand-in vLLM process tree to bind: a main process (the API server) that starts
``VLLM::EngineCore``, which starts ``VLLM::Worker_TP<n>`` processes with ``acl_thread``,
``release_thread`` and ``worker_thread`` threads (named through prctl, as torch_npu names them)
and, optionally, one more thread some time later."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app
from npuops_testing import REPO

# The plan JSON of a two-NPU instance on CPUs 0 and 1 of this machine: frontend on CPU 0; NPU0
# main 1 / acl 0 / release 1; NPU1 main 0 / acl 1 / release 0.
PLAN = {
    "mode": "topo_affinity",
    "device_type": "A2",
    "numa_nodes": {"0": "0-1"},
    "npus": {
        "0": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "1", "acl": "0", "release": "1"},
        "1": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "0", "acl": "1", "release": "0"},
    },
    "npuops_instance": {
        "schema": 1,
        "name": "svc",
        "vendor": "ascend",
        "devices": [0, 1],
        "main": "0-1",
        "pool": "0-1",
        "frontend": "0",
        "binding": "host",
    },
}


def gpu_plan(vendor):
    """The plan JSON of a two-GPU instance of ``vendor``: GPU0 on CPU 0, GPU1 on CPU 1."""
    return {
        "mode": "gpu_numa",
        "vendor": vendor,
        "numa_nodes": {"0": "0-1"},
        "gpus": {"0": {"pool": "0", "numa_node": 0}, "1": {"pool": "1", "numa_node": 0}},
        "npuops_instance": {
            "schema": 1,
            "name": "svc",
            "vendor": vendor,
            "devices": [0, 1],
            "main": "0-1",
            "pool": "0-1",
            "frontend": "0-1",
            "binding": "host",
        },
    }


def read_module(name):
    """Source bytes of module_utils module ``name`` (dotted), from this checkout."""
    rel = name[len("ansible_collections.npuops.fleet.plugins.") :].replace(".", os.sep) + ".py"
    with open(os.path.join(REPO, "plugins", rel), "rb") as handle:
        return handle.read()


def build_binder(directory):
    """Write the zipapp exactly as vllm_launch_wrapper installs it (binder_app.closure of
    standalone/binder.py, rendered); returns its path."""
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "npuops-bind")
    with open(path, "wb") as handle:
        handle.write(binder_app.render(binder_app.closure(read_module), sys.executable))
    os.chmod(path, 0o755)
    return path


BINDER_APP = build_binder(tempfile.mkdtemp(prefix="npuops-binder-"))


DEST = "/usr/local/lib/npuops"


def install_instance(tmp_path, name="svc", plan=None):
    """A sandbox root holding what vllm_launch_wrapper installs for one instance under ``DEST``
    (plan JSON and binder); returns ``(root, dest)`` as pathlib paths."""
    root = tmp_path / "root"
    dest = root / DEST.lstrip("/")
    dest.mkdir(parents=True)
    (dest / ("%s.plan.json" % name)).write_text(json.dumps(plan or PLAN))
    os.rename(build_binder(tmp_path / "b"), str(dest / ("%s-bind" % name)))
    return root, dest


def allowed(pid, tid):
    """Cpus_allowed_list of one thread, read back from /proc."""
    with open("/proc/%d/task/%d/status" % (pid, tid)) as handle:
        for line in handle:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    raise AssertionError("no Cpus_allowed_list")


# the stand-in program (scripts/vllm_stand_in.py, which the demo runs too)
with open(os.path.join(REPO, "scripts", "vllm_stand_in.py")) as _handle:
    STAND_IN = _handle.read()


class _Worker(object):
    def __init__(self, prefix, info):
        self.prefix = prefix
        self.pid = info["pid"]
        self.threads = info["threads"]
        self.start_cpus = info.get("start_cpus")

    def late_tid(self, wait=10.0):
        deadline = time.time() + wait
        while time.time() < deadline:
            if os.path.exists(self.prefix + ".late"):
                with open(self.prefix + ".late") as handle:
                    return int(handle.read())
            time.sleep(0.05)
        return None


class _Tree(object):
    def __init__(self, main, engine, workers, engines=(), decoys=()):
        self.main, self.engine, self.workers = main, engine, workers
        self.engines, self.decoys = list(engines), list(decoys)


def _wait_file(path, proc, deadline):
    while not os.path.exists(path):
        assert time.time() < deadline, "the stand-in vLLM did not start"
        assert proc.poll() is None, "the stand-in vLLM died"
        time.sleep(0.05)


def _read_int(path):
    with open(path) as handle:
        return int(handle.read())


@contextlib.contextmanager
def stand_in_tree(tmp_path, workers=2, late_thread_after=0.0, dp=1, decoys=0, env=None, wait=90, on_engine=None):
    """Start the stand-in tree in its own session; yields a _Tree (``workers`` workers per
    engine, ``dp`` engines; ``env``: the stand-in's STAND_IN_* / VLLM_PROCESS_NAME_PREFIX
    settings); kills the session after. ``on_engine(main pid)`` is called once the engines
    exist, before their workers are waited for."""
    script = os.path.join(str(tmp_path), "vllm_stand_in.py")
    with open(script, "w") as handle:
        handle.write(STAND_IN)
    prefix = os.path.join(str(tmp_path), "tree")
    environ = dict(os.environ, STAND_IN_PYTHON=sys.executable, STAND_IN_DP=str(dp), STAND_IN_DECOYS=str(decoys))
    environ.update(env or {})
    proc = subprocess.Popen(
        [sys.executable, script, "main", prefix, str(workers), str(late_thread_after)],
        start_new_session=True,
        env=environ,
    )
    try:
        deadline = time.time() + wait
        names = [".engine"] if dp == 1 else [".engine%d" % r for r in range(dp)]
        engines = []
        for name in names:
            _wait_file(prefix + name, proc, deadline)
            engines.append(_read_int(prefix + name))
        if on_engine is not None:
            on_engine(proc.pid)
        found = []
        count = 1 if environ.get("STAND_IN_UNIPROC") == "1" else workers * dp
        for rank in range(count):
            path = "%s.%d" % (prefix, rank)
            _wait_file(path, proc, deadline)
            with open(path) as handle:
                found.append(_Worker(path, json.load(handle)))
        found_decoys = []
        for index in range(decoys):
            path = "%s.decoy%d" % (prefix, index)
            _wait_file(path, proc, deadline)
            with open(path) as handle:
                found_decoys.append(json.load(handle)["pid"])
        yield _Tree(proc.pid, engines[0], found, engines, found_decoys)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()


def wait_final(tree, wait=30.0):
    """Wait until every worker of ``tree`` carries its final title."""
    deadline = time.time() + wait
    for worker in tree.workers:
        while not os.path.exists(worker.prefix + ".final"):
            assert time.time() < deadline, "a stand-in worker never took its final title"
            time.sleep(0.05)


@contextlib.contextmanager
def binder_at_engine_start(tmp_path, run, workers=2, env=None):
    """The stand-in tree in ``tmp_path`` with ``run(main pid)`` (a binder run) started in a
    thread the moment its EngineCore exists, before the workers do; yields ``(tree, what run
    returned)`` once that run ended."""
    results, threads = {}, []

    def start(main_pid):
        thread = threading.Thread(target=lambda: results.update(bind=run(main_pid)))
        thread.start()
        threads.append(thread)

    with stand_in_tree(tmp_path, workers=workers, env=env, on_engine=start) as tree:
        threads[0].join(60)
        assert "bind" in results, "the binder run did not end"
        yield tree, results["bind"]


@contextlib.contextmanager
def tcp_server(answer):
    """A real server on 127.0.0.1: each connection is given to ``answer(conn, stop)`` in its
    own thread (``stop``: a threading.Event set when the server closes; the connection is
    closed after); yields the base URL ``http://127.0.0.1:<port>``."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.2)
    stop = threading.Event()

    def handle(conn):
        try:
            answer(conn, stop)
        except OSError:
            pass
        finally:
            conn.close()

    def serve():
        while not stop.is_set():
            try:
                conn, _addr = sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield "http://127.0.0.1:%d" % sock.getsockname()[1]
    finally:
        stop.set()
        sock.close()
