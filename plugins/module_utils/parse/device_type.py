# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ascend device type from what a host shows: A2 | A3 | A5 (Ascend 950) | 310P | 910A | unknown.

Follows the device plugin's rules (ascend-common devmanager): chip names first (after
stripping the ``Ascend`` prefix), PCI device ids (19e5:d801 910A, d802 A2, d803 A3, d500
310P), and A3's structure (a ``Phy-ID`` column, two dies per NPU with their own bus ids),
which wins over an A2-looking chip name because the name alone cannot tell A2 from A3.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

TYPES = ("A2", "A3", "A5", "310P", "910A", "unknown")

PCI_DEVICE_TYPES = {"d801": "910A", "d802": "A2", "d803": "A3", "d500": "310P"}

_A3_NAMES = ("910", "910C", "910_9391", "910_9392", "910_9372", "910_9362", "910_9381",
             "910_9382", "9391", "9392", "9372", "9362", "9381", "9382")


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


def detect(chip_names=(), pci_device_ids=(), phy_id_column=False, chips_per_npu=None,
           distinct_bus_per_die=False):
    """``{"device_type": type or None, "evidence": [why, ...]}``.

    ``chip_names``: names from ``npu-smi info`` / ``-m`` / ``-t board``; ``pci_device_ids``:
    Huawei (19e5) PCI device ids seen in sysfs; ``phy_id_column``: the ``npu-smi info``
    header reads ``Chip  Phy-ID``; ``chips_per_npu``: max chips (not Mcu) under one NPU id;
    ``distinct_bus_per_die``: those chips have their own PCI bus ids. ``device_type`` is None
    when nothing points at an Ascend NPU.
    """
    evidence = []
    by_name = []
    for name in chip_names or ():
        kind = type_of_name(name)
        if kind and kind not in by_name:
            by_name.append(kind)
            evidence.append("chip name %r -> %s" % (name, kind))
    by_pci = []
    for dev in pci_device_ids or ():
        kind = type_of_pci_device(dev)
        if kind and kind not in by_pci:
            by_pci.append(kind)
            evidence.append("PCI device 19e5:%s -> %s" % (dev.lower().replace("0x", ""), kind))
    a3_shape = []
    if phy_id_column:
        a3_shape.append("'Chip  Phy-ID' column")
    if chips_per_npu and chips_per_npu >= 2 and distinct_bus_per_die:
        a3_shape.append("%d dies per NPU with their own bus ids" % chips_per_npu)
    for why in a3_shape:
        evidence.append(why + " -> A3")

    if "A5" in by_name:
        return {"device_type": "A5", "evidence": evidence}
    if "310P" in by_name or (not by_name and by_pci == ["310P"]):
        return {"device_type": "310P", "evidence": evidence}
    if a3_shape or "A3" in by_name or "A3" in by_pci:
        return {"device_type": "A3", "evidence": evidence}
    for kind in ("A2", "910A", "unknown"):
        if kind in by_name:
            return {"device_type": kind, "evidence": evidence}
    if by_pci:
        return {"device_type": by_pci[0], "evidence": evidence}
    if chip_names:
        evidence.append("chip names %s match no known type" % ", ".join(repr(n) for n in chip_names))
        return {"device_type": "unknown", "evidence": evidence}
    return {"device_type": None, "evidence": evidence}
