# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which NUMA node a CPU is on: ``NodeMap``, the one answer every layer asks (the planners,
the kubelet profile, the report, the binder).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from bisect import bisect_left

from ansible_collections.npuops.fleet.plugins.module_utils.cpus.cpuset import EMPTY, CpuSeq, subtract, union_runs

MAX_NODES = 1024  # NUMA node ids 0..1023: Linux MAX_NUMNODES is at most 1 << 10


class NodeMap(object):
    """``{cpu: node}`` of ``{node: CPU ids}`` (a CpuSeq or any sequence of ids per node),
    answered per run of CPUs.

    Built like ``for node, cpus in node_cpus.items(): cpu_node.update(dict.fromkeys(cpus,
    node))``: a CPU listed under two nodes belongs to the later one.
    """

    __slots__ = ("segments", "highs", "node_runs")

    def __init__(self, node_cpus):
        owned = dict((node, CpuSeq.from_cpus(cpus).sorted_unique()) for node, cpus in node_cpus.items())
        # nodes that share CPUs (malformed facts): the later node takes them
        claimed = EMPTY
        for node in reversed(list(owned)):
            cpus = owned[node]
            owned[node] = subtract(cpus, claimed)
            claimed = union_runs(claimed.runs + cpus.runs)
        segments = sorted((lo, hi, node) for node, cpus in owned.items() for lo, hi in cpus.runs)
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

    def _overlaps(self, cpus):
        """``(node, lo, hi)``: each part of ``cpus`` (in their order) that lies on one node."""
        segments = self.segments
        for lo, hi in CpuSeq.from_cpus(cpus).runs:
            index = bisect_left(self.highs, lo)
            while index < len(segments) and segments[index][0] <= hi:
                s_lo, s_hi, node = segments[index]
                yield node, max(lo, s_lo), min(hi, s_hi)
                index += 1

    def nodes(self, cpus):
        """The set of nodes of ``cpus`` (CPUs on no node are ignored)."""
        return set(node for node, dummy, dummy in self._overlaps(cpus))

    def counts(self, cpus):
        """``{node: how many entries of cpus are on it}`` (duplicates counted)."""
        counts = {}
        for node, lo, hi in self._overlaps(cpus):
            counts[node] = counts.get(node, 0) + hi - lo + 1
        return counts

    def split(self, cpus):
        """``{node: CpuSeq}``: the CPUs of ``cpus`` on each node, in their order (CPUs on no
        node left out)."""
        parts = {}
        for node, lo, hi in self._overlaps(cpus):
            parts.setdefault(node, []).append((lo, hi))
        return dict((node, CpuSeq.from_runs(runs)) for node, runs in parts.items())

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
