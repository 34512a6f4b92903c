#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Markdown table: vllm_ascend vs strict on the recorded hosts in tests/snapshots.

For every snapshot with Ascend NPUs, both policies plan every NPU of the host (vllm_ascend with
every NPU as a running worker, as in a full-host deployment) and the table reports: CPUs in more
than one pool, NPUs whose pool leaves their affinity NUMA node, CPUs used out of the allowed
ones (strict: also the frontend and spare CPUs of its cpu_budget), or the error / skip reason. Run from the repository root; docs/policies.md embeds the
output between the ``<!-- policy-table -->`` markers (``--write`` updates it).
"""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError  # noqa: E402
from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import SnapshotHostIO  # noqa: E402

SNAPSHOTS = os.path.join(REPO, "tests", "snapshots")
DOC = os.path.join(REPO, "docs", "policies.md")
BEGIN, END = "<!-- policy-table -->", "<!-- /policy-table -->"


def affinity_node(npu, node_of):
    cpus = cpulist.parse(npu.get("affinity") or "")
    nodes = [node_of[c] for c in cpus if c in node_of]
    if nodes:
        return max(set(nodes), key=lambda n: (nodes.count(n), -n))
    return npu.get("numa_node")


def summary(topo, policy):
    ids = [n["logic_id"] for n in topo.get("npus") or []]
    try:
        plan = plan_mod.make_plan(topo, policy, npus=ids)
    except NpuopsError as err:
        return "fails: %s" % err
    if plan["skipped"]:
        return "skipped: %s" % plan["reason"]
    node_of = {}
    for key, text in topo["cpu"]["numa_nodes"].items():
        for cpu in cpulist.parse(text or ""):
            node_of[cpu] = int(key)
    seen, overlap, off = {}, set(), []
    for npu in topo["npus"]:
        entry = plan["npus"].get(str(npu["logic_id"]))
        if entry is None:
            continue
        pool = cpulist.parse(entry["pool"])
        for cpu in pool:
            if cpu in seen:
                overlap.add(cpu)
            seen[cpu] = npu["logic_id"]
        home = affinity_node(npu, node_of)
        if home is not None and any(node_of.get(c) != home for c in pool):
            off.append(str(npu["logic_id"]))
    allowed = len(cpulist.parse(topo["cpu"]["allowed"]))
    text = "%s: %d overlapping CPUs; off-node NPUs: %s; %d/%d CPUs used" % (
        plan["mode"],
        len(overlap),
        ",".join(off) or "none",
        len(seen),
        allowed,
    )
    budget = plan.get("cpu_budget")
    if budget:  # strict: the rest of the process tree (frontends) and what is left
        text += "; frontend %d, spare %d" % (
            len(cpulist.parse(budget["frontend"])),
            len(cpulist.parse(budget["spare"])),
        )
    return text


def table():
    rows = ["| host | device | CPUs allowed | NPUs | vllm_ascend | strict |", "|---|---|---|---|---|---|"]
    for name in sorted(os.listdir(SNAPSHOTS)):
        path = os.path.join(SNAPSHOTS, name)
        if not os.path.isfile(os.path.join(path, "snapshot.yml")):
            continue
        topo = topology.gather(SnapshotHostIO(path))
        if topo.get("vendor") != "ascend" or not topo.get("npus"):
            continue
        rows.append(
            "| %s | %s | %s | %d | %s | %s |"
            % (
                name,
                topo.get("device_type"),
                topo["cpu"].get("allowed"),
                len(topo["npus"]),
                summary(topo, "vllm_ascend"),
                summary(topo, "strict"),
            )
        )
    return "\n".join(rows)


def main():
    text = table()
    if "--write" in sys.argv[1:]:
        with open(DOC) as handle:
            doc = handle.read()
        head, rest = doc.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        with open(DOC, "w") as handle:
            handle.write(head + BEGIN + "\n" + text + "\n" + END + tail)
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
