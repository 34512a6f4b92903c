#!/usr/bin/env python
"""The collection on a real NVIDIA host, end to end, in one run (at most --deadline seconds,
default 480; no network, nothing installed, nothing outside --out written):

1. live facts, as ``npu_topology_facts`` with ``save_snapshot`` gathers them
   (model/topology.gather through a recording LiveHostIO), and the recorded snapshot;
2. the strict plan of the host (plan/dispatch.make_plan) for one instance on --gpu;
3. the wrapper, the plan JSON, the service and bind units and the binder zipapp of that
   instance, rendered as vllm_launch_wrapper renders them, into a sandbox root (--out/root);
4. a CUDA process titled like a vLLM worker (``VLLM::Worker_TP0``, torch holding memory on the
   GPU) under a main process, as an instance's tree;
5. the binder, ``--once --check --json``, against that tree with the real ``nvidia-smi``
   process table (the worker has no EngineCore above it: only the table can place it).

Everything lands in one folder: --out, else ``$OUT``, else ./real-gpu-check-<time>:
``snapshot/`` (the recorded host: commit it under tests/snapshots/ as a real host),
``facts.json``, ``plan.json``, ``root/`` (the rendered files), ``nvidia-smi/*.txt`` (the
tables the binder read), ``binder.json`` / ``binder.log`` and ``summary.json`` (each step's
outcome and time; ``status``: ok | failed | no-gpu).

Exit codes: 0 every step done and the worker placed on its GPU; 1 a step failed (summary
says which); 2 bad arguments; 3 no usable NVIDIA GPU here (no nvidia-smi, no driver answer,
no torch with CUDA): nothing was started.

    python3 scripts/real-gpu-check.py [--out DIR] [--python PY] [--gpu N] [--deadline S]
"""

from __future__ import print_function

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "gpucheck"
EXIT_OK, EXIT_FAILED, EXIT_ARGS, EXIT_NO_GPU = 0, 1, 2, 3
MAX_DEADLINE = 480.0
WORKER_TITLE = "VLLM::Worker_TP0"
# the CUDA worker: memory on its GPU, then a ready file, then it waits to be killed
WORKER_CODE = """
import os, sys, time
import torch
gpu = int(sys.argv[1])
torch.cuda.set_device(gpu)
block = torch.empty(256 << 20, dtype=torch.uint8, device="cuda:%d" % gpu)
torch.cuda.synchronize()
with open(sys.argv[2] + ".tmp", "w") as handle:
    handle.write(str(os.getpid()))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
time.sleep(float(sys.argv[3]))
"""
MAIN_CODE = """
import subprocess, sys, time
worker = subprocess.Popen([sys.argv[1], "-c", sys.argv[2]] + sys.argv[4:], executable=sys.argv[3])
worker.wait()
"""


class NoGpu(Exception):
    """No usable NVIDIA GPU: the run stops before it starts anything."""


class StepFailed(Exception):
    pass


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="real-gpu-check", description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument(
        "--out",
        help="the folder for every output (default $OUT, else ./real-gpu-check-<time>); must be empty or absent",
    )
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter whose torch has CUDA (default: this one)"
    )
    parser.add_argument("--gpu", type=int, default=0, help="the GPU index the worker uses")
    parser.add_argument(
        "--deadline",
        type=float,
        default=MAX_DEADLINE,
        help="seconds the whole run may take (at most %d)" % MAX_DEADLINE,
    )
    parser.add_argument("--tool-timeout", type=float, default=30.0, help="seconds one nvidia-smi call may take")
    args = parser.parse_args(argv)
    if not 10 <= args.deadline <= MAX_DEADLINE:
        parser.error("--deadline must be between 10 and %d seconds" % MAX_DEADLINE)
    if args.gpu < 0 or args.gpu > 1023:
        parser.error("--gpu must be a GPU index (0-1023)")
    if not 1 <= args.tool_timeout <= 120:
        parser.error("--tool-timeout must be between 1 and 120 seconds")
    if not os.path.isabs(args.python) or not os.access(args.python, os.X_OK):
        parser.error("--python %s is not an executable absolute path" % args.python)
    args.out = (
        args.out
        or os.environ.get("OUT")
        or os.path.join(os.getcwd(), "real-gpu-check-%s" % time.strftime("%Y%m%dT%H%M%S"))
    )
    if os.path.exists(args.out) and (not os.path.isdir(args.out) or os.listdir(args.out)):
        parser.error("--out %s exists and is not an empty folder" % args.out)
    return args


def collection_path():
    """A temporary ``ansible_collections/npuops/fleet`` link to this checkout, on sys.path."""
    top = tempfile.mkdtemp(prefix="npuops-gpucheck-")
    os.makedirs(os.path.join(top, "ansible_collections", "npuops"))
    os.symlink(REPO, os.path.join(top, "ansible_collections", "npuops", "fleet"))
    sys.path.insert(0, top)
    return top


