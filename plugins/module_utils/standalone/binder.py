# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""npuops-bind: place a running vLLM instance's whole process tree on its planned CPUs.

Standalone (standard library, Python 3.7+): ``vllm_launch_wrapper`` installs this package as
one zipapp beside the wrapper and runs it from its own unit, bound to the service, so a slow
or failing bind never delays or stops the inference service. It imports nothing from the
collection and keeps its own copies of the few rules it needs (checked by a unit test).

One loop, under one deadline for every device: find the workers (npu-smi / nvidia-smi memory,
else the ``VLLM::Worker_TP<n>`` titles under the service's main process), pin each worker's
threads (``acl_thread`` / ``release_thread`` to theirs, the rest to the device's main CPUs), the
frontend processes (the main process, ``VLLM::EngineCore``, ``VLLM::APIServer``, tokenizers) to
the instance's frontend CPUs, re-pin threads and processes that appear later, and once the
server answers its health URL move each worker's private memory to its node. Only differing
affinities are written. Exit codes: 0 done, 1 bad input or a failed bind, 2 some devices
showed no worker in time.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time

from . import irqs, metrics, procs, smi, targets
from .rules import BindError, format_cpulist

LOG = logging.getLogger("npuops-bind")
EXIT_OK, EXIT_ERROR, EXIT_MISSING = 0, 1, 2


class Binder(object):
    """The state of one binder run: which process is what, what was changed, what is left."""

    def __init__(self, doc, args, root=None):
        self.doc = doc
        self.args = args
        self.root = root
        info = doc["npuops_instance"]
        self.vendor = info.get("vendor", "ascend")
        self.devices = [int(d) for d in info.get("devices") or []]
        self.device_targets = dict((d, targets.device_target(doc, d)) for d in self.devices)
        self.frontend = targets.frontend_target(doc) if args.frontend else None
        self.nodes = targets.all_nodes(doc)
        self.workers = {}      # pid -> device
        self.found_at = {}     # pid -> time its worker was found
        self.reports = {}      # pid -> report
        self.migrated = set()
        self.changed = False
        self.drift = {}        # (device label, role) -> [threads checked, threads off plan]
        self.unit_down = False  # --unit names a unit without a main process: bind nothing
        self.irq_rows = []

    # -- discovery ----------------------------------------------------------------------
    def tree(self):
        if self.root is not None:
            return procs.descendants(self.root)
        return sorted(self.workers)

    def discover(self, tree):
        """Match workers to devices: the ``VLLM::Worker_TP<n>`` titles of the tree first (rank n
        serves the n-th visible device; no tool call), then the tools' memory tables."""
        for pid in tree:
            rank = procs.worker_rank(procs.title(pid))
            if rank is not None and rank < len(self.devices) and pid not in self.workers \
                    and self.devices[rank] not in self.workers.values():
                self.add_worker(pid, self.devices[rank])
        missing = [d for d in self.devices if d not in self.workers.values()]
        if not missing:
            return
        in_tree = set(tree)
        homes = smi.home_devices(smi.device_rows(self.vendor, self.args.tool_timeout))
        for pid, device in sorted(homes.items()):
            if device in missing and pid not in self.workers and \
                    (self.root is None or pid in in_tree):
                self.add_worker(pid, device)

    def add_worker(self, pid, device):
        self.workers[pid] = device
        self.found_at[pid] = time.time()
        self.report(pid, device)

    def report(self, pid, device, label=None):
        if pid not in self.reports:
            self.reports[pid] = {"device": device, "pid": pid, "role": label or "worker",
                                 "title": procs.title(pid), "threads": 0, "changed": [],
                                 "unchanged": 0, "acl": [], "release": [], "migrated": False}
        return self.reports[pid]

    def target_of(self, pid, tree_parent):
        """The target of a process in the tree: its own (worker), its nearest worker ancestor's
        main CPUs (a worker's helper process), else the frontend."""
        if pid in self.workers:
            return self.device_targets[self.workers[pid]]
        ancestor = tree_parent.get(pid)
        while ancestor is not None:
            if ancestor in self.workers:
                base = self.device_targets[self.workers[ancestor]]
                return dict(base, acl=[], release=[])
            ancestor = tree_parent.get(ancestor)
        return self.frontend

    # -- binding ------------------------------------------------------------------------
    def bind_process(self, pid, target, label):
        tids = procs.threads(pid)
        if not tids:
            if pid in self.workers and self.args.pid:
                raise BindError("%s: process %d not found (does this run in the host PID "
                                "namespace?)" % (target["label"], pid))
            return
        report = self.report(pid, target["device"], label)
        report["threads"] = len(tids)
        report["unchanged"] = 0
        for tid in tids:
            cpus, role = targets.desired_cpus(procs.thread_comm(pid, tid), target)
            if role != "main" and tid not in report[role]:
                report[role].append(tid)
            counts = self.drift.setdefault((target["label"], role), [0, 0])
            try:
                current = sorted(os.sched_getaffinity(tid))
                counts[0] += 1
                if current == cpus:
                    report["unchanged"] += 1
                    continue
                counts[1] += 1
                if not self.args.check:
                    os.sched_setaffinity(tid, cpus)
            except ProcessLookupError:
                continue  # the thread ended meanwhile
            except OSError as err:
                raise BindError("Failed to bind %d to CPU %s: %s" % (tid, format_cpulist(cpus), err))
            self.changed = True
            report["changed"].append({"tid": tid, "role": role, "before": format_cpulist(current),
                                      "after": format_cpulist(cpus)})
            LOG.info("[bind] %s pid=%d tid=%d (%s) %s -> %s", target["label"], pid, tid, role,
                     format_cpulist(current), format_cpulist(cpus))

    def bind_all(self, tree):
        parents = dict((pid, procs.parent_pid(pid)) for pid in tree)
        for pid in tree if self.root is not None else sorted(self.workers):
            target = self.target_of(pid, parents)
            if target is not None:
                label = "worker" if pid in self.workers else (
                    "frontend" if target is self.frontend else "worker-child")
                self.bind_process(pid, target, label)

    def threads_complete(self, pid):
        """True once a worker shows the threads its target names, or after --thread-wait."""
        target = self.device_targets[self.workers[pid]]
        report = self.reports[pid]
        want = [r for r in ("acl", "release") if target[r]]
        if all(report[r] for r in want):
            return True
        return time.time() - self.found_at[pid] >= self.args.thread_wait

    # -- memory -------------------------------------------------------------------------
    def migrate(self, pid):
        target = self.device_targets[self.workers[pid]]
        self.migrated.add(pid)
        if target["node"] is None:
            LOG.warning("[migrate] NUMA node not found. npu=%s", target["label"])
            return
        tool = shutil.which("migratepages")
        if tool is None:
            LOG.warning("The 'migratepages' command is not available, skipping memory binding. "
                        "(install numactl)")
            return
        LOG.info("[migrate] %s:%s -> NUMA [%s]%s", target["label"][:3], target["device"],
                 target["node"], "" if self.args.migrate_shared else " (private pages)")
        if self.args.check:
            self.reports[pid]["migrated"] = True
            return
        ident = procs.owner(pid) or (None, None)
        preexec = None if self.args.migrate_shared else (
            lambda: procs.drop_sys_nice(ident[0], ident[1]))
        try:
            rc = subprocess.call([tool, str(pid), ",".join(str(n) for n in self.nodes),
                                  str(target["node"])], stdin=subprocess.DEVNULL,
                                 preexec_fn=preexec, timeout=self.args.migrate_timeout)
        except (OSError, subprocess.SubprocessError) as err:
            LOG.warning("[migrate] migratepages %d failed: %s", pid, err)
            return
        if rc != 0:
            LOG.warning("[migrate] migratepages %d exited with %s", pid, rc)
        self.reports[pid]["migrated"] = rc == 0

    def reconcile_irqs(self):
        if self.args.irq_state:
            devices = None if self.args.all_irqs else self.devices
            self.irq_rows = irqs.reconcile(irqs.load_state(self.args.irq_state, devices),
                                           self.args.check)
            for row in self.irq_rows:
                if row["drift"] or row["error"]:
                    LOG.warning("[irq] %s", row["error"] or "IRQ %d (%s %s) moved to %s; pinned "
                                "again to %s" % (row["irq"], row["device"], row["role"],
                                                 row["before"], row["after"]))
                    self.changed = self.changed or (row["drift"] and not row["error"])

    def samples(self, missing, failed):
        """The run as metrics samples (see metrics.HELP)."""
        name = self.doc["npuops_instance"].get("name") or ""
        out = []
        for (label, role), (checked, off) in sorted(self.drift.items()):
            labels = [("instance", name), ("device", label), ("role", role)]
            out.append(("npuops_binding_drift_threads", labels, off))
            out.append(("npuops_binding_threads", labels, checked))
        for row in self.irq_rows:
            # the device label the thread metrics use (NPU0), so the two join in PromQL
            label = (self.device_targets.get(row["device"]) or {}).get("label", row["device"])
            out.append(("npuops_irq_drift", [("instance", name), ("device", label),
                                             ("irq", row["irq"])], int(row["drift"])))
        for pid, device in sorted(self.workers.items()):
            nodes = procs.memory_by_node(pid)
            if nodes is not None:
                out.append(("npuops_worker_remote_memory_ratio",
                            [("instance", name), ("device", self.device_targets[device]["label"])],
                            procs.remote_ratio(nodes, self.device_targets[device]["node"])))
        out.append(("npuops_instance_workers_missing", [("instance", name)], len(missing)))
        out.append(("npuops_binder_last_run_success", [("instance", name)], int(not failed)))
        out.append(("npuops_binder_last_run_timestamp_seconds", [("instance", name)],
                    float(int(time.time()))))
        return out

    def server_ready(self):
        return not self.args.ready_url or procs.ready(self.args.ready_url)

    # -- the loop -----------------------------------------------------------------------
    def run(self):
        start = time.time()
        deadline = start + self.args.timeout
        ready_deadline = start + self.args.ready_timeout
        settled_at = None
        missing = []
        while True:
            if self.unit_down:
                self.reconcile_irqs()
                return list(self.devices)
            if self.root is not None and not procs.alive(self.root):
                LOG.info("the service's main process %d is gone; stopping", self.root)
                break
            tree = self.tree()
            if not self.args.pid:
                self.discover(tree)
            self.bind_all(tree)
            self.reconcile_irqs()
            now = time.time()
            missing = [d for d in self.devices if d not in self.workers.values()]
            found_all = not missing or now >= deadline
            complete = found_all and all(self.threads_complete(p) for p in self.workers)
            pending = [p for p in sorted(self.workers) if p not in self.migrated]
            if complete and pending and self.args.migrate:
                if self.server_ready():
                    for pid in pending:
                        # memory moves with a worker's first binding only (re-runs are cheap)
                        if self.reports[pid]["changed"]:
                            self.migrate(pid)
                        else:
                            self.migrated.add(pid)
                elif now >= ready_deadline:
                    LOG.warning("the server did not answer %s within %.0fs; memory not moved",
                                self.args.ready_url, self.args.ready_timeout)
                    self.migrated.update(pending)
            settled = complete and (not self.args.migrate or
                                    all(p in self.migrated for p in self.workers))
            if settled and settled_at is None:
                settled_at = now
            if self.args.once or (settled_at is not None and now - settled_at >= self.args.follow):
                break
            time.sleep(self.args.interval)
        return missing


def unit_main_pid(unit, timeout):
    """MainPID of a systemd unit, or None when it does not run."""
    _rc, out = smi.run(["systemctl", "show", "-p", "MainPID", "--value", unit], timeout)
    out = (out or "").strip()
    return int(out) if out.isdigit() and int(out) > 0 else None


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="npuops-bind", description=__doc__.split("\n", 1)[0])
    add = parser.add_argument
    add("--plan", required=True, help="plan JSON written by vllm_launch_wrapper")
    add("--instance", help="refuse a plan written for another instance")
    add("--timeout", type=float, default=900.0, help="seconds for every device to show its worker")
    add("--interval", type=float, default=2.0, help="polling interval (s)")
    add("--tool-timeout", type=float, default=30.0, help="seconds one npu-smi/nvidia-smi call may take")
    add("--thread-wait", type=float, default=60.0,
        help="seconds a worker may take to start its acl/release threads")
    add("--follow", type=float, default=0.0,
        help="keep re-binding new threads and processes this long after all is bound (s)")
    add("--once", action="store_true", help="one pass: bind what runs now, wait for nothing")
    add("--root-pid", type=int, default=None,
        help="the service's main process (default: $MAINPID when set, else --unit's)")
    add("--unit", help="systemd unit of the instance: its MainPID is the root when none is given")
    add("--no-frontend", dest="frontend", action="store_false",
        help="leave the frontend processes alone")
    add("--ready-url", help="http URL answering 200 once the server is ready (memory moves then)")
    add("--ready-timeout", type=float, default=1800.0, help="seconds to wait for --ready-url")
    add("--no-migrate", dest="migrate", action="store_false", help="never move memory")
    add("--migrate-shared", action="store_true",
        help="also move pages shared with other processes (migratepages with CAP_SYS_NICE)")
    add("--migrate-timeout", type=float, default=600.0, help="seconds one migratepages may take")
    add("--pid", type=int, action="append", default=[],
        help="bind this known worker pid (with --npu), skip discovery")
    add("--npu", type=int, action="append", default=[], help="the device of the matching --pid")
    add("--irq-state", help="IRQ state file of npu_irq_affinity: re-pin the instance's IRQs")
    add("--all-irqs", action="store_true", help="with --irq-state: every IRQ, not only ours")
    add("--proc-irq", default=irqs.PROC_IRQ, help="where the IRQ directories are (a sandbox)")
    add("--metrics-dir", help="write npuops_<instance>.prom here (node_exporter textfiles)")
    add("--check", action="store_true", help="report, change nothing")
    add("--json", action="store_true", help="write a JSON report to stdout")
    args = parser.parse_args(argv)
    if len(args.pid) != len(args.npu):
        parser.error("--pid and --npu must be given in pairs")
    if args.ready_url and not args.ready_url.startswith(("http://", "https://")):
        parser.error("--ready-url must be an http(s) URL")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    irqs.PROC_IRQ = args.proc_irq
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(levelname)s %(asctime)s [npuops-bind] %(message)s",
                        datefmt="%m-%d %H:%M:%S")
    result = {"changed": False, "workers": [], "frontend": [], "irqs": [], "missing": [],
              "failed": None}
    code = EXIT_OK
    binder = None
    try:
        doc = targets.load_plan(args.plan, args.instance)
        root = args.root_pid
        if root is None and os.environ.get("MAINPID", "").isdigit():
            root = int(os.environ["MAINPID"])
        unit_down = False
        if root is None and args.unit:
            root = unit_main_pid(args.unit, args.tool_timeout)
            result["unit_running"] = root is not None
            unit_down = root is None
            if unit_down:
                LOG.warning("unit %s is not running: no process to bind", args.unit)
        elif root is not None and not os.path.isdir("/proc/%d" % root):
            # the main process given is gone: the instance is down, not its workers missing
            unit_down, result["unit_running"] = True, False
            LOG.warning("process %d does not run: no process to bind", root)
        binder = Binder(doc, args, None if args.pid else root)
        binder.unit_down = unit_down
        if args.npu:
            binder.devices = list(args.npu)
        for line in targets.plan_lines([binder.device_targets[d] for d in binder.devices
                                        if d in binder.device_targets] +
                                       ([binder.frontend] if binder.frontend else [])):
            LOG.info("%s", line)
        for pid, npu in zip(args.pid, args.npu):
            if npu not in binder.device_targets:
                binder.device_targets[npu] = targets.device_target(doc, npu)
            binder.add_worker(pid, npu)
        result["missing"] = binder.run()
        for device in result["missing"]:
            LOG.warning("%s shows no worker process after %.0fs; not bound",
                        binder.device_targets[device]["label"], args.timeout)
        if result["missing"]:
            code = EXIT_MISSING
        for pid, device in binder.workers.items():
            nodes = procs.memory_by_node(pid)
            if nodes is not None and pid in binder.reports:
                binder.reports[pid]["memory_bytes"] = dict((str(n), b) for n, b in sorted(nodes.items()))
                binder.reports[pid]["remote_memory_ratio"] = procs.remote_ratio(
                    nodes, binder.device_targets[device]["node"])
        reports = [binder.reports[p] for p in sorted(binder.reports)]
        result["workers"] = [r for r in reports if r["role"] == "worker"]
        result["frontend"] = [r for r in reports if r["role"] != "worker"]
        result["irqs"] = binder.irq_rows
        result["changed"] = binder.changed
        LOG.info("binding %s", "changed" if binder.changed else "unchanged")
    except BindError as err:
        LOG.error("%s", err)
        result["failed"] = str(err)
        code = EXIT_ERROR
    if args.metrics_dir and binder is not None:
        try:
            metrics.write(args.metrics_dir, binder.doc["npuops_instance"].get("name") or "",
                          binder.samples(result["missing"], result["failed"]))
        except (OSError, ValueError) as err:
            LOG.error("metrics: cannot write to %s: %s", args.metrics_dir, err)
            code = code or EXIT_ERROR
    if args.json:
        sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    return code
