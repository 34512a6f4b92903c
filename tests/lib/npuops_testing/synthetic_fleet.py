# -*- coding: utf-8 -*-
"""A synthetic fleet for the fleet report at scale (``bench/bench_report.py`` and the report's
browser test): the demo fleet's 13 hosts (``inventories/demo``, each replaying its snapshot)
repeated to any number of hosts, with realistic variation.

- ``demo_entries()``: ``{demo host: audit entry}`` as ``roles/fleet_audit`` records it (facts
  from the snapshot, a strict plan, a vllm_ascend plan on Ascend hosts, plan errors), for a
  fleet where ``site.yml`` ran with ``npuops_irqbalance: ban`` (the IRQs the strict plan pins
  are banned in ``/etc/default/irqbalance`` on hosts where irqbalance runs).
- ``synthetic_fleet(n, seed=14, rate=0.02)``: ``(fleet, counts)``. Host ``j`` of a demo host
  ``kind`` is ``<kind>-<j>`` (zero-padded), so a kind's hosts are numbered like a rack. About
  ``rate`` of the hosts each get one of: a failed chip (Ascend hosts; health ``Critical``,
  soft-share capacity 100 lower), a cut cpuset (the facts gathered inside a cgroup without the
  last NUMA node, or without CPUs 0-3; planned again), a drifted binding (irqbalance
  reinstalled: its bans are gone; on GPU hosts with RDMA NICs, the first NIC renamed by udev,
  so GPU rails differ). ``counts``: how many hosts got each.

Deterministic for a seed. Nested values of identical hosts are shared (as Ansible would hand
the filter equal values); nothing in the report code changes its input.
"""

import copy
import os
import random

import yaml

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import cpu_ids, fmt

from npuops_testing import REPO, SNAPSHOTS

INVENTORY = os.path.join(REPO, "inventories", "demo", "hosts.yml")
IRQBALANCE_CONFIG = "/etc/default/irqbalance"


def demo_hosts():
    """``[(inventory host, snapshot name)]`` of the demo inventory, in file order."""
    with open(INVENTORY, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    found = []

    def walk(group):
        group = group or {}
        for host, hvars in (group.get("hosts") or {}).items():
            if host not in [h for h, dummy in found]:
                found.append((host, (hvars or {}).get("npuops_demo_snapshot") or host))
        for child in (group.get("children") or {}).values():
            walk(child)

    for group in data.values():
        walk(group)
    return found


def plan_entry(facts, banned=True):
    """The audit entry of one host: plans as ``roles/fleet_audit`` makes them; with
    ``banned``, the IRQs the strict plan pins are banned in irqbalance's config."""
    entry = {"facts": facts, "plan_strict": None, "plan_vllm_ascend": None, "plan_errors": {}}
    policies = ["strict"] + (["vllm_ascend"] if facts.get("vendor") == "ascend" else [])
    for policy in policies:
        try:
            entry["plan_" + policy] = dispatch.make_plan(facts, policy=policy)
        except NpuopsError as err:
            entry["plan_errors"][policy] = str(err)
    irqbalance = facts.get("irqbalance") or {}
    if banned and irqbalance.get("active") and entry["plan_strict"]:
        pinned, dummy = analysis._pinned_irqs(facts, entry["plan_strict"])  # pylint: disable=protected-access
        if pinned:
            entry["facts"] = dict(
                facts,
                irqbalance=dict(irqbalance, config=IRQBALANCE_CONFIG, banned_irqs=sorted(p["irq"] for p in pinned)),
            )
    return entry


def demo_entries():
    """``{demo host: audit entry}`` for the demo hosts."""
    entries = {}
    for host, snap in demo_hosts():
        facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, snap)))
        facts["hostname"] = host
        entries[host] = plan_entry(facts)
    return entries


def _failed_chip(entry, rng):
    facts = entry["facts"]
    npus = facts.get("npus") or []
    if facts.get("vendor") != "ascend" or not npus:
        return None
    npus = copy.deepcopy(npus)
    npus[rng.randrange(len(npus))]["health"] = "Critical"
    share = dict(facts.get("softshare") or {})
    if share:
        share["chips_healthy"] = max(0, share.get("chips_healthy", 0) - 1)
        share["capacity"] = max(0, share.get("capacity", 0) - 100)
    return dict(entry, facts=dict(facts, npus=npus, softshare=share))


def _cut_cpuset(facts, variant):
    cpu = dict(facts.get("cpu") or {})
    nodes = cpu.get("numa_nodes") or {}
    allowed = cpu.get("allowed") or ""
    try:
        ids = set(cpu_ids(allowed))
        if variant == "last-node" and len(nodes) > 1:
            last = sorted(nodes, key=int)[-1]
            ids -= set(cpu_ids(nodes[last]))
        else:
            ids -= {0, 1, 2, 3}
    except (TypeError, ValueError):
        return None
    if not ids:
        return None
    cpu["allowed"] = fmt(sorted(ids))
    return dict(facts, cpu=cpu)


def _renamed_nic(facts):
    nics = facts.get("nics") or []
    if facts.get("vendor") != "nvidia" or len(nics) < 2:
        return None
    old = nics[0]["name"]
    new = old + "0"  # mlx5_0 -> mlx5_00: udev named it differently on this host
    nics = [dict(nics[0], name=new)] + list(nics[1:])
    gpus = []
    for gpu in facts.get("gpus") or []:
        links = dict((new if k == old else k, v) for k, v in (gpu.get("links") or {}).items())
        gpus.append(dict(gpu, links=links))
    return dict(facts, nics=nics, gpus=gpus)


def _unbanned(entry):
    facts = entry["facts"]
    irqbalance = facts.get("irqbalance") or {}
    if not irqbalance.get("banned_irqs"):
        return None
    return dict(entry, facts=dict(facts, irqbalance=dict(irqbalance, banned_irqs=[])))


def synthetic_fleet(n, seed=14, rate=0.02, base=None):
    """``(fleet, counts)``: ``n`` hosts from the demo hosts, about ``rate`` of them each with a
    failed chip, a cut cpuset or a drifted binding (module docstring)."""
    base = base or demo_entries()
    kinds = sorted(base)
    width = max(4, len(str(n)))
    rng = random.Random(seed)
    replanned = {}
    counts = {"failed_chip": 0, "cut_cpuset": 0, "drifted_binding": 0}
    fleet = {}
    for i in range(n):
        kind = kinds[i % len(kinds)]
        name = "%s-%0*d" % (kind, width, i // len(kinds) + 1)
        entry = base[kind]
        draw = rng.random()
        varied = None
        if draw < rate:
            varied, what = _failed_chip(entry, rng), "failed_chip"
        elif draw < 2 * rate:
            variant = rng.choice(("last-node", "cpus-0-3"))
            key = (kind, "cut", variant)
            if key not in replanned:
                facts = _cut_cpuset(entry["facts"], variant)
                replanned[key] = plan_entry(facts) if facts else None
            varied, what = replanned[key], "cut_cpuset"
        elif draw < 3 * rate:
            key = (kind, "drift")
            if key not in replanned:
                facts = _renamed_nic(entry["facts"])
                replanned[key] = plan_entry(facts) if facts else _unbanned(entry)
            varied, what = replanned[key], "drifted_binding"
        if varied is not None:
            counts[what] += 1
            entry = varied
        fleet[name] = dict(entry, facts=dict(entry["facts"], hostname=name))
    return fleet, counts