def run(argv, timeout):
    """(rc, stdout, stderr); rc None when the program is not installed."""
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            universal_newlines=True,
            start_new_session=True,
        )
    except FileNotFoundError:
        return None, "", ""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and whatever it started
        proc.communicate()
        return -9, "", "%s: timed out after %.0fs" % (argv[0], timeout)
    return proc.returncode, out, err


def preflight(args):
    """The GPU, its driver and torch with CUDA, or NoGpu saying which is missing."""
    rc, out, err = run(["nvidia-smi", "-L"], args.tool_timeout)
    if rc is None:
        raise NoGpu("nvidia-smi is not on PATH: this is no NVIDIA host (or its driver utilities are not installed)")
    if rc != 0 or "GPU %d:" % args.gpu not in out:
        raise NoGpu(
            "nvidia-smi -L exited %s and lists no GPU %d: %s"
            % (rc, args.gpu, (err or out).strip()[:400] or "no output")
        )
    probe = "import torch; assert torch.cuda.is_available(), 'torch.cuda.is_available() is False'"
    rc, out, err = run([args.python, "-c", probe], 120)
    if rc != 0:
        tail = (err or out).strip().splitlines()
        raise NoGpu("%s has no torch with CUDA: %s" % (args.python, tail[-1] if tail else rc))
    return out


class Check(object):
    def __init__(self, args):
        self.args = args
        self.started = time.time()
        self.summary = {"status": "failed", "gpu": args.gpu, "steps": [], "out": args.out}
        self.tree = None

    def left(self):
        return self.args.deadline - (time.time() - self.started)

    def path(self, *parts):
        return os.path.join(self.args.out, *parts)

    def write(self, rel, text):
        path = self.path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            body = text if isinstance(text, str) else json.dumps(text, indent=2, sort_keys=True)
            handle.write(body if isinstance(text, str) else body + "\n")
        return path

    def step(self, name, func):
        if self.left() <= 0:
            raise StepFailed("%s: the deadline of %.0fs passed" % (name, self.args.deadline))
        begun = time.time()
        entry = {"step": name}
        self.summary["steps"].append(entry)
        try:
            entry["detail"] = func()
            entry["ok"] = True
        except Exception as err:  # pylint: disable=broad-except  # said in the summary
            entry["ok"] = False
            entry["error"] = "%s: %s" % (type(err).__name__, err)
            raise StepFailed("%s: %s" % (name, entry["error"]))
        finally:
            entry["seconds"] = round(time.time() - begun, 2)
        return entry["detail"]

    # -- the steps --------------------------------------------------------------------
    def facts(self):
        from ansible_collections.npuops.fleet.plugins.module_utils.apply import snapshot_save
        from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
        from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

        source = hostio.LiveHostIO()
        recorder = snapshot_save.recorder(source, self.path("snapshot"))
        self.topology = topology.gather(recorder, timeout=int(min(60, self.left())))
        result = snapshot_save.save(recorder, self.path("snapshot"), False, {})
        self.write("facts.json", self.topology)
        if self.topology.get("vendor") != "nvidia":
            raise StepFailed(
                "the facts say vendor %r, not nvidia (errors: %s)"
                % (self.topology.get("vendor"), self.topology.get("errors"))
            )
        return {
            "vendor": "nvidia",
            "gpus": len(self.topology.get("gpus") or {}),
            "snapshot": result.get("snapshot_saved"),
            "errors": self.topology.get("errors"),
        }

    def plan(self):
        from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch

        self.plan_doc = dispatch.make_plan(self.topology, "strict")
        self.write("plan.json", self.plan_doc)
        entry = (self.plan_doc.get("gpus") or {}).get(str(self.args.gpu))
        if not entry:
            raise StepFailed("the plan has no GPU %d: %s" % (self.args.gpu, self.plan_doc.get("reason")))
        return {"mode": self.plan_doc.get("mode"), "gpu": entry, "worker_start": self.plan_doc.get("worker_start")}

    def render(self):
        from ansible_collections.npuops.fleet.plugins.module_utils.model import instance_files
        from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app
        from ansible_collections.npuops.fleet.plugins.module_utils.render import launch, units

        view = launch.instance_view(self.plan_doc, NAME, [self.args.gpu])
        files = instance_files.file_paths(instance_files.DEFAULT_DEST, NAME)
        names = instance_files.unit_names(NAME)
        command = ["vllm", "serve", "/models/stand-in", "--port", "8000"]
        texts = {
            files["wrapper"]: launch.render_wrapper(view, command, {}, "host"),
            files["plan"]: launch.render_plan_json(self.plan_doc, view, "host"),
            "%s/%s" % (instance_files.DEFAULT_UNIT_DIR, names["service"]): units.service_unit(
                view, files["wrapper"], "host"
            ),
            "%s/%s" % (instance_files.DEFAULT_UNIT_DIR, names["bind"]): units.bind_unit(
                view, files["binder"], files["plan"]
            ),
        }
        written = []
        for host_path, text in sorted(texts.items()):
            written.append(self.write(os.path.join("root", host_path.lstrip("/")), text))
        sources = binder_app.closure(_read_module)
        self.binder = self.path("root", files["binder"].lstrip("/"))
        with open(self.binder, "wb") as handle:
            handle.write(binder_app.render(sources, sys.executable))
        os.chmod(self.binder, 0o755)
        self.plan_file = self.path("root", files["plan"].lstrip("/"))
        return {"files": [os.path.relpath(p, self.args.out) for p in written + [self.binder]]}

    def start_worker(self):
        ready = self.path("worker.pid")
        lifetime = str(max(30, int(self.left())))
        main = subprocess.Popen(
            [
                self.args.python,
                "-c",
                MAIN_CODE,
                WORKER_TITLE,
                WORKER_CODE,
                self.args.python,
                str(self.args.gpu),
                ready,
                lifetime,
            ],
            start_new_session=True,
        )
        self.tree = main
        deadline = time.time() + min(180, self.left())
        while not os.path.exists(ready):
            if main.poll() is not None:
                raise StepFailed("the CUDA worker exited with %s before it held GPU memory" % main.returncode)
            if time.time() > deadline:
                raise StepFailed("the CUDA worker held no GPU memory within 180s")
            time.sleep(0.2)
        with open(ready) as handle:
            worker = int(handle.read())
        self.main_pid, self.worker_pid = main.pid, worker
        return {"main": main.pid, "worker": worker, "title": _title(worker)}

    def tables(self):
        from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors

        row = vendors.VENDORS["nvidia"]
        out = {}
        deadline = time.time() + min(60, self.left())
        while True:
            for kind, argv in (("gpus", row.process_map), ("apps", row.process_query)):
                rc, text, err = run(list(argv), self.args.tool_timeout)
                self.write("nvidia-smi/%s.txt" % kind, "# %s (rc %s)\n%s%s" % (" ".join(argv), rc, text, err))
                out[kind] = text
            if str(self.worker_pid) in out["apps"] or time.time() > deadline:
                break
            time.sleep(1)
        return {"worker_listed": str(self.worker_pid) in out["apps"]}

    def bind(self):
        rc, out, err = run(
            [
                sys.executable,
                self.binder,
                "--plan",
                self.plan_file,
                "--root-pid",
                str(self.main_pid),
                "--once",
                "--check",
                "--json",
                "--no-migrate",
                "--tool-timeout",
                str(self.args.tool_timeout),
            ],
            min(120, max(5, self.left())),
        )
        self.write("binder.log", err)
        try:
            report = json.loads(out)
        except ValueError:
            raise StepFailed("the binder exited %s without a JSON report: %s" % (rc, err[-400:]))
        self.write("binder.json", report)
        placed = [(w["pid"], w["device"]) for w in report.get("workers") or []]
        if (self.worker_pid, self.args.gpu) not in placed:
            raise StepFailed(
                "the binder (exit %s) did not place worker %d on GPU %d: %s"
                % (rc, self.worker_pid, self.args.gpu, placed)
            )
        return {"exit": rc, "workers": placed, "worker_start": report.get("worker_start")}

    def stop(self):
        if self.tree is not None:
            try:
                os.killpg(self.tree.pid, signal.SIGKILL)
            except OSError:
                pass
            self.tree.wait()


