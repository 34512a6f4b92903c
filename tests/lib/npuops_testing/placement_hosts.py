# -*- coding: utf-8 -*-
"""Random hosts for the placement properties (the whole process tree): NUMA nodes grouped into packages, a
distance table (or none), SMT siblings adjacent or at +half of a node (or none), isolated CPUs,
cut cpusets, NPUs with or without affinity, instances over them.

``host_case()`` is a hypothesis strategy of ``(topology facts, options, truth)``: ``options``
are make_plan keyword arguments, ``truth`` the layout the facts were built from (nodes as CPU
lists, package per node, the allowed CPUs, isolated CPUs, home per NPU by the rule of the brief).
"""

import random

from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from npuops_testing import cpu_hosts


def home_of(npu, nodes):
    """The home node, by the brief's rule: affinity majority, else the PCI node."""
    aff = cpulist.parse(npu["affinity"] or "")
    if aff:
        counts = dict((n, len(set(aff) & set(c))) for n, c in nodes.items())
        best = min(counts, key=lambda n: (-counts[n], n))
        if counts[best] * 2 > len(aff):
            return best
    if npu["numa_node"] is not None and npu["numa_node"] in nodes:
        return npu["numa_node"]
    return None


@st.composite
def host_case(draw, device_types=("A2", "310P", "unknown", "A3")):
    n_nodes = draw(st.integers(1, 8))
    n_pkgs = draw(st.integers(1, min(4, n_nodes)))
    node_ids = (
        sorted(draw(st.sets(st.integers(0, 11), min_size=n_nodes, max_size=n_nodes)))
        if draw(st.booleans())
        else list(range(n_nodes))
    )
    package = dict((node, i * n_pkgs // n_nodes) for i, node in enumerate(node_ids))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    tpc = draw(st.sampled_from([1, 2]))
    numbering = draw(st.sampled_from(["adjacent", "half"]))
    nodes, start = {}, 0
    for node in node_ids:
        size = draw(st.sampled_from([4, 8, 12, 16, 24, 32]))
        nodes[node] = list(range(start, start + size))
        start += size
    total = start
    siblings = []
    if tpc == 2:
        for cpus in nodes.values():
            half = len(cpus) // 2
            pairs = (
                [(cpus[2 * i], cpus[2 * i + 1]) for i in range(half)]
                if numbering == "adjacent"
                else [(cpus[i], cpus[i + half]) for i in range(half)]
            )
            siblings.extend("%d,%d" % pair for pair in pairs)
    distance = None
    if draw(st.booleans()) or n_nodes == 1:
        distance = {}
        for a in node_ids:
            for b in node_ids:
                if a == b:
                    d = 10
                elif a > b:
                    d = distance[str(b)][str(a)]
                elif package[a] == package[b]:
                    d = rnd.randint(11, 16)
                else:
                    d = rnd.randint(20, 40)
                distance.setdefault(str(a), {})[str(b)] = d
    cut = draw(st.sampled_from(["full", "full", "range", "random"]))
    if cut == "full":
        allowed = list(range(total))
    elif cut == "range":
        lo = draw(st.integers(0, total - 1))
        allowed = list(range(lo, draw(st.integers(lo, total - 1)) + 1))
    else:
        allowed = sorted(c for c in range(total) if rnd.random() < 0.85) or [0]
    isolated = []
    if draw(st.integers(0, 3)) == 0:
        isolated = sorted(c for c in range(total) if rnd.random() < 0.1)
    n_npus = draw(st.integers(1, 12))
    npus = []
    for logic in range(n_npus):
        node = draw(st.sampled_from(node_ids))
        kind = draw(st.sampled_from(["node", "node", "sub", "none"]))
        cpus = nodes[node]
        aff = {"node": cpulist.format(cpus), "sub": cpulist.format(cpus[: max(1, len(cpus) // 2)]), "none": None}[kind]
        npus.append({"logic_id": logic, "affinity": aff, "numa_node": draw(st.sampled_from([None, node]))})
    device_type = draw(st.sampled_from(device_types))
    topo = cpu_hosts.host(
        npus,
        dict((n, cpulist.format(c)) for n, c in nodes.items()),
        cpulist.format(allowed),
        device_type=device_type,
        tpc=tpc,
    )
    cpu = topo["cpu"]
    cpu["numa_distance"] = distance
    cpu["packages"] = dict((str(n), p) for n, p in package.items()) if draw(st.booleans()) else None
    cpu["smt_siblings"] = siblings if tpc == 2 else []
    cpu["isolated"] = cpulist.format(isolated)
    cpu["nohz_full"] = ""
    ids = list(range(n_npus))
    rnd.shuffle(ids)
    count = draw(st.integers(0, min(3, n_npus)))
    instances = []
    for index in range(count):
        members = sorted(ids[index::count])
        instances.append({"name": "svc%d" % index, "npus": members})
    options = {"instances": instances or None}
    if draw(st.integers(0, 3)) == 0:
        options["frontend_cpus"] = draw(st.integers(0, 24))
    if draw(st.integers(0, 4)) == 0 and len(allowed) > 4:
        options["reserved_cpus"] = cpulist.format(allowed[:2])
    truth = {
        "nodes": nodes,
        "package": package if cpu["packages"] else None,
        "allowed": allowed,
        "isolated": isolated,
        "siblings": siblings,
        "homes": dict((n["logic_id"], home_of(n, nodes)) for n in npus),
    }
    return topo, options, truth
