# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decimal text of CPU ids and of runs of them, by lookup (the planners' hot paths).

A plan's cpulists, vllm-ascend's per-CPU log lines and the plan's keys name small ids over and
over: a table lookup is a fraction of ``str()`` or ``"%d"``. ``cpuset`` re-exports these.
Pure, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from itertools import chain

# decimal text of small CPU ids, and back: the ids of the usual "N-M" cpulists
DECIMAL = _DECIMAL = tuple(str(cpu) for cpu in range(2048))
ID_OF = dict((text, cpu) for cpu, text in enumerate(_DECIMAL))
_SMALL = len(_DECIMAL)
DASHED = _DASHED = tuple(text + "-" for text in _DECIMAL)  # "N-": a range's text, one "+"


def _range(run):
    return range(run[0], run[1] + 1)


def join_run(first, last, sep=" "):
    """``sep.join(str(c) for c in range(first, last + 1))``."""
    if 0 <= first and last < _SMALL:
        return sep.join(_DECIMAL[first:last + 1])
    return sep.join(map(str, range(first, last + 1)))


def join_runs(runs, sep=" "):
    """``sep.join`` of the ids of ``(first, last)`` runs, in order."""
    parts = []
    for lo, hi in runs:
        if lo < 0 or hi >= _SMALL:
            return sep.join(map(str, chain.from_iterable(map(_range, runs))))
        parts.append(sep.join(_DECIMAL[lo:hi + 1]))
    return sep.join(parts)


class _RunTexts(dict):
    """``(first, last)`` -> the run's cpulist text (``"N"`` or ``"N-M"``), ids 0 to 2047: a
    plan formats the same few runs many times. At most ``_RUN_TEXTS_MAX`` are kept."""

    __slots__ = ()

    def __missing__(self, run):
        lo, hi = run
        text = _DECIMAL[lo] if lo == hi else _DASHED[lo] + _DECIMAL[hi]
        if len(self) < _RUN_TEXTS_MAX:
            self[run] = text
        return text


_RUN_TEXTS_MAX = 1 << 16
_RUN_TEXT = _RunTexts().__getitem__


def runs_text(runs):
    """``cpulist.format_runs(runs)`` of runs of ids from 0 to 2047, their text looked up."""
    return ",".join(map(_RUN_TEXT, runs))
