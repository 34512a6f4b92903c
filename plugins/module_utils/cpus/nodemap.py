# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which NUMA node a CPU is on, answered per run of CPUs (``NodeMap``) instead of per CPU.

``node_map`` builds a ``NodeMap`` when every node's CPUs are a ``cpuset.CpuSeq`` and the plain
``{cpu: node}`` dict otherwise (the policies' unit tests call them with lists);
``nodes_of`` / ``node_counts`` answer for either.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from bisect import bisect_left

from ansible_collections.npuops.fleet.plugins.module_utils.cpus.cpuset import EMPTY, CpuSeq, subtract, union_runs

MAX_NODES = 1024  # NUMA node ids 0..1023: Linux MAX_NUMNODES is at most 1 << 10


class NodeMap(object):
    """``{cpu: node}`` for CPUs given as CpuSeq per node, answered per run.

    Built like ``for node, cpus in node_cpus.items(): cpu_node.update(dict.fromkeys(cpus,
    node))``: a CPU listed under two nodes belongs to the later one.
    """

    __slots__ = ("segments", "highs", "node_runs")

    def __init__(self, node_cpus):
        owned = {}
        segments = []
        for node, cpus in node_cpus.items():
            if cpus.__class__ is not CpuSeq:
                cpus = CpuSeq.from_cpus(cpus)
            if not cpus.normal:
                cpus = cpus.sorted_unique()
            owned[node] = cpus
            segments.extend([run + (node,) for run in cpus.runs])
        segments.sort()
        prev_hi = None
        shared = False
        for lo, hi, dummy in segments:
            if prev_hi is not None and lo <= prev_hi:
                shared = True
                break
            prev_hi = hi
        if shared:
            # nodes that share CPUs (malformed facts): the later node takes them
            claimed = EMPTY
            for node in reversed(list(owned)):
                cpus = owned[node]
                owned[node] = subtract(cpus, claimed)
                claimed = union_runs(claimed.runs + cpus.runs)
            segments = sorted((lo, hi, node) for node, cpus in owned.items()
                              for lo, hi in cpus.runs)
        self.segments = segments
        self.highs = [hi for dummy, hi, dummy in segments]
        # node -> its CPUs (ascending), nodes ordered by their first CPU as lscpu lists them
        node_runs = {}
        for dummy, dummy, node in segments:
            if node not in node_runs:
                node_runs[node] = owned[node]
        self.node_runs = node_runs

    def _find(self, cpu):
        index = bisect_left(self.highs, cpu)
        if index < len(self.segments) and self.segments[index][0] <= cpu:
            return self.segments[index][2]
        return None

    def get(self, cpu, default=None):
        node = self._find(cpu)
        return default if node is None else node

    def __getitem__(self, cpu):
        node = self._find(cpu)
        if node is None:
            raise KeyError(cpu)
        return node

    def __contains__(self, cpu):
        return self._find(cpu) is not None

    def nodes(self, cpus):
        """The set of nodes of ``cpus`` (CPUs on no node are ignored)."""
        segments = self.segments
        count = len(segments)
        found = set()
        for lo, hi in CpuSeq.from_cpus(cpus).runs:
            index = bisect_left(self.highs, lo)
            while index < count and segments[index][0] <= hi:
                found.add(segments[index][2])
                index += 1
        return found

    def run_node(self, lo, hi):
        """The node holding every CPU of ``lo..hi``, or None (several nodes, or CPUs on none)."""
        segments = self.segments
        index = bisect_left(self.highs, lo)
        if index < len(segments):
            s_lo, s_hi, node = segments[index]
            if s_lo <= lo and hi <= s_hi:
                return node
        return None

    def node_list(self, runs):
        """The sorted node ids of CPU ``runs`` (``sorted(self.nodes(...))`` for a CpuSeq's runs)."""
        segments = self.segments
        highs = self.highs
        count = len(segments)
        if len(runs) == 1:
            lo, hi = runs[0]
            index = bisect_left(highs, lo)
            if index < count:
                s_lo, s_hi, node = segments[index]
                if s_lo <= lo and hi <= s_hi:
                    # the usual pool: inside one segment of one node
                    return [node]
        found = set()
        for lo, hi in runs:
            index = bisect_left(highs, lo)
            while index < count and segments[index][0] <= hi:
                found.add(segments[index][2])
                index += 1
        return sorted(found)

    def counts(self, cpus):
        """``{node: how many entries of cpus are on it}`` (duplicates counted)."""
        segments = self.segments
        runs = CpuSeq.from_cpus(cpus).runs
        if len(runs) == 1:
            node = self.run_node(*runs[0])
            if node is not None:
                # one run inside one node (an NPU's topo affinity): no walk
                return {node: runs[0][1] - runs[0][0] + 1}
        counts = {}
        for lo, hi in runs:
            index = bisect_left(self.highs, lo)
            while index < len(segments) and segments[index][0] <= hi:
                s_lo, s_hi, node = segments[index]
                counts[node] = counts.get(node, 0) + min(hi, s_hi) - max(lo, s_lo) + 1
                index += 1
        return counts

    def first_missing(self, cpus):
        """The first CPU of ``cpus`` (in order) on no node, or None."""
        segments = self.segments
        for lo, hi in CpuSeq.from_cpus(cpus).runs:
            cpu = lo
            index = bisect_left(self.highs, cpu)
            while cpu <= hi:
                if index >= len(segments) or segments[index][0] > cpu:
                    return cpu
                cpu = segments[index][1] + 1
                index += 1
        return None


def node_map(node_cpus):
    """A NodeMap when every node's CPUs are a CpuSeq, else the plain ``{cpu: node}`` dict."""
    if node_cpus and all(isinstance(c, CpuSeq) for c in node_cpus.values()):
        return NodeMap(node_cpus)
    cpu_node = {}
    for node, cpus in node_cpus.items():
        cpu_node.update(dict.fromkeys(cpus, node))
    return cpu_node


def nodes_of(cpu_node, cpus):
    """``set(map(cpu_node.get, cpus)) - {None}``."""
    if isinstance(cpu_node, NodeMap):
        return cpu_node.nodes(cpus)
    nodes = set(map(cpu_node.get, cpus))
    nodes.discard(None)
    return nodes


def node_counts(cpu_node, cpus):
    """``{node: count}`` of the entries of ``cpus`` that are on a node."""
    if isinstance(cpu_node, NodeMap):
        return cpu_node.counts(cpus)
    counts = {}
    for cpu in cpus:
        node = cpu_node.get(cpu)
        if node is not None:
            counts[node] = counts.get(node, 0) + 1
    return counts
