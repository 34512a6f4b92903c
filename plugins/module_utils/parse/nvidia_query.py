# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia-smi --query-gpu=<FIELDS> --format=csv,noheader,nounits`` -> GPU model and health.

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

FIELDS = ("index", "name", "pci.bus_id", "memory.total", "ecc.errors.uncorrected.volatile.total")
ARGV = ["nvidia-smi", "--query-gpu=" + ",".join(FIELDS), "--format=csv,noheader,nounits"]
SOURCE = " ".join(ARGV)
MAX_LINES = 1024
_INT = re.compile(r"^[0-9]{1,9}\Z")


def _value(text):
    text = text.strip()
    if not text or (text.startswith("[") and text.endswith("]")):
        return None
    return text


def parse(text):
    """``{index: {model, bus_id, memory_mb, ecc_uncorrected, health}}``; ParseError on a line
    that is not one GPU's fields."""
    out = {}
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        raise ParseError(SOURCE, "more than %d lines" % MAX_LINES)
    for number, line in enumerate(lines, 1):
        parts = [_value(p) for p in line.split(",")]
        if len(parts) != len(FIELDS) or parts[0] is None or not _INT.match(parts[0]):
            raise ParseError(SOURCE, "line %d: expected %d fields (%s), got %r"
                             % (number, len(FIELDS), ",".join(FIELDS), line[:120]))
        index, name, bus, memory, ecc = parts
        ecc_count = int(ecc) if ecc is not None and _INT.match(ecc) else None
        out[int(index)] = {
            "model": name[:100] if name else None,
            "bus_id": pci.normalise_bus_id(bus) if bus else None,
            "memory_mb": int(memory) if memory is not None and _INT.match(memory) else None,
            "ecc_uncorrected": ecc_count,
            "health": None if ecc_count is None else ("OK" if ecc_count == 0 else "Warning"),
        }
    return out
