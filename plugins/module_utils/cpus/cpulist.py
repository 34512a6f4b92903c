# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Linux cpulist strings ("0-3,8,10-11") to and from lists of CPU ids.

CPU ids are bounded by the kernel's own limit: ``MAX_CPUS`` (8192, the largest ``NR_CPUS``
Linux builds with, ``CONFIG_MAXSMP``), so ids run from 0 to 8191; a cpulist may name at
most ``MAX_IDS`` ids in all (duplicates counted). Anything beyond is a ParseError naming the
source and the value, never a list that fills the memory.

Pure functions, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

# One item of a cpulist: "N" or "N-M"; the kernel also allows "N-M:S/G" (stride) in
# cpusets written by users, which we accept on input.
_ITEM = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*(?::\s*(\d+)\s*/\s*(\d+)\s*)?)?\Z")
MAX_CPUS = 8192  # CPU ids 0..8191 (Linux NR_CPUS is at most 8192)
MAX_IDS = 4 * MAX_CPUS  # ids one cpulist may expand to, duplicates included


def cpu_id(text, source, whole):
    """A CPU id from its decimal text; ParseError naming ``source`` and ``whole`` beyond
    ``MAX_CPUS - 1``."""
    if not text.isdecimal():
        raise ParseError(source, "%r in %r is not a CPU id" % (text[:12], _short(whole)))
    if len(text) > 5 or int(text) >= MAX_CPUS:
        raise ParseError(
            source,
            "CPU id %s in %r is beyond the kernel's limit (%d)"
            % (text[:12] + ("..." if len(text) > 12 else ""), _short(whole), MAX_CPUS - 1),
        )
    return int(text)


def _short(text):
    return text if len(text) <= 80 else text[:77] + "..."


def too_many(source, text):
    return ParseError(source, "%r names more than %d CPUs" % (_short(text), MAX_IDS))


def parse_ordered(text, source="cpulist"):
    """Expand a cpulist keeping the written order and duplicates (vllm-ascend's behaviour).

    ``"0-2, 4, 6-8"`` -> ``[0, 1, 2, 4, 6, 7, 8]``. An empty or blank string gives ``[]``.
    Raises ParseError naming ``source`` on anything that is not a cpulist.
    """
    if text is None:
        return []
    if not isinstance(text, str):
        raise ParseError(source, "expected a cpulist string, got %r" % (text,))
    text = text.strip()
    if not text:
        return []
    cpus = []
    for part in text.split(","):
        m = _ITEM.match(part)
        if not m:
            raise ParseError(source, "invalid cpulist item %r in %r" % (_short(part.strip()), _short(text)))
        lo = cpu_id(m.group(1), source, text)
        hi = cpu_id(m.group(2), source, text) if m.group(2) is not None else lo
        if hi < lo:
            raise ParseError(source, "descending range %r in %r" % (part.strip(), _short(text)))
        if m.group(3) is not None:
            used, group = cpu_id(m.group(3), source, text), cpu_id(m.group(4), source, text)
            if group == 0 or used == 0 or used > group:
                raise ParseError(source, "invalid stride %r in %r" % (part.strip(), _short(text)))
            cpus.extend(c for c in range(lo, hi + 1) if (c - lo) % group < used)
        else:
            cpus.extend(range(lo, hi + 1))
        if len(cpus) > MAX_IDS:
            raise too_many(source, text)
    return cpus


def parse(text, source="cpulist"):
    """Expand a cpulist into a sorted list of unique CPU ids."""
    return sorted(set(parse_ordered(text, source)))


def is_cpulist(text):
    """True when ``text`` is a non-empty cpulist (digits, ranges, commas)."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        parse_ordered(text)
    except ParseError:
        return False
    return True


def runs(cpus):
    """Consecutive ascending ids as ``(first, last)`` runs, in the given order.

    ``[0, 1, 2, 5, 3]`` -> ``[(0, 2), (5, 5), (3, 3)]``; duplicates stay (``[1, 1]`` -> two runs).
    """
    out = []
    lo = prev = None
    for cpu in cpus:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if prev is not None:
            out.append((lo, prev))
        lo = prev = cpu
    if prev is not None:
        out.append((lo, prev))
    return out


def format_runs(cpu_runs):
    """Cpulist text of runs in the given order (``((0, 3), (8, 8))`` -> ``"0-3,8"``)."""
    if len(cpu_runs) == 1:
        lo, hi = cpu_runs[0]
        return str(lo) if lo == hi else "%d-%d" % (lo, hi)
    return ",".join([str(lo) if lo == hi else "%d-%d" % (lo, hi) for lo, hi in cpu_runs])


def format(cpus):  # pylint: disable=redefined-builtin
    """Compress CPU ids into the kernel's cpulist form: ``[0,1,2,5]`` -> ``"0-2,5"``.

    Input order does not matter; duplicates are dropped. ``[]`` -> ``""``.
    """
    ids = sorted(set(int(c) for c in cpus))
    if ids and ids[-1] - ids[0] == len(ids) - 1:
        # one contiguous run (the usual pool): no scan needed
        return format_runs(((ids[0], ids[-1]),))
    return format_runs(runs(ids))


def format_ordered(cpus):
    """Cpulist text that keeps the given order (runs are compressed only when ascending).

    Used where position matters, e.g. vllm-ascend's unsorted multi-NUMA pools.
    """
    return format_runs(runs([int(c) for c in cpus]))


def to_mask(cpus):
    """Kernel hex mask (``/proc/irq/N/smp_affinity`` format): 32-bit groups, MSB group first.

    ``[3]`` -> ``"00000008"``; ``[35]`` -> ``"00000008,00000000"``.
    """
    ids = sorted(set(int(c) for c in cpus))
    if not ids:
        raise ValueError("an affinity mask needs at least one CPU")
    value = 0
    for cpu in ids:
        value |= 1 << cpu
    groups = []
    while value:
        groups.append("%08x" % (value & 0xFFFFFFFF))
        value >>= 32
    return ",".join(reversed(groups))


def from_mask(text, source="mask"):
    """Parse a kernel hex mask (``"00000008,00000000"``) into sorted CPU ids."""
    text = (text or "").strip()
    if not text:
        return []
    value = 0
    groups = text.split(",")
    if len(groups) > MAX_CPUS // 32:
        raise ParseError(source, "mask %r has more than %d CPUs" % (_short(text), MAX_CPUS))
    for group in groups:
        group = group.strip()
        if not re.match(r"^[0-9a-fA-F]{1,8}\Z", group):
            raise ParseError(source, "invalid mask group %r in %r" % (group, _short(text)))
        value = (value << 32) | int(group, 16)
    cpus = []
    cpu = 0
    while value:
        if value & 1:
            cpus.append(cpu)
        value >>= 1
        cpu += 1
    return cpus
