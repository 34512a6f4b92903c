# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which process of a vLLM instance's tree is what, for the binder: the engines, their
workers and the device each serves, the processes whose role is not known yet. The tree's
shape decides first (only vLLM's main process starts engines, only an engine its workers), the
titles second, the device tools' process tables last (docs/drift.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.npuops.fleet.plugins.module_utils.model import worker_start

from . import procs, smi

FULL_WALK_EVERY = 15


class Discovery(object):
    """The discovery half of the Binder: needs its ``root``, ``args``, ``devices``,
    ``device_targets``, ``frontend``, ``prefix``, ``workers``, ``pending``, ``engines`` and
    ``reports``."""

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
        engines = [p for p in kids.get(self.root, [])
                   if procs.engine_rank(self.titles[p], self.prefix) is not None]
        self.started = dict((p, self.started.get(p) or procs.start_ticks(p) or 0)
                            for p in pids)  # a process's start never changes
        engines.sort(key=lambda p: (procs.engine_rank(self.titles[p], self.prefix),
                                    self.started[p], p))
        self.engines = set(engines)
        workers, pending = {}, set()
        share = max(1, len(self.devices) // len(engines)) if engines else 0
        for index, engine in enumerate(engines):
            slots = self.devices[index * share:(index + 1) * share]
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
            if pid in self.tool_homes and pid in parents and self.workers[pid] not in \
                    workers.values():
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
            sizes = dict((part, max([r.get(part, 0) for r in ranks]) + 1)
                         for part in ("PP", "PCP", "TP"))
            if sizes["PP"] * sizes["PCP"] * sizes["TP"] == size:
                local = [(r.get("PP", 0) * sizes["PCP"] + r.get("PCP", 0)) * sizes["TP"]
                         + r.get("TP", 0) for r in ranks]
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
        self.tool_homes = dict((pid, dev) for pid, dev in homes.items()
                               if self.root is None or (pid in parents and pid != self.root
                                                        and self.under_engine(pid, parents)))
        for pid, device in sorted(self.tool_homes.items()):
            if device in missing and pid not in self.workers and \
                    (self.root is None or self.below_worker(pid, parents) is None):
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
            entry = self.reports[pid] = {"pid": pid, "threads": 0, "changed": [], "unchanged": 0,
                                         "acl": [], "release": [], "migrated": False}
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
