#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""make demo, drift loop: bind a stand-in vLLM on this machine, perturb it, let the audit show
the drift, run the reconciler, show that the drift is gone.

    demo_drift.py start  --demo DIR   install, start, bind, perturb; writes DIR/standin/audit-vars.json
    demo_drift.py finish --demo DIR   reconcile, re-audit the stand-in, print before/after, stop
    demo_drift.py stop   --demo DIR   stop the stand-in tree (idempotent; demo.sh's exit trap)

``start`` installs the instance with the collection's roles (``scripts/demo_standin.yml`` on
host ``standin`` of ``inventories/demo/standin.yml``, sandbox root ``DIR/standin/root``),
starts ``scripts/vllm_stand_in.py`` (API server, EngineCore, two workers with their named
threads) in its own session, and runs the binder as the bind unit would. Then, as an operator's
hand-run ``taskset`` and a returning irqbalance would, it moves NPU0's ``acl_thread`` to the
other CPU and rewrites one of NPU0's IRQs in the sandbox. ``finish`` runs the reconcile unit's
command (the timer's job), which pins both back and writes its metrics
(``DIR/standin/root/var/lib/prometheus/node-exporter/npuops_standin.prom``), then re-audits the
stand-in into ``DIR/report-after-reconcile``.

The unit files are the ones the role installed: their ``ExecStart`` is run with the sandbox
prefix on its paths and ``--root-pid`` in place of ``--unit`` (no systemd runs the sandbox).
Needs CPUs 0 and 1 (the stand-in's plan, ``inventories/demo/host_vars/standin.yml``); a
machine without them skips the loop.
"""

from __future__ import print_function

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INVENTORY = os.path.join(REPO, "inventories", "demo", "standin.yml")
PLAYBOOK = os.path.join(REPO, "scripts", "demo_standin.yml")
STAND_IN = os.path.join(REPO, "scripts", "vllm_stand_in.py")
NAME = "standin"
DEST = "/usr/local/lib/npuops"
UNIT_DIR = "/etc/systemd/system"
IRQ_STATE = "/var/lib/npuops/irq-state.json"
METRICS = "/var/lib/prometheus/node-exporter/npuops_%s.prom" % NAME
CPUS = {0, 1}


class Loop(object):
    def __init__(self, demo):
        self.demo = demo
        self.home = os.path.join(demo, NAME)
        self.root = os.path.join(self.home, "root")
        self.state_file = os.path.join(self.home, "state.json")

    def host(self, path):
        return self.root + path

    def state(self):
        with open(self.state_file) as handle:
            return json.load(handle)

    def unit_argv(self, unit, pid):
        """The unit's ExecStart, run against the sandbox: host paths prefixed, ``--root-pid``
        in place of ``--unit``, the sandbox's IRQ directories."""
        with open(self.host("%s/%s" % (UNIT_DIR, unit))) as handle:
            line = [x for x in handle.read().splitlines() if x.startswith("ExecStart=")][0]
        words = [w.replace("%%", "%") for w in shlex.split(line[len("ExecStart=") :])]
        argv = [self.host(words[0])]
        index = 1
        while index < len(words):
            word = words[index]
            if word == "--unit":
                argv += ["--root-pid", str(pid)]
                index += 2
                continue
            argv.append(word)
            if word in ("--plan", "--irq-state", "--metrics-dir"):
                argv.append(self.host(words[index + 1]))
                index += 1
            index += 1
        return argv + ["--proc-irq", self.host("/proc/irq")]


def run(argv, timeout=600):
    """``argv``'s exit status and output; past ``timeout`` seconds its whole process group is
    killed and the demo stops with a message."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, dummy = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise SystemExit("demo drift: %s took more than %d s (killed)" % (argv[0], timeout))
    return subprocess.CompletedProcess(argv, proc.returncode, out)


def allowed(pid, tid):
    with open("/proc/%d/task/%d/status" % (pid, tid)) as handle:
        for line in handle:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return "?"


def start_tree(loop):
    prefix = os.path.join(loop.home, "tree")
    for name in os.listdir(loop.home):
        if name.startswith("tree."):
            os.unlink(os.path.join(loop.home, name))
    env = dict(os.environ, STAND_IN_PYTHON=sys.executable, STAND_IN_LIFETIME="900")
    proc = subprocess.Popen(
        [sys.executable, STAND_IN, "main", prefix, "2", "0"],
        start_new_session=True,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 30
    workers = []
    for rank in range(2):
        path = "%s.%d" % (prefix, rank)
        while not os.path.exists(path):
            if time.time() > deadline or proc.poll() is not None:
                os.killpg(proc.pid, signal.SIGKILL)
                raise SystemExit("demo drift: the stand-in vLLM did not start")
            time.sleep(0.05)
        with open(path) as handle:
            workers.append(json.load(handle))
    return proc.pid, workers


def irq_of_npu0(loop):
    """The first IRQ npu_irq_affinity pinned for NPU0 (its IRQ state file)."""
    with open(loop.host(IRQ_STATE)) as handle:
        state = json.load(handle)
    for entry in state.get("irqs") or []:
        if entry.get("device") == 0:
            return entry["irq"]
    raise SystemExit("demo drift: no IRQ of NPU0 in %s" % loop.host(IRQ_STATE))


def cmd_start(loop):
    if not CPUS <= set(os.sched_getaffinity(0)):
        print("drift loop skipped: the stand-in's plan needs CPUs 0 and 1")
        return 0
    os.makedirs(loop.home, exist_ok=True)
    cmd_stop(loop, quiet=True)
    sandbox = run(
        [
            sys.executable,
            os.path.join(REPO, "scripts", "demo_sandbox.py"),
            "--inventory",
            INVENTORY,
            "--demo",
            loop.demo,
        ]
    )
    if sandbox.returncode:
        print(sandbox.stdout)
        return sandbox.returncode
    install = run(
        [
            os.path.join(os.environ.get("VENV", os.path.join(REPO, ".venv")), "bin", "ansible-playbook"),
            "-i",
            INVENTORY,
            PLAYBOOK,
        ]
    )
    with open(os.path.join(loop.demo, "standin.log"), "w") as handle:
        handle.write(install.stdout)
    recap = install.stdout[install.stdout.find("PLAY RECAP") :].strip()
    print(recap)
    if install.returncode:
        print("demo drift: installing the stand-in failed; log: %s/standin.log" % loop.demo)
        return install.returncode
    pid, workers = start_tree(loop)
    with open(loop.state_file, "w") as handle:
        json.dump({"pid": pid, "workers": workers}, handle)
    with open(os.path.join(loop.home, "audit-vars.json"), "w") as handle:
        json.dump({"npuops_audit_root_pids": {NAME: pid}}, handle)
    # the bind unit's command, as one pass: no health URL answers here, so no memory move
    argv = loop.unit_argv("vllm-%s-bind.service" % NAME, pid)
    if "--ready-url" in argv:
        index = argv.index("--ready-url")
        del argv[index : index + 2]
    bind = run(argv + ["--once", "--no-migrate"], timeout=120)
    acl = workers[0]["threads"]["acl_thread"]
    print(
        "stand-in vLLM: API server pid %d, workers %s; bound by its binder (rc %d): NPU0 "
        "acl_thread %d on CPUs %s"
        % (pid, ", ".join(str(w["pid"]) for w in workers), bind.returncode, acl, allowed(workers[0]["pid"], acl))
    )
    if bind.returncode:
        print(bind.stdout)
        return bind.returncode
    # the perturbation: a hand-run taskset on one thread, and an IRQ moved behind our back
    planned = allowed(workers[0]["pid"], acl)
    other = sorted(CPUS - set(int(c) for c in planned.split(",") if c.isdigit()))[:1] or [1]
    os.sched_setaffinity(acl, set(other))
    irq = irq_of_npu0(loop)
    path = loop.host("/proc/irq/%d/smp_affinity_list" % irq)
    with open(path) as handle:
        before = handle.read().strip()
    moved = "1" if before != "1" else "0"
    with open(path, "w") as handle:
        handle.write(moved + "\n")
    print(
        "perturbed: NPU0 acl_thread %d moved to CPU %d (planned %s); IRQ %d moved to CPU %s "
        "(planned %s)" % (acl, other[0], planned, irq, moved, before)
    )
    return 0


def drift_rows(report_json, host=NAME):
    try:
        with open(report_json) as handle:
            report = json.load(handle)
    except (IOError, ValueError):
        return None
    for entry in report.get("hosts", []):
        if entry.get("name") == host:
            return (entry.get("binding") or {}).get("drift") or []
    return None


def cmd_finish(loop):
    if not os.path.exists(loop.state_file):
        return 0
    state = loop.state()
    before = drift_rows(os.path.join(loop.demo, "report", "fleet-report.json"))
    print(
        "audit (report/): %s"
        % (
            "; ".join("%s %s: %s" % (r["kind"], r["device"], r["evidence"]) for r in before)
            if before
            else "no drift row for the stand-in (%r)" % (before,)
        )
    )
    reconcile = run(loop.unit_argv("vllm-%s-reconcile.service" % NAME, state["pid"]), timeout=120)
    print("reconciler (vllm-%s-reconcile.service's command): rc %d" % (NAME, reconcile.returncode))
    metrics = loop.host(METRICS)
    if os.path.exists(metrics):
        with open(metrics) as handle:
            lines = [
                x
                for x in handle.read().splitlines()
                if x.startswith(("npuops_binding_drift_threads", "npuops_irq_drift", "npuops_binder_last_run_success"))
            ]
        print("metrics (%s):\n  %s" % (os.path.relpath(metrics, loop.demo), "\n  ".join(lines)))
    dest = os.path.join(loop.demo, "report-after-reconcile")
    audit = run(
        [
            os.path.join(os.environ.get("VENV", os.path.join(REPO, ".venv")), "bin", "ansible-playbook"),
            "-i",
            INVENTORY,
            os.path.join(REPO, "playbooks", "audit.yml"),
            "-e",
            "npuops_audit_dest=%s" % dest,
            "-e",
            "@" + os.path.join(loop.home, "audit-vars.json"),
            "-e",
            "npuops_facts_force_refresh=true",
        ]
    )
    with open(os.path.join(loop.demo, "audit-after-reconcile.log"), "w") as handle:
        handle.write(audit.stdout)
    after = drift_rows(os.path.join(dest, "fleet-report.json"))
    print("audit after the reconciler (report-after-reconcile/): %s" % ("no drift" if after == [] else after))
    cmd_stop(loop, quiet=True)
    return 0 if (before and after == [] and reconcile.returncode == 0 and audit.returncode == 0) else 1


def cmd_stop(loop, quiet=False):
    if not os.path.exists(loop.state_file):
        return 0
    pid = loop.state()["pid"]
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    os.unlink(loop.state_file)
    if not quiet:
        print("stand-in vLLM stopped")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("command", choices=("start", "finish", "stop"))
    parser.add_argument("--demo", required=True, help="the demo directory (NPUOPS_DEMO_DIR)")
    args = parser.parse_args(argv)
    loop = Loop(os.path.abspath(args.demo))
    return {"start": cmd_start, "finish": cmd_finish, "stop": cmd_stop}[args.command](loop)


if __name__ == "__main__":
    sys.exit(main())
