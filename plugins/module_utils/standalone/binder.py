# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""npuops-bind: place a running vLLM instance's whole process tree on its planned CPUs.

Standalone (standard library, Python 3.7+): ``vllm_launch_wrapper`` installs this package as
one zipapp beside the wrapper and runs it from its own unit, bound to the service, so a slow
or failing bind never delays or stops the inference service. The rules it shares with the
collection (cpulists, bus ids, the npu-smi parsers, the command runner, the atomic write, the
vendor table) it imports from the lower layers of module_utils; the zipapp carries those files
at their own package path (``render/binder_app``).

One loop, under one deadline for every device: find the workers (npu-smi / nvidia-smi memory,
else the ``VLLM::Worker_TP<n>`` titles under the service's main process), pin each worker's
threads (``acl_thread`` / ``release_thread`` to theirs, the rest to the device's main CPUs), the
frontend processes (the main process, ``VLLM::EngineCore``, ``VLLM::APIServer``, tokenizers) to
the instance's frontend CPUs, re-pin threads and processes that appear later, and once the
server answers its health URL move each worker's private memory to its node. Only differing
affinities are written. Exit codes: 0 done, 1 bad input or a failed bind, 2 the instance runs
but some devices showed no worker in time, 3 the instance does not run (its unit is inactive or
its main process is gone): nothing to bind. The metrics file is written in every case.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys
import time

from ansible_collections.npuops.fleet.plugins.module_utils.model import cpu_intruders, worker_start

from . import irqs, metrics, procs, smi, targets
from .cli import parse_args
from .rules import BindError, format_cpulist

FULL_WALK_EVERY = 15  # a pass that reads every thread's children, one in this many


class _ProcReader(object):
    """cpu_intruders' reader (``read_text``, ``listdir``) over the binder's own /proc reads."""

    @staticmethod
    def read_text(path):
        return procs.read(path)

    @staticmethod
    def listdir(path):
        try:
            return os.listdir(path)
        except OSError:
            return None


class _Log(object):
    """The binder's log lines on stderr (``LEVEL mm-dd HH:MM:SS [npuops-bind] message``): the
    logging package would cost a reconcile run more CPU than its pass."""

    stream = sys.stderr

    def _line(self, level, msg, args):
        text = msg % args if args else msg
        self.stream.write("%s %s [npuops-bind] %s\n" % (level, time.strftime("%m-%d %H:%M:%S"), text))
        self.stream.flush()

    def info(self, msg, *args):
        self._line("INFO", msg, args)

    def warning(self, msg, *args):
        self._line("WARNING", msg, args)

    def error(self, msg, *args):
        self._line("ERROR", msg, args)


LOG = _Log()
EXIT_OK, EXIT_ERROR, EXIT_MISSING, EXIT_DOWN = 0, 1, 2, 3


class Binder(object):
    """The state of one binder run: which process is what (the discovery methods below), what
    was changed, what is left."""

    def __init__(self, doc, args, root=None):
        self.args = args
        self.root = root
        self.prefix = procs.DEFAULT_PREFIX
        self.workers = {}  # pid -> device
        self.found_at = {}  # pid -> time its worker was found
        self.reports = {}  # pid -> report
        self.migrated = set()
        self.changed = False
        self.drift = {}  # (device label, role) -> [threads checked, threads off plan]
        self.unit_down = False  # --unit names a unit without a main process: bind nothing
        self.irq_rows = []
        self.pending = set()  # processes whose role is not known yet: left alone for now
        self.titles = {}
        self.tool_homes = {}  # pid -> device, from npu-smi / nvidia-smi
        self.engines = set()  # the EngineCore processes of the tree, at the last pass
        self.ready_seen = False
        self.late = False  # past --timeout
        self.plan_seen = None
        self.passes = 0
        self.started = {}  # pid -> start time (clock ticks after boot)
        self.comms = {}  # (pid, tid) -> (comm, passes seen with it)
        self.memory = {}  # pid -> {node: bytes}, read once at the end of the run
        self.use_plan(doc)

    def use_plan(self, doc):
        """Take ``doc`` as the plan, validated first: every target and the NUMA nodes parse
        before any is used, or BindError naming the plan file and what is wrong (nothing of
        ``doc`` is taken then: a --follow run keeps the plan in use)."""
        try:
            devices = targets.instance_devices(doc)
            vendor = targets.vendor_of(doc)
            device_targets = dict((d, targets.device_target(doc, d)) for d in devices)
            frontend = targets.frontend_target(doc) if self.args.frontend else None
            nodes = targets.all_nodes(doc)
            method = procs.environ_value(self.root, "VLLM_WORKER_MULTIPROC_METHOD") if self.root is not None else None
            starts = targets.worker_start_of(doc, method)
        except BindError as err:
            text = str(err)
            raise BindError("plan %s: %s" % (self.args.plan, text[6:] if text.startswith("plan: ") else text))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise BindError(
                "plan %s: not a plan vllm_launch_wrapper writes (%s: %s)" % (self.args.plan, type(err).__name__, err)
            )
        self.doc, self.vendor, self.devices = doc, vendor, devices
        self.device_targets, self.frontend, self.nodes = device_targets, frontend, nodes
        self.worker_start = starts

    # -- discovery: which process of the tree is what, for the binder: the engines, their
    # workers and the device each serves, the processes whose role is not known yet. The
    # tree's shape decides first (only vLLM's main process starts engines, only an engine its
    # workers), the titles second, the device tools' process tables last (docs/drift.md).
    def tree(self):
        """``(pids, parents)`` of the instance's tree (the --pid workers without a root). Every
        FULL_WALK_EVERY-th pass, and while roles are pending, reads every thread's children;
        the passes between read only the main thread's and those known to spawn (a process
        forked by another thread inherits that thread's pinned CPUs meanwhile)."""
        if self.root is None:
            return sorted(self.workers), {}
        full = self.passes % FULL_WALK_EVERY == 0 or bool(self.pending)
        self.passes += 1
        return procs.tree(self.root, full)

    def discover(self, pids, parents):
        """Who is who in the tree, from its shape first: the main process's
        ``<prefix>::EngineCore[_DP<r>]`` children are the engines (by DP rank, then start), and
        an engine's children are its workers, never frontend: the i-th engine serves the i-th
        share of the instance's devices, and a worker its local rank within it - from the title
        (``pp*pcp*tp`` layout) once every worker of the engine carries its ranks, else its spawn
        order where the engine starts them in local-rank order (``local_ranks``). An
        engine without worker children is vLLM's uniproc executor (GPU TP=1): it is its
        device's worker once that is certain (see ``uniproc``). The main process and an engine
        whose workers are still to come are left alone (pending) until they exist or it is
        settled (``settled``: ready URL answers, else --uniproc-after), so no worker inherits
        the frontend's mask. A worker title
        anywhere else is
        no worker (anything in the tree can set its own title). The tools' process tables fill
        devices still missing."""
        kids = {}
        for pid in pids[1:]:
            kids.setdefault(parents.get(pid), []).append(pid)
        self.titles = dict((pid, procs.title(pid, self.prefix)) for pid in pids)
        engines = [p for p in kids.get(self.root, []) if procs.engine_rank(self.titles[p], self.prefix) is not None]
        self.started = dict(
            (p, self.started.get(p) or procs.start_ticks(p) or 0) for p in pids
        )  # a process's start never changes
        engines.sort(key=lambda p: (procs.engine_rank(self.titles[p], self.prefix), self.started[p], p))
        self.engines = set(engines)
        workers, pending = {}, set()
        share = max(1, len(self.devices) // len(engines)) if engines else 0
        for index, engine in enumerate(engines):
            slots = self.devices[index * share : (index + 1) * share]
            members = sorted(kids.get(engine, []), key=lambda p: (self.started[p], p))
            for pid, local in sorted(self.local_ranks(members, len(slots)).items()):
                if local < len(slots) and slots[local] not in workers.values():
                    workers[pid] = slots[local]
            pending.update(p for p in members if p not in workers)
            if not members and len(slots) == 1 and self.uniproc(engine):
                workers[engine] = slots[0]
            elif len(members) < len(slots) and not self.settled(engine):
                pending.add(engine)  # its workers are still to come: they inherit its mask
        if pending & set(engines) or (not engines and not self.settled(self.root)):
            pending.add(self.root)  # pinned once its engines' workers exist, so none inherits it
        if self.late:  # past --timeout: what is still pending and not an engine's child is frontend
            pending = set(p for p in pending if parents.get(p) not in engines)
        self.pending = pending
        for pid in [p for p in self.workers if p not in workers]:
            if pid in self.tool_homes and pid in parents and self.workers[pid] not in workers.values():
                workers[pid] = self.workers[pid]
        self.set_workers(workers)
        missing = [d for d in self.devices if d not in self.workers.values()]
        if missing:
            self.from_tools(missing, parents)
            self.pending.difference_update(self.workers)  # placed by the tools' tables

    def local_ranks(self, members, size):
        """``{pid: local rank}`` of an engine's worker children: by their titles' ranks when
        every one carries them and they make a ``pp x pcp x tp`` grid of ``size``; else by
        spawn order only where the engine starts its workers one by one in local-rank order
        (``model/worker_start``: vLLM <= 0.32, vllm-ascend) or there is one worker for one
        device; else none (vLLM >= 0.33 may start them at once: the device tools' tables
        place them, or they wait for their titles)."""
        ranks = [procs.worker_ranks(self.titles.get(p), self.prefix) for p in members]
        if len(members) == size and all(r is not None for r in ranks):
            sizes = dict((part, max([r.get(part, 0) for r in ranks]) + 1) for part in ("PP", "PCP", "TP"))
            if sizes["PP"] * sizes["PCP"] * sizes["TP"] == size:
                local = [
                    (r.get("PP", 0) * sizes["PCP"] + r.get("PCP", 0)) * sizes["TP"] + r.get("TP", 0) for r in ranks
                ]
                if len(set(local)) == size:
                    return dict(zip(members, local))
        one_worker = size == 1 and len(members) == 1
        if self.worker_start["order"] != worker_start.RANK and not one_worker:
            return {}
        return dict((pid, index) for index, pid in enumerate(members[:size]))

    def uniproc(self, engine):
        """True once an engine without worker children surely runs the model itself: the
        device tools show it, the server answers its ready URL (workers exist before the model
        loads), or it has run --uniproc-after seconds without spawning one."""
        if engine in self.tool_homes or self.ready_seen:
            return True
        if self.args.ready_url and procs.ready(self.args.ready_url):
            self.ready_seen = True
            return True
        return self.spawned(engine)

    def settled(self, pid):
        """True once ``pid`` has spawned what it will: the server answers its ready URL (vLLM
        starts its engines and their workers before it serves), or, without a ready URL, ``pid``
        has run --uniproc-after seconds. A clock alone is not enough where a ready URL exists:
        a loaded host took vLLM 77-152 s to spawn its EngineCore, which then inherited the
        frontend mask from a main process pinned at 60 s."""
        if pid is None or self.ready_seen:
            return True
        if self.args.ready_url:
            if procs.ready(self.args.ready_url):
                self.ready_seen = True
                return True
            return False
        return self.spawned(pid)

    def spawned(self, pid):
        """True once ``pid`` has run --uniproc-after seconds: what it spawns it has spawned."""
        if pid is None:
            return True
        seconds = procs.age(pid)
        return seconds is not None and seconds >= self.args.uniproc_after

    def from_tools(self, missing, parents):
        """Workers of ``missing`` devices from the tools' process tables (in the tree, not
        below a worker); remembered while they live. A worker is a process holding a device
        under an engine (the engine itself: uniproc), never the service's main process, which
        a tool may list on a device too (rocm-smi lists the process that opened a HIP context);
        without an engine in the tree (no EngineCore), any process below the main one."""
        homes = smi.home_devices(smi.device_rows(self.vendor, self.args.tool_timeout))
        self.tool_homes = dict(
            (pid, dev)
            for pid, dev in homes.items()
            if self.root is None or (pid in parents and pid != self.root and self.under_engine(pid, parents))
        )
        for pid, device in sorted(self.tool_homes.items()):
            if (
                device in missing
                and pid not in self.workers
                and (self.root is None or self.below_worker(pid, parents) is None)
            ):
                self.add_worker(pid, device)
                missing.remove(device)

    def under_engine(self, pid, parents):
        """True when ``pid`` is an engine or below one, or the tree has no engine."""
        if not self.engines:
            return True
        while pid is not None:
            if pid in self.engines:
                return True
            pid = parents.get(pid)
        return False

    def below_worker(self, pid, parents):
        ancestor = parents.get(pid)
        while ancestor is not None:
            if ancestor in self.workers:
                return ancestor
            ancestor = parents.get(ancestor)
        return None

    def set_workers(self, workers):
        for pid in [p for p in self.workers if p not in workers]:
            del self.workers[pid]
        for pid, device in workers.items():
            if self.workers.get(pid) != device:
                self.add_worker(pid, device)

    def add_worker(self, pid, device):
        self.workers[pid] = device
        self.found_at[pid] = time.time()
        self.report(pid, device, "worker")

    def report(self, pid, device, label):
        """The report entry of ``pid``, brought up to date: its role, device and title follow
        the process (a worker is ``python3`` first, then ``<prefix>::Worker...``)."""
        entry = self.reports.get(pid)
        if entry is None:
            entry = self.reports[pid] = {
                "pid": pid,
                "threads": 0,
                "changed": [],
                "unchanged": 0,
                "acl": [],
                "release": [],
                "migrated": False,
            }
        entry["device"], entry["role"] = device, label
        entry["title"] = self.titles.get(pid) or procs.title(pid, self.prefix)
        return entry

    def target_of(self, pid, tree_parent):
        """The target of a process in the tree: its own (worker), its nearest worker ancestor's
        main CPUs (a worker's helper process), None while its role is pending, else the
        frontend."""
        if pid in self.workers:
            return self.device_targets[self.workers[pid]]
        if pid in self.pending:
            return None
        ancestor = tree_parent.get(pid)
        while ancestor is not None:
            if ancestor in self.workers:
                base = self.device_targets[self.workers[ancestor]]
                return dict(base, acl=[], release=[])
            if ancestor in self.pending and ancestor != self.root:
                return None
            ancestor = tree_parent.get(ancestor)
        return self.frontend

    # -- binding ------------------------------------------------------------------------
    def bind_process(self, pid, target, label):
        tids = procs.threads(pid)
        if not tids:
            if pid in self.workers and self.args.pid:
                raise BindError(
                    "%s: process %d not found (does this run in the host PID namespace?)" % (target["label"], pid)
                )
            return
        report = self.report(pid, target["device"], label)
        report["threads"] = len(tids)
        report["unchanged"] = 0
        named = bool(target["acl"] or target["release"])  # else the name changes nothing
        wanted = {}  # role -> (cpus, their set)
        for tid in tids:
            cpus, role = targets.desired_cpus(self.comm(pid, tid) if named else "", target)
            if role != "main" and tid not in report[role]:
                report[role].append(tid)
            if role not in wanted:
                wanted[role] = (cpus, set(cpus))
            counts = self.drift.setdefault((target["label"], role), [0, 0])
            try:
                current = os.sched_getaffinity(tid)
                counts[0] += 1
                if current == wanted[role][1]:
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
            report["changed"].append(
                {"tid": tid, "role": role, "before": format_cpulist(current), "after": format_cpulist(cpus)}
            )
            LOG.info(
                "[bind] %s pid=%d tid=%d (%s) %s -> %s",
                target["label"],
                pid,
                tid,
                role,
                format_cpulist(current),
                format_cpulist(cpus),
            )

    def comm(self, pid, tid):
        """A thread's name; read until it was the same on two passes (torch_npu names its
        threads as they start), then kept."""
        cached = self.comms.get((pid, tid))
        if cached is not None and cached[1] >= 2:
            return cached[0]
        name = procs.thread_comm(pid, tid)
        self.comms[(pid, tid)] = (name, cached[1] + 1 if cached and cached[0] == name else 1)
        return name

    def worker_memory(self, pid):
        if pid not in self.memory:
            self.memory[pid] = procs.memory_by_node(pid)
        return self.memory[pid]

    def bind_all(self, tree, parents):
        if len(self.comms) > 4 * sum(r["threads"] for r in self.reports.values()) + 1024:
            self.comms = {}  # threads that ended
        for pid in tree if self.root is not None else sorted(self.workers):
            target = self.target_of(pid, parents)
            if target is not None:
                label = "worker" if pid in self.workers else ("frontend" if target is self.frontend else "worker-child")
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
        import shutil  # pylint: disable=import-outside-toplevel  # a reconcile run never migrates
        import subprocess  # pylint: disable=import-outside-toplevel

        tool = shutil.which("migratepages")
        if tool is None:
            LOG.warning("The 'migratepages' command is not available, skipping memory binding. (install numactl)")
            return
        LOG.info(
            "[migrate] %s:%s -> NUMA [%s]%s",
            target["label"][:3],
            target["device"],
            target["node"],
            "" if self.args.migrate_shared else " (private pages)",
        )
        if self.args.check:
            self.reports[pid]["migrated"] = True
            return
        ident = procs.owner(pid) or (None, None)
        preexec = None if self.args.migrate_shared else (lambda: procs.drop_sys_nice(ident[0], ident[1]))
        try:
            rc = subprocess.call(
                [tool, str(pid), ",".join(str(n) for n in self.nodes), str(target["node"])],
                stdin=subprocess.DEVNULL,
                preexec_fn=preexec,
                timeout=self.args.migrate_timeout,
            )
        except (OSError, subprocess.SubprocessError) as err:
            LOG.warning("[migrate] migratepages %d failed: %s", pid, err)
            return
        if rc != 0:
            LOG.warning("[migrate] migratepages %d exited with %s", pid, rc)
        self.reports[pid]["migrated"] = rc == 0

    def reconcile_irqs(self):
        if self.args.irq_state:
            devices = None if self.args.all_irqs else self.devices
            self.irq_rows = irqs.reconcile_state(self.args.irq_state, devices, self.args.check)
            for row in self.irq_rows:
                if row["drift"] or row["error"]:
                    LOG.warning(
                        "[irq] %s",
                        row["error"]
                        or "IRQ %s (%s %s) moved to %s; pinned again to %s"
                        % (row["irq"], row["device"], row["role"], row["before"], row["after"]),
                    )
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
            if row["irq"] is None:
                continue  # a pass skipped (the state file's lock held): no IRQ to report
            # the device label the thread metrics use (NPU0), so the two join in PromQL
            label = (self.device_targets.get(row["device"]) or {}).get("label", row["device"])
            out.append(
                ("npuops_irq_drift", [("instance", name), ("device", label), ("irq", row["irq"])], int(row["drift"]))
            )
        for pid, device in sorted(self.workers.items()):
            nodes = self.worker_memory(pid)
            if nodes is not None:
                out.append(
                    (
                        "npuops_worker_remote_memory_ratio",
                        [("instance", name), ("device", self.device_targets[device]["label"])],
                        procs.remote_ratio(nodes, self.device_targets[device]["node"]),
                    )
                )
        isolated = cpu_intruders.isolated_cpus(_ProcReader)
        if isolated:  # a partitioned host: processes outside the vLLM trees on worker CPUs
            out.append(("npuops_cpu_intruders", [("instance", name)], len(cpu_intruders.scan(_ProcReader, isolated))))
        out.append(("npuops_instance_up", [("instance", name)], int(not self.unit_down)))
        out.append(("npuops_instance_workers_missing", [("instance", name)], len(missing)))
        out.append(("npuops_binder_last_run_success", [("instance", name)], int(not failed)))
        out.append(("npuops_binder_last_run_timestamp_seconds", [("instance", name)], float(int(time.time()))))
        return out

    def server_ready(self):
        return not self.args.ready_url or procs.ready(self.args.ready_url)

    # -- the loop -----------------------------------------------------------------------
    def plan_changed(self):
        """In a --follow run: when the plan file changed (mtime, size, inode), read and validate
        it again and bind to the new plan from now on; a bad new plan keeps the old one (said
        once per version of the file). So the bind unit and the reconciler, which reads the
        file at each run, never pin against each other after a plan change."""
        signature = plan_signature(self.args.plan)
        if signature is None or signature == self.plan_seen:
            return False
        self.plan_seen = signature
        try:
            doc = targets.load_plan(self.args.plan, self.args.instance)
            self.use_plan(doc)
        except BindError as err:
            LOG.error("the plan changed but cannot be used; keeping the one in use: %s", err)
            return False
        LOG.info("the plan changed; binding to the new one")
        for line in targets.plan_lines(
            [self.device_targets[d] for d in self.devices] + ([self.frontend] if self.frontend else [])
        ):
            LOG.info("%s", line)
        self.workers, self.found_at = {}, {}
        return True

    def run(self):
        start = time.time()
        deadline = start + self.args.timeout
        ready_deadline = start + self.args.ready_timeout
        settled_at = None
        missing = []
        self.plan_seen = plan_signature(self.args.plan)
        while True:
            if self.unit_down:
                self.reconcile_irqs()
                return list(self.devices)
            if self.root is not None and not procs.alive(self.root):
                LOG.info("the service's main process %d is gone; stopping", self.root)
                self.unit_down = True
                break
            if not self.args.once and self.root is not None and self.plan_changed():
                settled_at = None
            pids, parents = self.tree()
            self.late = time.time() >= deadline
            if not self.args.pid:
                self.discover(pids, parents)
            self.bind_all(pids, parents)
            self.reconcile_irqs()
            now = time.time()
            missing = [d for d in self.devices if d not in self.workers.values()]
            found_all = not missing or now >= deadline
            complete = found_all and all(self.threads_complete(p) for p in self.workers)
            pending = [p for p in sorted(self.workers) if p not in self.migrated]
            if complete and pending and self.args.migrate:
                if self.ready_seen or self.server_ready():
                    self.ready_seen = True
                    for pid in pending:
                        # memory moves with a worker's first binding only (re-runs are cheap)
                        if self.reports[pid]["changed"]:
                            self.migrate(pid)
                        else:
                            self.migrated.add(pid)
                elif now >= ready_deadline:
                    LOG.warning(
                        "the server did not answer %s within %.0fs; memory not moved",
                        self.args.ready_url,
                        self.args.ready_timeout,
                    )
                    self.migrated.update(pending)
            settled = (
                complete
                and (not self.pending or now >= deadline)
                and (not self.args.migrate or all(p in self.migrated for p in self.workers))
            )
            if settled and settled_at is None:
                settled_at = now
            if self.args.once or (settled_at is not None and now - settled_at >= self.args.follow):
                break
            time.sleep(self.args.interval)
        return missing


def write_metrics(args, binder, result):
    """The run's metrics in every case: the binder's samples, or (a plan that could not be
    used, a crash) the run's failure alone, under the instance named by --instance or the
    plan. EXIT_ERROR when they cannot be written, else None."""
    name = args.instance
    samples = None
    if binder is not None:
        name = name or binder.doc["npuops_instance"].get("name")
        try:
            samples = binder.samples(result["missing"], result["failed"])
        except Exception as err:  # pylint: disable=broad-except  # the failure is still said
            LOG.error(
                "metrics: the run's samples cannot be made (%s: %s); writing its failure only", type(err).__name__, err
            )
            result["failed"] = result["failed"] or "metrics: %s: %s" % (type(err).__name__, err)
    if name is None:
        try:
            name = targets.load_plan(args.plan)["npuops_instance"].get("name")
        except BindError:
            name = None
    if not isinstance(name, str) or not name:
        LOG.error("metrics: no instance name (give --instance): nothing written to %s", args.metrics_dir)
        return EXIT_ERROR
    if samples is None:
        samples = metrics.failure_samples(name, bool(result["failed"]))
    try:
        metrics.write(args.metrics_dir, name, samples)
    except (OSError, ValueError) as err:
        LOG.error("metrics: cannot write to %s: %s", args.metrics_dir, err)
        return EXIT_ERROR
    return None


def plan_signature(path):
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


def unit_main_pid(unit, timeout):
    """MainPID of a systemd unit, or None when it does not run."""
    _rc, out = smi.run(["systemctl", "show", "-p", "MainPID", "--value", unit], timeout)
    out = (out or "").strip()
    return int(out) if out.isdigit() and int(out) > 0 else None


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv, __doc__.split("\n", 1)[0])
    irqs.PROC_IRQ = args.proc_irq
    LOG.stream = sys.stderr
    result = {"changed": False, "workers": [], "frontend": [], "irqs": [], "missing": [], "failed": None}
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
        if binder.root is not None and not unit_down:
            prefix = procs.process_prefix(binder.root)
            if prefix is None:
                LOG.warning(
                    "process %d: VLLM_PROCESS_NAME_PREFIX is no usable title prefix; reading titles with %r",
                    binder.root,
                    procs.DEFAULT_PREFIX,
                )
            binder.prefix = prefix or procs.DEFAULT_PREFIX
        if args.npu:
            binder.devices = list(args.npu)
        for line in targets.plan_lines(
            [binder.device_targets[d] for d in binder.devices if d in binder.device_targets]
            + ([binder.frontend] if binder.frontend else [])
        ):
            LOG.info("%s", line)
        starts = binder.worker_start
        LOG.info(
            "workers start in %s order (%s %s: %s)",
            starts["order"],
            starts["engine"],
            starts["version"] or "version unknown",
            starts["reason"],
        )
        result["worker_start"] = dict((k, starts[k]) for k in ("engine", "version", "order"))
        for pid, npu in zip(args.pid, args.npu):
            if npu not in binder.device_targets:
                binder.device_targets[npu] = targets.device_target(doc, npu)
            binder.add_worker(pid, npu)
        started = time.time()
        result["missing"] = binder.run()
        if binder.unit_down:
            result["unit_running"] = False
            code = EXIT_DOWN
        else:
            for device in result["missing"]:
                LOG.warning(
                    "%s shows no worker process after %.0fs; not bound",
                    binder.device_targets[device]["label"],
                    time.time() - started,
                )
            if result["missing"]:
                code = EXIT_MISSING
        for pid in [p for p in binder.reports if p not in binder.workers]:
            if not procs.alive(pid):
                del binder.reports[pid]  # a compiler or helper that came and went
        for pid, device in binder.workers.items():
            nodes = binder.worker_memory(pid)
            if nodes is not None and pid in binder.reports:
                binder.reports[pid]["memory_bytes"] = dict((str(n), b) for n, b in sorted(nodes.items()))
                binder.reports[pid]["remote_memory_ratio"] = procs.remote_ratio(
                    nodes, binder.device_targets[device]["node"]
                )
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
    except Exception as err:  # pylint: disable=broad-except  # a bug: still a report and metrics
        import traceback  # pylint: disable=import-outside-toplevel

        LOG.error("internal error (a bug of npuops-bind; please report it):\n%s", traceback.format_exc().rstrip())
        result["failed"] = "internal error: %s: %s" % (type(err).__name__, err)
        code = EXIT_ERROR
    if args.metrics_dir:
        code = write_metrics(args, binder, result) or code
    if args.json:
        sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    return code
