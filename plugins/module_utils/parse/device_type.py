# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ascend device type from what a host shows: A2 | A3 | A5 (Ascend 950) | 310P | 910A | unknown.

Evidence by strength (``detect``): the PCI device id (19e5:d801 910A, d802 A2, d803 A3, d500
310P; from sysfs or ``npu-smi info -t board``) > the chip name (the device plugin's rules after
stripping the ``Ascend`` prefix; ``910B*`` is A2 as in vllm-ascend) > dies per NPU (two dies
with their own bus ids: A3) > the header text (``Chip  Phy-ID``: npu-smi prints it for 0xd803,
but an A2 table with it exists in vllm-ascend's tests). The strongest evidence wins; weaker
evidence that disagrees gives a warning naming both.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

TYPES = ("A2", "A3", "A5", "310P", "910A", "unknown")

PCI_DEVICE_TYPES = {"d801": "910A", "d802": "A2", "d803": "A3", "d500": "310P"}

# vllm-ascend's SoC-name table (vllm_ascend/device/hardware.py _SOC_VERSION_TO_DEVICE_TYPE):
# 9362 is its last A3 name at 182b75ea; the 0.30 line adds ascend910_9363 (A3, runtime soc 256)
_A3_NAMES = ("910", "910C", "910_9391", "910_9392", "910_9372", "910_9362", "910_9363",
             "910_9381", "910_9382", "9391", "9392", "9372", "9362", "9363", "9381", "9382")


def normalise_name(name):
    """``"Ascend 910B4"`` / ``"Ascend910B4"`` -> ``"910B4"``; ``"Ascend950DT"`` -> ``"950DT"``."""
    text = "".join((name or "").split())
    if text.lower().startswith("ascend"):
        text = text[len("ascend"):]
    return text


def type_of_name(name):
    """Device type implied by one chip name, or None when the name says nothing (Mcu, xxx)."""
    text = normalise_name(name)
    upper = text.upper()
    if not text or upper == "MCU":
        return None
    if upper.startswith("950"):
        return "A5"
    if re.match(r"^(310P\d?|I2\d?)", upper):
        return "310P"
    if upper.startswith("310"):
        return "unknown"
    if re.match(r"^(910B\d|A2G\d)", upper):
        return "A2"
    if upper in _A3_NAMES:
        return "A3"
    if upper.startswith("910"):
        return "910A"
    return None


def type_of_pci_device(device_id):
    """``"0xd802"``/``"d802"`` -> ``"A2"``; None for anything else."""
    text = (device_id or "").strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    return PCI_DEVICE_TYPES.get(text)


# kinds in the order that decides between two kinds of the same strength
_PRIORITY = ("A5", "310P", "A3", "A2", "910A", "unknown")


def _pick(kinds):
    return min(kinds, key=lambda k: _PRIORITY.index(k) if k in _PRIORITY else len(_PRIORITY))


def detect(chip_names=(), pci_device_ids=(), phy_id_column=False, chips_per_npu=None,
           distinct_bus_per_die=False, board_device_ids=()):
    """``{"device_type": type or None, "evidence": [why, ...], "warnings": [...]}``.

    Evidence by strength, the strongest present decides: the PCI device id (``pci_device_ids``:
    Huawei (19e5) ids from sysfs; ``board_device_ids``: ``PCI Device ID`` of ``npu-smi info -t
    board``) > the chip name (``chip_names`` from ``npu-smi info`` / ``-m``; ``910B*`` is A2 as
    in vllm-ascend's mapping) > dies per NPU (``chips_per_npu`` >= 2 chips under one NPU id,
    with their own bus ids: ``distinct_bus_per_die``) > the header text (``phy_id_column``: the
    ``npu-smi info`` header reads ``Chip  Phy-ID``, which npu-smi prints for 0xd803 but which
    also appears over A2 tables). Evidence that names another type is kept in ``evidence`` and a
    warning names both. ``device_type`` is None when nothing points at an Ascend NPU.
    """
    evidence = []
    by_name = []
    names_seen = []
    for name in chip_names or ():
        kind = type_of_name(name)
        if kind and kind not in by_name:
            by_name.append(kind)
            names_seen.append((kind, "chip name %r" % (name,)))
            evidence.append("chip name %r -> %s" % (name, kind))
    by_pci = []
    pci_seen = []
    sources = (("PCI device", pci_device_ids),
               ("npu-smi info -t board PCI device", board_device_ids))
    for source, ids in sources:
        for dev in ids or ():
            kind = type_of_pci_device(dev)
            if not kind:
                continue
            text = "%s 19e5:%s" % (source, str(dev).strip().lower().replace("0x", ""))
            if (kind, text) in pci_seen:
                continue
            if kind not in by_pci:
                by_pci.append(kind)
            pci_seen.append((kind, text))
            evidence.append(text + " -> " + kind)
    dies = []
    if chips_per_npu and chips_per_npu >= 2 and distinct_bus_per_die:
        why = "%d dies per NPU with their own bus ids" % chips_per_npu
        dies.append(("A3", why))
    header = []
    if phy_id_column:
        header.append(("A3", "'Chip  Phy-ID' column"))
    for kind, why in header + dies:
        evidence.append(why + " -> " + kind)

    levels = [pci_seen, names_seen, dies, header]
    decided = None
    warnings = []
    for level in levels:
        kinds = [kind for kind, dummy in level]
        if not kinds:
            continue
        if decided is None:
            decided = _pick(kinds)
            winner = [why for kind, why in level if kind == decided][0]
            if len(set(kinds)) > 1:
                warnings.append("device type evidence of the same strength disagrees (%s): "
                                "%s taken" % ("; ".join("%s -> %s" % (w, k) for k, w in level),
                                              decided))
            continue
        for kind, why in level:
            if kind != decided:
                warnings.append("device type %s from %s wins over %s from %s (weaker evidence)"
                                % (decided, winner, kind, why))
    if decided is None and chip_names:
        evidence.append("chip names %s match no known type" % ", ".join(repr(n) for n in chip_names))
        decided = "unknown"
    return {"device_type": decided, "evidence": evidence, "warnings": warnings}
