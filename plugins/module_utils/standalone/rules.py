# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The binder's own copies of the collection's cpulist and PCI bus-id rules (it runs on hosts
without the collection); ``test_binder_rules.py`` checks they agree with ``cpus/cpulist`` and
``parse/pci`` on the same inputs. Also the binder's one exception.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# patterns, compiled by re's own cache on first use: a reconcile run compiles only those it uses
_CPULIST_RE = r"^\d+(-\d+)?(,\d+(-\d+)?)*\Z"
_BUS_RE = r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\Z"
_SHORT_BUS_RE = r"^[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\Z"
_LONG_BUS_RE = r"^0000[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\Z"
# the kernel's NR_CPUS ceiling on the architectures we run on: bounds what a plan may name
MAX_CPU = 8191


class BindError(Exception):
    """A worker could not be bound, or the plan is unusable; the message says why."""


def parse_cpulist(text, source="cpulist"):
    """``"0-2,5"`` -> ``[0, 1, 2, 5]``; ints and empty values accepted."""
    if isinstance(text, int):
        return [text]
    text = str(text if text is not None else "").replace(" ", "")
    if not text:
        return []
    if not re.match(_CPULIST_RE, text):
        raise BindError("%s: %r is not a cpulist" % (source, text))
    cpus = set()
    for part in text.split(","):
        lo, _sep, hi = part.partition("-")
        if int(hi or lo) < int(lo):
            raise BindError("%s: descending range %r" % (source, part))
        if int(hi or lo) > MAX_CPU:
            raise BindError("%s: CPU %s is beyond the kernel's limit (%d)" % (source, hi or lo, MAX_CPU))
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def format_cpulist(cpus):
    parts = []
    for cpu in sorted(set(cpus)):
        if parts and parts[-1][1] == cpu - 1:
            parts[-1][1] = cpu
        else:
            parts.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in parts)


def normalise_bus_id(text):
    """Copy of parse/pci.normalise_bus_id: ``0000:c1:00.0`` form, 8-digit domain cut; else None."""
    text = (text or "").strip()
    if re.match(_SHORT_BUS_RE, text):
        text = "0000:" + text
    elif re.match(_LONG_BUS_RE, text):
        text = text[4:]
    return text.lower() if re.match(_BUS_RE, text) else None
