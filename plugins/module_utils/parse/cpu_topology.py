# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU and NUMA topology parsers (text -> plain data).

Sources, best first: ``/proc/self/status`` (Cpus_allowed_list), ``/sys/devices/system/cpu/
online``, sysfs ``node<N>/cpulist``, ``lscpu -e=CPU,NODE``, ``lscpu`` summary lines
("NUMA node3 CPU(s): 144-191"). NUMA ids need not be contiguous; memory-only nodes (GH200)
have an empty cpulist. Cpulists are returned as kernel-style strings.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

SRC_STATUS = "/proc/self/status"
SRC_ONLINE = "/sys/devices/system/cpu/online"
SRC_LSCPU = "lscpu"
SRC_LSCPU_E = "lscpu -e=CPU,NODE"

_NODE_LINE = re.compile(r"^NUMA node(\d+) CPU\(s\):\s*(.*)\Z")
_NODE_DIR = re.compile(r"^node(\d+)\Z")


def parse_status(text, source=SRC_STATUS):
    """Cpus_allowed_list of ``/proc/self/status`` as a normalised cpulist string."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    for line in text.splitlines():
        if line.startswith("Cpus_allowed_list"):
            _key, _sep, value = line.partition(":")
            if not value.strip():
                raise ParseError(source, "empty Cpus_allowed_list")
            return cpulist.format(cpulist.parse(value.strip(), source))
    raise ParseError(source, "no Cpus_allowed_list line")


def parse_cpulist_file(text, source=SRC_ONLINE):
    """A sysfs cpulist file (``cpu/online``, ``node3/cpulist``); ``""`` for an empty one."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    return cpulist.format(cpulist.parse(text.strip(), source))


def node_ids(names):
    """NUMA node ids from the entry names of ``/sys/devices/system/node`` (sorted)."""
    ids = []
    for name in names or ():
        match = _NODE_DIR.match(name)
        if match:
            ids.append(int(match.group(1)))
    return sorted(ids)


def sorted_nodes(nodes):
    """``{id: cpulist}`` with string keys, ordered numerically."""
    return dict((str(k), nodes[k]) for k in sorted(nodes, key=int))


def parse_lscpu_e(text, source=SRC_LSCPU_E):
    """``lscpu -e=CPU,NODE`` -> ``{"<node>": cpulist}`` (vllm-ascend's rules: lines not
    starting with a digit are skipped; the others must be exactly two integers)."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    nodes = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or not line[0].isdigit():
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit():
            raise ParseError(source, "line %d: expected 'CPU NODE' integers, got %r" % (number, line[:40]))
        nodes.setdefault(int(parts[1]), []).append(int(parts[0]))
    if not nodes:
        raise ParseError(source, "no NUMA node available")
    return sorted_nodes(dict((k, cpulist.format(v)) for k, v in nodes.items()))


def parse_lscpu(text, source=SRC_LSCPU):
    """``lscpu`` summary -> ``{"arch", "cpus", "online", "threads_per_core", "model",
    "numa_nodes"}`` (each None / {} when absent). Memory-only nodes map to ``""``.

    Raises ParseError when the text holds no lscpu field at all.
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    fields = {}
    nodes = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        match = _NODE_LINE.match(line)
        if match:
            nodes[int(match.group(1))] = cpulist.format(
                cpulist.parse(match.group(2).strip(), "%s line %d" % (source, number)))
            continue
        key, sep, value = line.partition(":")
        if sep and key:
            fields.setdefault(key.strip(), value.strip())
    known = ("Architecture", "CPU(s)", "On-line CPU(s) list", "Thread(s) per core", "Model name",
             "NUMA node(s)", "Socket(s)", "Core(s) per socket", "Vendor ID")
    if not nodes and not any(k in fields for k in known):
        raise ParseError(source, "no lscpu fields found")
    online = fields.get("On-line CPU(s) list")
    if online is not None:
        online = cpulist.format(cpulist.parse(online, source + " On-line CPU(s) list"))
    model = fields.get("Model name")
    if not model or model == "-":
        model = fields.get("BIOS Model name") or None
    tpc = fields.get("Thread(s) per core", "")
    cpus = fields.get("CPU(s)", "")
    return {
        "arch": fields.get("Architecture") or None,
        "cpus": int(cpus) if cpus.isdigit() else None,
        "online": online,
        "threads_per_core": int(tpc) if tpc.isdigit() else None,
        "model": model,
        "numa_nodes": sorted_nodes(nodes),
    }
