# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia-smi --query-gpu=<FIELDS> --format=csv,noheader,nounits`` -> GPU model, health and
the driver and VBIOS versions (the inventory columns).

One line per GPU, the fields in ``FIELDS`` order, separated by ``, ``; a value the GPU does not
report is ``[N/A]`` or ``[Not Supported]`` (None here). Health: ``Warning`` when the GPU counted
uncorrectable ECC errors since the driver loaded (drain it and reset it), ``OK`` when it counted
none, None when it does not report ECC. Pure, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import pci

# field names as ``nvidia-smi --help-query-gpu`` lists them; new fields go at the end
FIELDS = (
    "index",
    "name",
    "pci.bus_id",
    "memory.total",
    "ecc.errors.uncorrected.volatile.total",
    "driver_version",
    "vbios_version",
)
ARGV = ["nvidia-smi", "--query-gpu=" + ",".join(FIELDS), "--format=csv,noheader,nounits"]
SOURCE = " ".join(ARGV)
MAX_LINES = 1024
_INT = re.compile(r"^[0-9]{1,9}\Z")


_UNIT = re.compile(r"^(.*?)\s*\[([^\]]{1,16})\]\Z")


def _value(text, unit=None):
    text = text.strip()
    if not text or (text.startswith("[") and text.endswith("]")):
        return None
    if unit and text.endswith(" " + unit):  # ``--format=csv`` without ``nounits``: "10240 MiB"
        text = text[: -len(unit) - 1].strip()
    return text


def read_csv(text, fields=None, source=SOURCE):
    """Rows of ``--query-gpu`` CSV output as ``[{field: value or None}]``. ``fields``: the
    fields asked, in order (``noheader``); None: the first line is nvidia-smi's header
    (``memory.total [MiB]``: the unit is taken off each value of that column). ParseError on a
    line without one value per field."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        raise ParseError(source, "more than %d lines" % MAX_LINES)
    units = {}
    if fields is None:
        if not lines:
            raise ParseError(source, "no header line")
        fields = []
        for cell in lines.pop(0).split(","):
            match = _UNIT.match(cell.strip())
            name = match.group(1) if match else cell.strip()
            fields.append(name)
            if match:
                units[name] = match.group(2)
    rows = []
    for number, line in enumerate(lines, 1):
        cells = line.split(",")
        if len(cells) != len(fields):
            raise ParseError(
                source, "line %d: expected %d fields (%s), got %r" % (number, len(fields), ",".join(fields), line[:120])
            )
        rows.append(dict((f, _value(c, units.get(f))) for f, c in zip(fields, cells)))
    return rows


def _int(text):
    return int(text) if text is not None and _INT.match(text) else None


def parse(text):
    """``{index: {model, bus_id, memory_mb, ecc_uncorrected, health, driver, vbios}}`` of
    ``ARGV``'s output; ParseError on a line that is not one GPU's fields."""
    out = {}
    for number, row in enumerate(read_csv(text, FIELDS), 1):
        index = _int(row["index"])
        if index is None:
            raise ParseError(SOURCE, "line %d: GPU index %r is not a number" % (number, (row["index"] or "")[:20]))
        name, bus = row["name"], row["pci.bus_id"]
        ecc_count = _int(row["ecc.errors.uncorrected.volatile.total"])
        driver, vbios = row["driver_version"], row["vbios_version"]
        out[index] = {
            "model": name[:100] if name else None,
            "bus_id": pci.normalise_bus_id(bus) if bus else None,
            "memory_mb": _int(row["memory.total"]),
            "ecc_uncorrected": ecc_count,
            "health": None if ecc_count is None else ("OK" if ecc_count == 0 else "Warning"),
            "driver": driver[:64] if driver else None,
            "vbios": vbios[:64] if vbios else None,
        }
    return out
