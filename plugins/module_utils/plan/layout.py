# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Value objects the planners share instead of long positional lists.

``HostCpus``: the host's CPU layout as one plan reads it - the NUMA nodes that hold CPUs, the
allowed CPUs (reserved removed) and all of them (the budget), the ``frontend_cpus`` cap, SMT
cores, the nearness order, isolated CPUs - each derived at most once per plan, on first use.
``NpuRequest``: what the facts and options say about the NPUs of one plan.

Pure, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import nodemap
from ansible_collections.npuops.fleet.plugins.module_utils.cpus.cpuset import EMPTY
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules
from ansible_collections.npuops.fleet.plugins.module_utils.plan import frontend

_UNSET = object()


class HostCpus(object):
    """The CPU layout of the host behind ``topology`` for one plan (CPU sets are CpuSeq)."""

    __slots__ = (
        "topology",
        "node_cpus",
        "allowed",
        "allowed_all",
        "reserved",
        "frontend_cap",
        "_cpu_node",
        "_nearness",
        "_cores",
        "_isolated",
    )

    def __init__(self, topology, node_cpus, allowed, allowed_all, reserved=None, frontend_cap=None):
        self.topology, self.node_cpus, self.frontend_cap = topology, node_cpus, frontend_cap
        self.allowed, self.allowed_all, self.reserved = allowed, allowed_all, reserved
        self._cpu_node = self._nearness = self._cores = self._isolated = _UNSET

    @property
    def cpu(self):
        return self.topology.get("cpu") or {}

    @property
    def threads_per_core(self):
        return self.cpu.get("threads_per_core")

    @property
    def cpu_node(self):
        """NodeMap of ``node_cpus``."""
        if self._cpu_node is _UNSET:
            self._cpu_node = nodemap.NodeMap(self.node_cpus)
        return self._cpu_node

    @property
    def nearness(self):
        """``rules.Nearness`` of the host (its read warnings go into the plan)."""
        if self._nearness is _UNSET:
            self._nearness = rules.Nearness.of(self.topology, self.node_cpus)
        return self._nearness

    @property
    def cores(self):
        """``rules.smt_cores`` or None."""
        if self._cores is _UNSET:
            self._cores = rules.smt_cores(self.topology) or None
        return self._cores

    @property
    def isolated(self):
        """Isolated and nohz_full CPUs (a CpuSeq, EMPTY when none)."""
        if self._isolated is _UNSET:
            cpu = self.cpu
            if cpu.get("isolated") or cpu.get("nohz_full"):
                self._isolated = frontend.union(
                    [rules.cpu_fact(self.topology, "isolated"), rules.cpu_fact(self.topology, "nohz_full")]
                )
            else:
                self._isolated = EMPTY
        return self._isolated

    def with_allowed(self, allowed, allowed_all):
        """The same host with other allowed CPUs (GPU facts without ``cpu.allowed``)."""
        other = HostCpus(self.topology, self.node_cpus, allowed, allowed_all, self.reserved, self.frontend_cap)
        other._cpu_node, other._nearness, other._cores = self._cpu_node, self._nearness, self._cores
        return other


# The NPUs of one plan: ``ids`` (every logic id), ``requested`` (the ones asked for, or None),
# ``affinity`` / ``pci_nodes`` / ``busy`` from the facts, ``device_type``.
NpuRequest = namedtuple("NpuRequest", "ids requested affinity pci_nodes busy device_type")
