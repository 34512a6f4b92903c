# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one type of a CPU set: ``CpuSeq``, an ordered sequence of CPU ids kept as runs.

A ``CpuSeq`` keeps the order and the duplicates of its ids (vllm-ascend's pools are
positional: ``pool[0]`` takes the SQ IRQ, ``pool[-1]`` the release thread) as runs
``((first, last), ...)``. It supports the list operations the planners use - ``len``,
indexing, slicing, ``+``, iteration, ``in``, equality with lists. The module functions take a
CpuSeq (any other sequence of ids is made one first) and give one; ``nodemap.NodeMap`` says
which NUMA node each CPU is on.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from bisect import bisect_left, bisect_right
from itertools import chain

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError


_INF = float("inf")
_MAX_CPUS = cpulist.MAX_CPUS


def _join(runs):
    """Canonical runs: neighbours that continue each other (``a-b`` then ``b+1-c``) merged."""
    out = []
    for lo, hi in runs:
        if out and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def union_runs(runs):
    """The CpuSeq of the set of CPUs of ``(first, last)`` runs in any order: sorted, disjoint,
    non-adjacent runs."""
    out = []
    for lo, hi in sorted(runs):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return CpuSeq(out)


def _range(run):
    return range(run[0], run[1] + 1)


class CpuSeq(object):
    """An ordered sequence of CPU ids kept as canonical runs (see the module docstring).

    ``runs`` is a tuple of ``(first, last)`` with ``first <= last`` where no run continues the
    previous one, so two sequences are equal exactly when their runs are. ``normal`` is True
    when the ids ascend without duplicates (the sequence is also a sorted set).
    """

    __slots__ = ("runs", "size", "normal")

    def __init__(self, runs=()):
        """``runs`` must already be canonical; use ``from_runs`` or ``from_cpus`` otherwise."""
        self.runs = tuple(runs)
        size = 0
        normal = True
        prev = None
        for lo, hi in self.runs:
            size += hi - lo + 1
            if prev is not None and lo <= prev:
                normal = False
            prev = hi
        self.size = size
        self.normal = normal

    @classmethod
    def from_runs(cls, runs):
        """From any ``(first, last)`` runs in sequence order (first <= last each)."""
        return cls(_join(runs))

    @classmethod
    def from_cpus(cls, cpus):
        """From CPU ids in sequence order (a list, a range, another CpuSeq...)."""
        if isinstance(cpus, CpuSeq):
            return cpus
        return cls(cpulist.runs(cpus))

    def __len__(self):
        return self.size

    def __iter__(self):
        return chain.from_iterable(map(_range, self.runs))

    def __repr__(self):
        # the list's text (``repr(list(self))``): vllm-ascend's log lines print slices of the
        # allowed CPUs
        return "[%s]" % join_ids(self, ", ")

    def __eq__(self, other):
        if isinstance(other, CpuSeq):
            return self.runs == other.runs
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(self.runs)

    def __contains__(self, cpu):
        if self.normal:
            index = bisect_right(self.runs, (cpu, _INF)) - 1
            return index >= 0 and cpu <= self.runs[index][1]
        return any(lo <= cpu <= hi for lo, hi in self.runs)

    def __add__(self, other):
        if not isinstance(other, CpuSeq):
            return NotImplemented
        return CpuSeq.from_runs(self.runs + other.runs)

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(self.size)
            if step != 1:
                raise ValueError("CpuSeq slices take no step")
            return self.part(start, stop)
        if index < 0:
            index += self.size
        if index < 0 or index >= self.size:
            raise IndexError("CpuSeq index out of range")
        for lo, hi in self.runs:
            length = hi - lo + 1
            if index < length:
                return lo + index
            index -= length
        raise IndexError("CpuSeq index out of range")

    def part(self, start, stop):
        """``self[start:stop]`` for ``0 <= start`` and ``stop <= len(self)``."""
        out = []
        offset = 0
        for lo, hi in self.runs:
            if offset >= stop:
                break
            length = hi - lo + 1
            first, last = max(start - offset, 0), min(stop - offset, length)
            if first < last:
                out.append((lo + first, lo + last - 1))
            offset += length
        # (the parts of canonical runs: only the ends are cut, so they stay apart)
        return CpuSeq(out)

    def sorted_unique(self):
        """The ascending set of the ids (``sorted(set(seq))``)."""
        return self if self.normal else union_runs(self.runs)


