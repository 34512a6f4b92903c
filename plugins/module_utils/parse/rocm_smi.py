# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``rocm-smi --showtopo``, ``--showbus`` and ``--showpidgpus`` text -> AMD Instinct GPU data.

``--showtopo`` prints fixed-width matrices under ``===== <title> =====`` banners ("Weight
between two GPUs", "Hops between two GPUs", "Link Type between two GPUs") and a "Numa Nodes"
block of ``GPU[n]<TAB><TAB>: (Topology) Numa Node: 0`` lines. It says nothing about NICs (the
facts take NICs from sysfs) and "Hops" is not a hop count (1 for every XGMI peer). A block
that cannot be read is reported in ``warnings``; ``ParseError`` only when no GPU is found.

``--showpidgpus`` (the binder's process query) has no real capture here: its parser follows
the format of rocm_smi_lib's ``python_smi_tools/rocm_smi.py`` (``showGpusByPid`` and
``printListLog``): ``PID <pid> is using <n> DRM device(s):`` then the n GPU indexes separated
by blanks (wrapped at the tool's line width), ``PID <pid> is using 0 DRM device(s)`` alone,
``No KFD PIDs currently running`` when there is no process.

Pure functions, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import pci

SOURCE = "rocm-smi --showtopo"
MAX_GPUS = 1024
_BANNER = re.compile(r"^=+\s*(.*?)\s*=+\s*\Z")
_HEADER = re.compile(r"^\s*(GPU\d{1,4}\s+)*GPU\d{1,4}\s*\Z")
_ROW = re.compile(r"^\s*GPU(\d{1,4})\s+(.*)\Z")
_NUMA = re.compile(r"^\s*GPU\[(\d{1,4})\]\s*:\s*\(Topology\)\s*Numa (Node|Affinity)\s*:\s*(-?\d{1,4})\s*\Z")
_BUS = re.compile(r"^\s*GPU\[(\d{1,4})\]\s*:\s*PCI Bus\s*:\s*(\S+)\s*\Z")
_SECTIONS = {"weight between two gpus": "weight", "hops between two gpus": "hops", "link type between two gpus": "link"}
_INT = re.compile(r"^\d{1,9}\Z")
_LINK = re.compile(r"^[A-Z][A-Z0-9]{0,15}\Z")


def _matrix(lines, kind, warnings):
    """{row index: {column index: cell}} of one matrix block."""
    header = None
    out = {}
    for line in lines:
        if not line.strip():
            continue
        if header is None:
            if _HEADER.match(line):
                header = [int(t[3:]) for t in line.split()]
            continue
        row = _ROW.match(line)
        if not row:
            warnings.append("%s: %s matrix: unreadable line %r" % (SOURCE, kind, line.strip()[:80]))
            continue
        cells = row.group(2).split()
        if len(cells) != len(header):
            warnings.append(
                "%s: %s matrix: GPU%s has %d cells for %d columns"
                % (SOURCE, kind, row.group(1), len(cells), len(header))
            )
            continue
        out[int(row.group(1))] = dict(zip(header, cells))
    return out


def _blocks(text):
    """[(title, [lines])] in order: the banner titles lower-cased."""
    blocks = []
    current = None
    for line in text.splitlines():
        banner = _BANNER.match(line.strip())
        if banner:
            current = (banner.group(1).lower(), [])
            blocks.append(current)
        elif current is not None:
            current[1].append(line.expandtabs(8))
    return blocks


def parse_showtopo(text, source=SOURCE):
    """``{gpus: [{index, name, numa_node, numa_affinity, links, weights}], warnings}``.

    ``links``: peer name (``GPU3``) -> link type (``XGMI``, ``PCIE``); ``weights``: peer ->
    weight (15 = one XGMI hop); ``numa_node`` None when rocm-smi prints -1 or nothing.
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    warnings = []
    matrices = {}
    numa = {}
    for title, lines in _blocks(text):
        kind = _SECTIONS.get(title)
        if kind:
            matrices[kind] = _matrix(lines, kind, warnings)
        elif title == "numa nodes":
            for line in lines:
                found = _NUMA.match(line)
                if found:
                    value = int(found.group(3))
                    numa.setdefault(int(found.group(1)), {})[found.group(2).lower()] = value if value >= 0 else None
                elif line.strip():
                    warnings.append("%s: Numa Nodes: unreadable line %r" % (source, line.strip()[:80]))
    indexes = set(numa)
    for rows in matrices.values():
        indexes.update(rows)
    if not indexes:
        raise ParseError(source, "no GPU found (not rocm-smi --showtopo output?)")
    if len(indexes) > MAX_GPUS or max(indexes) >= MAX_GPUS:
        raise ParseError(source, "more than %d GPUs" % MAX_GPUS)
    gpus = []
    for index in sorted(indexes):
        links, weights = {}, {}
        for peer, cell in sorted((matrices.get("link") or {}).get(index, {}).items()):
            if peer != index and _LINK.match(cell):
                links["GPU%d" % peer] = cell
        for peer, cell in sorted((matrices.get("weight") or {}).get(index, {}).items()):
            if peer != index and _INT.match(cell):
                weights["GPU%d" % peer] = int(cell)
        node = numa.get(index, {})
        gpus.append(
            {
                "index": index,
                "name": "GPU%d" % index,
                "numa_node": node.get("node"),
                "numa_affinity": node.get("affinity"),
                "links": links,
                "weights": weights,
            }
        )
    if "link" not in matrices:
        warnings.append("%s: no Link Type matrix" % source)
    if not numa:
        warnings.append("%s: no Numa Nodes block" % source)
    return {"gpus": gpus, "warnings": warnings}


def parse_showbus(text, source="rocm-smi --showbus"):
    """``GPU[n] : PCI Bus: 0000:05:00.0`` lines -> {index: normalised bus id}."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    buses = {}
    for line in text.splitlines():
        found = _BUS.match(line)
        if found:
            bus = pci.normalise_bus_id(found.group(2))
            if bus is None:
                raise ParseError(source, "GPU[%s]: %r is not a PCI bus id" % (found.group(1), found.group(2)))
            buses[int(found.group(1))] = bus
    return buses


PIDGPUS_ARGV = ("rocm-smi", "--showpidgpus")
SOURCE_PIDGPUS = " ".join(PIDGPUS_ARGV)
_PID_GPUS = re.compile(r"^\s*PID (\d{1,10}) is using (\d{1,4}) DRM device\(s\):?\s*\Z")


def parse_showpidgpus(text, source=SOURCE_PIDGPUS):
    """``rocm-smi --showpidgpus`` -> {pid: [GPU index, ...]} (indexes in the tool's order, the
    facts' ``gpus[].index``); {} when no process runs. ParseError on a device list that is
    not the count of indexes it announces, and on text without the tool's block."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    found = {}
    seen_block = False
    want = None  # (pid, count) whose indexes are being read
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if want is not None and stripped and not _PID_GPUS.match(stripped) and not _BANNER.match(stripped):
            tokens = stripped.split()
            if not all(_INT.match(t) and int(t) < MAX_GPUS for t in tokens):
                raise ParseError(source, "line %d: %r is not a list of GPU indexes" % (number, stripped[:80]))
            found[want[0]].extend(int(t) for t in tokens)
            if len(found[want[0]]) > want[1]:
                raise ParseError(source, "PID %d: more GPUs listed than the %d announced" % (want[0], want[1]))
            if len(found[want[0]]) == want[1]:
                want = None
            continue
        if want is not None:
            raise ParseError(source, "PID %d: %d GPUs announced, %d listed" % (want[0], want[1], len(found[want[0]])))
        match = _PID_GPUS.match(stripped)
        if match:
            seen_block = True
            pid, count = int(match.group(1)), int(match.group(2))
            found[pid] = []
            want = (pid, count) if count else None
        elif "GPUs Indexed by PID" in stripped or stripped == "No KFD PIDs currently running":
            seen_block = True
    if want is not None:
        raise ParseError(source, "PID %d: %d GPUs announced, %d listed" % (want[0], want[1], len(found[want[0]])))
    if not seen_block:
        raise ParseError(source, "no 'GPUs Indexed by PID' block")
    return found


# the inventory columns: one call, three sections (rocm_smi_lib's python_smi_tools/rocm_smi.py
# prints each as ``GPU[n]<TAB><TAB>: <Key>: <value>`` lines, the driver as one
# ``Driver version: <v>`` line of the "Version of System Component" section)
INVENTORY_ARGV = ("rocm-smi", "--showdriverversion", "--showvbios", "--showproductname")
SOURCE_INVENTORY = " ".join(INVENTORY_ARGV)
_GPU_KEY = re.compile(r"^\s*GPU\[(\d{1,4})\]\s*:\s*([A-Za-z][A-Za-z ]{0,40}?)\s*:\s*(.*?)\s*\Z")
_DRIVER = re.compile(r"^\s*Driver version\s*:\s*(\S{1,64})\s*\Z")
_INVENTORY_KEYS = {"card series": "model", "card model": "device_id", "card sku": "sku", "vbios version": "vbios"}


def parse_inventory(text, source=SOURCE_INVENTORY):
    """``rocm-smi --showdriverversion --showvbios --showproductname`` -> ``{"driver": str|None,
    "gpus": [{"index", "model", "device_id", "sku", "vbios"}]}`` by index (a key the tool did
    not print is absent). ``model`` is the "Card series" line (the product name on Instinct cards; "Card
    model" is a PCI device id there). ParseError when neither the driver nor a GPU line is found."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    driver = None
    gpus = {}
    for line in text.splitlines():
        match = _DRIVER.match(line)
        if match:
            driver = match.group(1)
            continue
        match = _GPU_KEY.match(line)
        if not match:
            continue
        key = _INVENTORY_KEYS.get(" ".join(match.group(2).lower().split()))
        value = match.group(3).strip()
        if key is None or not value or value.upper() in ("N/A", "NA"):
            continue
        if len(gpus) >= MAX_GPUS and int(match.group(1)) not in gpus:
            raise ParseError(source, "more than %d GPUs" % MAX_GPUS)
        index = int(match.group(1))
        gpus.setdefault(index, {"index": index})[key] = value[:100]
    if driver is None and not gpus:
        raise ParseError(source, "no 'Driver version:' line and no 'GPU[n] : Card series / VBIOS version' line")
    return {"driver": driver, "gpus": [gpus[i] for i in sorted(gpus)]}
