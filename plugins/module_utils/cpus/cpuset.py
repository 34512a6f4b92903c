# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU id sequences stored as runs of consecutive ids, for the planners' hot paths.

A ``CpuSeq`` is an ordered sequence of CPU ids (duplicates and any order allowed, as
vllm-ascend's positional pools need) kept as runs ``((first, last), ...)``. It supports the
list operations the allocators use - ``len``, indexing, slicing, ``+``, iteration, ``in``,
equality with lists - at a cost per run instead of per CPU, so a 640-CPU host plans as fast
as an 8-CPU one. The module functions take a ``CpuSeq`` or a plain list/set: lists keep the
original per-CPU expressions (the policies' unit tests call them with lists), ``CpuSeq``
values take the run path. ``nodemap.NodeMap`` replaces the per-CPU ``{cpu: node}`` dict.

The dispatch tests ``value.__class__ is CpuSeq`` (nothing subclasses it): on the planners' hot
paths that is cheaper than calling ``isinstance``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from bisect import bisect_left, bisect_right
from itertools import chain

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
# the decimal text of ids and of runs (re-exported: callers read them as cpuset.DECIMAL...)
from ansible_collections.npuops.fleet.plugins.module_utils.cpus.cputext import (  # noqa: F401 pylint: disable=unused-import
    DECIMAL, DASHED, ID_OF, join_run, join_runs, runs_text)
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError


_INF = float("inf")
_MAX_CPUS = cpulist.MAX_CPUS
_DECIMAL, _ID_OF, _SMALL = DECIMAL, ID_OF, len(DECIMAL)


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
    non-adjacent runs, its size counted in the same pass."""
    if not runs:
        return EMPTY
    ordered = sorted(runs)
    out = []
    size = 0
    lo, hi = ordered[0]  # the run being grown
    for next_lo, next_hi in ordered:
        if next_lo <= hi + 1:
            if next_hi > hi:
                hi = next_hi
        else:
            out.append((lo, hi))
            size += hi - lo + 1
            lo, hi = next_lo, next_hi
    out.append((lo, hi))
    return known(tuple(out), size + hi - lo + 1)


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
        if runs.__class__ is not tuple:
            runs = tuple(runs)
        self.runs = runs
        if len(runs) == 1:
            # the usual pool: one contiguous run
            self.size = runs[0][1] - runs[0][0] + 1
            self.normal = True
            return
        size = 0
        normal = True
        prev = None
        for lo, hi in runs:
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
        if cpus.__class__ is CpuSeq:
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
        if other.__class__ is not CpuSeq:
            return NotImplemented
        if not other.runs:
            return self
        if not self.runs:
            return other
        last = self.runs[-1]
        first = other.runs[0]
        normal = self.normal and other.normal and last[1] < first[0]
        if last[1] + 1 == first[0]:
            return known(self.runs[:-1] + ((last[0], first[1]),) + other.runs[1:],
                         self.size + other.size, normal)
        return known(self.runs + other.runs, self.size + other.size, normal)

    def __getitem__(self, index):
        if index.__class__ is slice:
            start, stop, step = index.indices(self.size)
            if step != 1:
                raise ValueError("CpuSeq slices take no step")
            return self.part(start, stop)
        if index < 0:
            index += self.size
        if index < 0 or index >= self.size:
            raise IndexError("CpuSeq index out of range")
        if len(self.runs) == 1:
            return self.runs[0][0] + index
        for lo, hi in self.runs:
            length = hi - lo + 1
            if index < length:
                return lo + index
            index -= length
        raise IndexError("CpuSeq index out of range")

    def part(self, start, stop):
        """``self[start:stop]`` for ``0 <= start`` and ``stop <= len(self)`` (the planners'
        shares), without a slice object."""
        runs = self.runs
        if len(runs) == 1:
            if 0 < stop - start < self.size:
                # a part of one contiguous run (a share, a role): plain arithmetic
                first = runs[0][0]
                return known(((first + start, first + stop - 1),), stop - start)
        elif len(runs) > 1 and 0 < stop - start < self.size:
            # CPUs cut from the ends only (the main role of a pool): whole runs dropped from
            # each end, then the first and the last kept run trimmed
            length = stop - start
            tail = self.size - stop
            first, last = 0, len(runs) - 1
            lo, hi = runs[0]
            while start > hi - lo:
                start -= hi - lo + 1
                first += 1
                lo, hi = runs[first]
            last_lo, last_hi = runs[last]
            while tail > last_hi - last_lo:
                tail -= last_hi - last_lo + 1
                last -= 1
                last_lo, last_hi = runs[last]
            if first == last:
                return known(((lo + start, hi - tail),), length)
            part = ((lo + start, hi),) + runs[first + 1:last] + ((last_lo, last_hi - tail),)
            # (a part of an ascending sequence ascends; of another, its runs tell)
            return known(part, length) if self.normal else CpuSeq(part)
        return self if start == 0 and stop >= self.size else EMPTY  # all of it, or nothing

    def first_two(self):
        """``(self[0], self[1])``; the sequence holds at least two ids."""
        lo, hi = self.runs[0]
        if hi > lo:
            return lo, lo + 1
        return lo, self.runs[1][0]

    def last_two(self):
        """``(self[-2], self[-1])``; the sequence holds at least two ids."""
        lo, hi = self.runs[-1]
        if hi > lo:
            return hi - 1, hi
        return self.runs[-2][1], hi

    def sorted_unique(self):
        """The ascending set of the ids (``sorted(set(seq))``)."""
        return self if self.normal else union_runs(self.runs)


_new = object.__new__


def known(runs, size, normal=True):
    """The CpuSeq of canonical ``runs`` (a tuple) whose ``size`` and order (``normal``) the
    caller has at hand: no pass over the runs to count them."""
    seq = _new(CpuSeq)
    seq.runs = runs
    seq.size = size
    seq.normal = normal
    return seq


EMPTY = CpuSeq()


def parse_ordered(text, source="cpulist"):
    """``cpulist.parse_ordered`` as a CpuSeq (written order and duplicates kept).

    Plain ``N`` / ``N-M`` items are read here; anything else (blanks, strides, errors) goes
    through ``cpulist.parse_ordered``, which raises the same ParseError as before.
    """
    if text.__class__ is str:
        first, dash, last = text.partition("-")
        lo = _ID_OF.get(first)
        if lo is not None and dash:
            # one "N-M" range of canonical ids: the usual NUMA node, topo affinity or allowed
            hi = _ID_OF.get(last)
            if hi is not None and lo <= hi:
                return known(((lo, hi),), hi - lo + 1)
    if isinstance(text, str) and text:
        first, dash, last = text.partition("-")
        if dash and first.isdecimal() and last.isdecimal() and len(first) < 5 and len(last) < 5:
            # one "N-M" range: the usual NUMA node, topo affinity or allowed CPUs
            lo, hi = int(first), int(last)
            if lo <= hi < _MAX_CPUS:
                return known(((lo, hi),), hi - lo + 1)
        runs = []
        size = 0
        for part in text.split(","):
            if part.isdecimal() and len(part) < 5:
                cpu = int(part)
                if cpu >= _MAX_CPUS:
                    break
                runs.append((cpu, cpu))
                size += 1
                continue
            first, dash, last = part.partition("-")
            # "N-M" only: a second "-" leaves a non-decimal ``last``
            if not dash or not first.isdecimal() or not last.isdecimal() or len(first) > 4 \
                    or len(last) > 4:
                break
            lo, hi = int(first), int(last)
            if hi < lo or hi >= _MAX_CPUS:
                break
            runs.append((lo, hi))
            size += hi - lo + 1
        else:
            if size > cpulist.MAX_IDS:
                raise cpulist.too_many(source, text)
            return CpuSeq(runs) if len(runs) == 1 else CpuSeq.from_runs(runs)
    # blanks, strides and every error: the reference parser (bounds and messages there)
    return CpuSeq.from_cpus(cpulist.parse_ordered(text, source))


def parse(text, source="cpulist"):
    """``cpulist.parse`` as a CpuSeq: sorted unique ids."""
    seq = parse_ordered(text, source)
    return seq if seq.normal else seq.sorted_unique()


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
        if isinstance(item, bool) or not (isinstance(item, int) or
                                          (isinstance(item, str) and item.isdecimal())):
            raise ParseError(source, "%r is not a CPU id" % (item,))
        if isinstance(item, str):
            item = cpulist.cpu_id(item, source, item)
        if item < 0:
            raise ParseError(source, "%r is not a CPU id" % (item,))
        if item >= _MAX_CPUS:
            raise ParseError(source, "CPU id %d is beyond the kernel's limit (%d)"
                             % (item, _MAX_CPUS - 1))
        cpus.add(item)
    return CpuSeq.from_cpus(sorted(cpus))


def join_ids(cpus, sep=" "):
    """``sep.join(str(c) for c in cpus)``."""
    if cpus.__class__ is CpuSeq:
        return join_runs(cpus.runs, sep)
    return sep.join(map(str, cpus))


def _text(seq):
    """``cpulist.format_runs(seq.runs)``; an ascending sequence of ids below 2048 (a plan's
    cpulists) by lookup."""
    runs = seq.runs
    if seq.normal and runs and runs[0][0] >= 0 and runs[-1][1] < _SMALL:
        return runs_text(runs)
    return cpulist.format_runs(runs)


def format(cpus):  # pylint: disable=redefined-builtin
    """``cpulist.format`` (sorted unique cpulist text); a CpuSeq is formatted per run."""
    if cpus.__class__ is CpuSeq:
        return _text(cpus.sorted_unique())
    return cpulist.format(cpus)


def format_ordered(cpus):
    """``cpulist.format_ordered`` (positional order kept); a CpuSeq is formatted per run."""
    if cpus.__class__ is CpuSeq:
        return _text(cpus)
    return cpulist.format_ordered(cpus)


def sorted_unique(cpus):
    """``sorted(set(cpus))``; a CpuSeq stays a CpuSeq."""
    if cpus.__class__ is CpuSeq:
        return cpus.sorted_unique()
    return sorted(set(cpus))


def sorted_all(cpus):
    """``sorted(cpus)`` keeping duplicates; a CpuSeq stays a CpuSeq."""
    if cpus.__class__ is not CpuSeq:
        return sorted(cpus)
    if cpus.normal:
        return cpus
    runs = sorted(cpus.runs)
    if all(runs[i][0] > runs[i - 1][1] for i in range(1, len(runs))):
        return CpuSeq.from_runs(runs)
    # overlapping runs (duplicate ids): rare enough to expand
    return CpuSeq.from_cpus(sorted(cpus))


def as_set(cpus):
    """Something answering ``in`` for the ids: a set stays, a CpuSeq becomes its sorted set."""
    if cpus.__class__ is CpuSeq:
        return cpus.sorted_unique()
    if isinstance(cpus, (set, frozenset)):
        return cpus
    return set(cpus)


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
    if cpus.__class__ is CpuSeq and allowed.__class__ is CpuSeq:
        allowed = allowed.sorted_unique()
        runs = cpus.runs
        if len(allowed.runs) == 1 and runs:
            a_lo, a_hi = allowed.runs[0]
            if cpus.normal:
                # ascending: the first and the last run bound all the others
                if a_lo <= runs[0][0] and runs[-1][1] <= a_hi:
                    return cpus
            elif all(a_lo <= lo and hi <= a_hi for lo, hi in runs):
                return cpus
        kept = _intersect_runs(runs, allowed.runs)
        # (parts of ascending runs stay apart: already canonical)
        return CpuSeq(kept) if cpus.normal else CpuSeq.from_runs(kept)
    return [c for c in cpus if c in allowed]


def overlaps(cpus, allowed):
    """``any(c in allowed for c in cpus)``."""
    if cpus.__class__ is CpuSeq and allowed.__class__ is CpuSeq:
        return bool(_intersect_runs(cpus.runs, allowed.sorted_unique().runs))
    return any(c in allowed for c in cpus)


def subtract(cpus, removed):
    """``[c for c in cpus if c not in removed]`` (order and duplicates kept)."""
    if cpus.__class__ is CpuSeq and removed.__class__ is CpuSeq:
        runs = cpus.runs
        if len(runs) == 1 and len(removed.runs) == 1:
            # one run less one run (a carve from a pool, reserved CPUs): at most two pieces,
            # apart by the removed run, so already canonical
            (lo, hi), (r_lo, r_hi) = runs[0], removed.runs[0]
            if r_hi < lo or hi < r_lo:
                return cpus
            if lo < r_lo:
                if r_hi < hi:
                    return known(((lo, r_lo - 1), (r_hi + 1, hi)), r_lo - lo + hi - r_hi)
                return known(((lo, r_lo - 1),), r_lo - lo)
            return known(((r_hi + 1, hi),), hi - r_hi) if r_hi < hi else EMPTY
        left = _subtract_runs(runs, removed.sorted_unique().runs)
        # (parts of ascending runs stay apart: already canonical)
        return CpuSeq(left) if cpus.normal else CpuSeq.from_runs(left)
    removed = as_set(removed)
    return [c for c in cpus if c not in removed]


def _subtract_runs(runs, removed):
    """The parts of ``runs`` (in their order) outside the normal run list ``removed``: per run,
    a bisection to the first removed run that reaches it, then only the removed runs inside."""
    out = []
    count = len(removed)
    highs = [hi for dummy, hi in removed]
    for lo, hi in runs:
        index = bisect_left(highs, lo)
        while index < count and removed[index][0] <= hi:
            r_lo, r_hi = removed[index]
            if r_lo > lo:
                out.append((lo, r_lo - 1))
            lo = r_hi + 1
            index += 1
        if lo <= hi:
            out.append((lo, hi))
    return out


def concat(first, second):
    """``first + second`` as a CpuSeq when both are, else as a list."""
    if first.__class__ is CpuSeq and second.__class__ is CpuSeq:
        return first + second
    return list(first) + list(second)


def seq_key(cpus):
    """A hashable key equal for two sequences exactly when they hold the same ids in order."""
    return CpuSeq.from_cpus(cpus).runs