EMPTY = CpuSeq()


def parse_ordered(text, source="cpulist"):
    """``cpulist.parse_ordered`` as a CpuSeq (written order and duplicates kept; bounds and
    messages there)."""
    return CpuSeq.from_cpus(cpulist.parse_ordered(text, source))


def parse(text, source="cpulist"):
    """``cpulist.parse`` as a CpuSeq: sorted unique ids."""
    return parse_ordered(text, source).sorted_unique()


def parse_option(value, source="cpulist"):
    """The CPUs of an option or a fact as a sorted unique CpuSeq: cpulist text (``"0-3,8"``),
    one CPU id, or a list of CPU ids (ints or decimal strings). None stays None; anything
    else raises ParseError naming ``source``."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse(value, source)
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise ParseError(source, "%r is neither a cpulist nor a list of CPU ids" % (value,))
    if len(value) > cpulist.MAX_IDS:
        raise ParseError(source, "more than %d CPU ids" % cpulist.MAX_IDS)
    cpus = set()
    for item in value:
        if isinstance(item, bool) or not (isinstance(item, int) or (isinstance(item, str) and item.isdecimal())):
            raise ParseError(source, "%r is not a CPU id" % (item,))
        if isinstance(item, str):
            item = cpulist.cpu_id(item, source, item)
        if item < 0:
            raise ParseError(source, "%r is not a CPU id" % (item,))
        if item >= _MAX_CPUS:
            raise ParseError(source, "CPU id %d is beyond the kernel's limit (%d)" % (item, _MAX_CPUS - 1))
        cpus.add(item)
    return CpuSeq.from_cpus(sorted(cpus))


def join_ids(cpus, sep=" "):
    """``sep.join(str(c) for c in cpus)``."""
    return sep.join(map(str, cpus))


def format(cpus):  # pylint: disable=redefined-builtin
    """``cpulist.format`` (sorted unique cpulist text)."""
    return cpulist.format_runs(CpuSeq.from_cpus(cpus).sorted_unique().runs)


def format_ordered(cpus):
    """``cpulist.format_ordered`` (positional order kept)."""
    return cpulist.format_runs(CpuSeq.from_cpus(cpus).runs)


def sorted_unique(cpus):
    """``sorted(set(cpus))`` as a CpuSeq."""
    return CpuSeq.from_cpus(cpus).sorted_unique()


def sorted_all(cpus):
    """``sorted(cpus)`` keeping duplicates, as a CpuSeq."""
    cpus = CpuSeq.from_cpus(cpus)
    return cpus if cpus.normal else CpuSeq.from_cpus(sorted(cpus))


def _intersect_runs(runs, allowed):
    """The parts of ``runs`` (in their order) inside the normal run list ``allowed``."""
    out = []
    highs = [hi for dummy, hi in allowed]
    for lo, hi in runs:
        index = bisect_left(highs, lo)
        while index < len(allowed) and allowed[index][0] <= hi:
            a_lo, a_hi = allowed[index]
            out.append((max(lo, a_lo), min(hi, a_hi)))
            index += 1
    return out


def keep(cpus, allowed):
    """``[c for c in cpus if c in allowed]`` (order and duplicates of ``cpus`` kept)."""
    allowed = CpuSeq.from_cpus(allowed).sorted_unique()
    return CpuSeq.from_runs(_intersect_runs(CpuSeq.from_cpus(cpus).runs, allowed.runs))


def overlaps(cpus, allowed):
    """``any(c in allowed for c in cpus)``."""
    allowed = CpuSeq.from_cpus(allowed).sorted_unique()
    return bool(_intersect_runs(CpuSeq.from_cpus(cpus).runs, allowed.runs))


def subtract(cpus, removed):
    """``[c for c in cpus if c not in removed]`` (order and duplicates kept)."""
    removed = CpuSeq.from_cpus(removed).sorted_unique().runs
    out = []
    highs = [hi for dummy, hi in removed]
    for lo, hi in CpuSeq.from_cpus(cpus).runs:
        # the first removed run that reaches this run, then only those inside it
        index = bisect_left(highs, lo)
        while index < len(removed) and removed[index][0] <= hi:
            r_lo, r_hi = removed[index]
            if r_lo > lo:
                out.append((lo, r_lo - 1))
            lo = r_hi + 1
            index += 1
        if lo <= hi:
            out.append((lo, hi))
    return CpuSeq.from_runs(out)
