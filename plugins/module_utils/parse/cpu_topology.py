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

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist, nodemap
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

# the files and commands these parsers read (``model/cpu_facts`` reads them), the sources of
# their errors
SRC_STATUS = "/proc/self/status"
SRC_ONLINE = "/sys/devices/system/cpu/online"
LSCPU_ARGV = ("lscpu",)
LSCPU_E_ARGV = ("lscpu", "-e=CPU,NODE")
SRC_LSCPU, SRC_LSCPU_E = " ".join(LSCPU_ARGV), " ".join(LSCPU_E_ARGV)

_NODE_LINE = re.compile(r"^NUMA node(\d+) CPU\(s\):\s*(.*)\Z")
_NODE_DIR = re.compile(r"^node([0-9]{1,4})\Z")
_UINT = re.compile(r"^[0-9]{1,6}\Z")  # a count or a distance: ASCII digits, bounded for int()


def node_id(text, source):
    """A NUMA node id from its decimal text; ParseError beyond the kernel's limit."""
    if not _UINT.match(text) or int(text) >= nodemap.MAX_NODES:
        raise ParseError(
            source, "NUMA node id %r is beyond the kernel's limit (%d)" % (text[:12], nodemap.MAX_NODES - 1)
        )
    return int(text)


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
        if match and int(match.group(1)) < nodemap.MAX_NODES:
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
        if len(parts) != 2 or not parts[0].isdecimal() or not parts[1].isdecimal():
            raise ParseError(source, "line %d: expected 'CPU NODE' integers, got %r" % (number, line[:40]))
        where = "%s line %d" % (source, number)
        nodes.setdefault(node_id(parts[1], where), []).append(cpulist.cpu_id(parts[0], where, line))
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
            nodes[node_id(match.group(1), "%s line %d" % (source, number))] = cpulist.format(
                cpulist.parse(match.group(2).strip(), "%s line %d" % (source, number))
            )
            continue
        key, sep, value = line.partition(":")
        if sep and key:
            fields.setdefault(key.strip(), value.strip())
    known = (
        "Architecture",
        "CPU(s)",
        "On-line CPU(s) list",
        "Thread(s) per core",
        "Model name",
        "NUMA node(s)",
        "Socket(s)",
        "Core(s) per socket",
        "Vendor ID",
    )
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
        "cpus": int(cpus) if _UINT.match(cpus) else None,
        "online": online,
        "threads_per_core": int(tpc) if _UINT.match(tpc) else None,
        "model": model,
        "numa_nodes": sorted_nodes(nodes),
    }


NUMACTL_ARGV = ("numactl", "-H")
SRC_NUMACTL = " ".join(NUMACTL_ARGV)
_NUMACTL_ROW = re.compile(r"^\s*(\d+):\s*(.*)\Z")


def parse_kernel_cpulist(text, source):
    """A sysfs cpulist that may be unset (``/sys/devices/system/cpu/isolated``, ``nohz_full``):
    ``""`` and ``"(null)"`` (older kernels print it for nohz_full) give ``""``."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    text = text.strip()
    if text == "(null)":
        return ""
    return cpulist.format(cpulist.parse(text, source))


def parse_distance_row(text, source):
    """One row of the SLIT table, ``/sys/devices/system/node/node<N>/distance``:
    ``"10 11 24 25"`` -> ``[10, 11, 24, 25]`` (one entry per online node, in node order)."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    tokens = text.split()
    if not tokens or not all(_UINT.match(t) for t in tokens):
        raise ParseError(source, "expected node distances (integers), got %r" % text.strip()[:60])
    return [int(t) for t in tokens]


def distance_table(rows, source):
    """``{node: [distances]}`` (sysfs rows; column k = the k-th node id in order) ->
    ``{"<node>": {"<node>": distance}}``. Raises ParseError when a row's length is wrong."""
    ids = sorted(rows)
    table = {}
    for node in ids:
        row = rows[node]
        if len(row) != len(ids):
            raise ParseError(source, "node %d lists %d distances for %d nodes" % (node, len(row), len(ids)))
        table[str(node)] = dict((str(other), value) for other, value in zip(ids, row))
    return table


def parse_numactl_distances(text, source=SRC_NUMACTL):
    """The ``node distances:`` block of ``numactl -H`` -> ``{"<node>": {"<node>": distance}}``.

    Raises ParseError when the block is missing, a row is ragged or a node has no row.
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    lines = text.splitlines()
    start = None
    for index, line in enumerate(lines):
        if line.strip() == "node distances:":
            start = index
            break
    if start is None or start + 1 >= len(lines):
        raise ParseError(source, "no 'node distances:' block")
    header = lines[start + 1].split()
    if not header or header[0] != "node" or not all(_UINT.match(t) for t in header[1:]) or len(header) < 2:
        raise ParseError(source, "bad distance header %r" % lines[start + 1].strip()[:60])
    ids = [int(t) for t in header[1:]]
    if len(set(ids)) != len(ids):
        raise ParseError(source, "node listed twice in the distance header")
    table = {}
    for line in lines[start + 2 :]:
        match = _NUMACTL_ROW.match(line)
        if not match:
            break
        node = node_id(match.group(1), source)
        values = match.group(2).split()
        if node not in ids or str(node) in table:
            raise ParseError(source, "unexpected distance row for node %d" % node)
        if len(values) != len(ids) or not all(_UINT.match(v) for v in values):
            raise ParseError(
                source, "node %d: expected %d distances, got %r" % (node, len(ids), match.group(2).strip()[:60])
            )
        table[str(node)] = dict((str(other), int(v)) for other, v in zip(ids, values))
    missing = [n for n in ids if str(n) not in table]
    if missing:
        raise ParseError(source, "no distance row for node(s) %s" % missing)
    return dict((str(n), table[str(n)]) for n in sorted(ids))