def _read_module(name):
    rel = name[len("ansible_collections.npuops.fleet.plugins.") :].replace(".", os.sep) + ".py"
    with open(os.path.join(REPO, "plugins", rel), "rb") as handle:
        return handle.read()


def _title(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as handle:
        return handle.read().split(b"\0")[0].decode("utf-8", "replace")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.makedirs(args.out, exist_ok=True)
    check = Check(args)
    try:
        check.summary["torch"] = preflight(args).strip() or "cuda available"
    except NoGpu as err:
        check.summary.update(status="no-gpu", reason=str(err))
        check.write("summary.json", check.summary)
        sys.stderr.write(
            "real-gpu-check: no usable NVIDIA GPU here: %s; nothing was started "
            "(summary: %s)\n" % (err, check.path("summary.json"))
        )
        return EXIT_NO_GPU
    top = collection_path()
    code = EXIT_FAILED
    try:
        for name, func in (
            ("facts", check.facts),
            ("plan", check.plan),
            ("render", check.render),
            ("start_worker", check.start_worker),
            ("tables", check.tables),
            ("bind", check.bind),
        ):
            check.step(name, func)
        check.summary["status"] = "ok"
        code = EXIT_OK
    except StepFailed as err:
        check.summary["reason"] = str(err)
        sys.stderr.write("real-gpu-check: %s\n" % err)
    finally:
        check.stop()
        shutil.rmtree(top, ignore_errors=True)
        check.summary["seconds"] = round(time.time() - check.started, 2)
        check.write("summary.json", check.summary)
    sys.stdout.write(json.dumps(check.summary, indent=2, sort_keys=True) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
