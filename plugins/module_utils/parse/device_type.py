# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ascend device types - one row each in ``TABLE`` - and how a host shows which one it has.

Types: A2 | A3 | A5 (Ascend 950) | 310P | 910A | unknown. Every fact a layer branches on is a
field of the type's row (``row(name)``), so a new chip is one row here plus its fixtures: the
detection below, the planners (``plan/``), the soft-share rules (``softshare/``,
``model/rules``), the IRQ step and the modules' ``choices`` read it. The table sits in the
lowest layer that reads it (detection, here); it is data only.

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

# the plan modes a type's vllm-ascend binding starts from (vllm_ascend/plan/allocator.py has the same
# names: vllm_ascend/cpu_binding.py TOPO_AFFINITY_MODE / GLOBAL_SLICE_MODE)
TOPO_AFFINITY = "topo_affinity"
GLOBAL_SLICE = "global_slice"
SPLIT, CLUSTER = "split", "cluster"  # ``roles``
CHIP_ROWS, NPU_ID_ROWS = "chip", "npu_id"  # ``process_table``


class DeviceType(object):
    """One Ascend device type (immutable). Fields:

    - ``name``: the facts' ``device_type`` and the modules' choice; ``label``: how the report
      pages name it (``Ascend 950 (A5)`` where it differs from ``name``).
    - ``pci_ids``: Huawei (19e5) PCI device ids, lower-case hex without ``0x`` (sysfs or
      ``npu-smi info -t board``): the strongest evidence. ``names``: a regular expression
      matched (``re.match``) against the chip name, upper case, ``Ascend`` prefix and spaces
      stripped; rows are tried in ``TABLE`` order (a catch-all such as ``910`` after the rows
      it must not take). ``precedence``: between two types of evidence of the same strength,
      the lower wins.
    - ``dies_per_npu``: dies under one NPU id, each with its own bus id (npu-smi lists a chip per
      die; A3: 2). More than one: two such dies are evidence of the type, the device plugin's
      ``-useSingleDieMode`` applies and, without it, a chip is healthy only when all its dies are.
      ``phy_id_header``: npu-smi prints ``Chip  Phy-ID`` over its table (weakest evidence).
    - ``roles``: ``split`` (the pool split positionally into IRQ, main, ACL and release CPUs) or
      ``cluster`` (whole CPU clusters of ``cluster_cores`` physical cores, all main: no IRQ, ACL
      or release role, so no IRQ step); ``cluster_cores`` is 0 for ``split``.
    - ``vllm_mode``: vllm-ascend's binding mode for the type (``topo_affinity`` /
      ``global_slice``); ``vllm_950_path``: vllm-ascend takes its Ascend 950 path for the type
      (the release's ``a5`` rule: generic, global slices or clusters); ``vllm_profiled``: the
      releases with ``hardware_profile.py`` (0.27.1rc1 on) register a profile for it (else the
      worker fails at import); ``process_table``: the rows of npu-smi's process table
      (``chip``: ``| NPU  Chip |``; ``npu_id``: ``| NPU ID | Process id |``, no Chip column).
    - ``softshare``: the device plugin's soft share (MindCluster 26.0) supports it.
    """

    __slots__ = (
        "name",
        "label",
        "pci_ids",
        "names",
        "precedence",
        "dies_per_npu",
        "phy_id_header",
        "roles",
        "cluster_cores",
        "vllm_mode",
        "vllm_950_path",
        "vllm_profiled",
        "process_table",
        "softshare",
    )

    def __init__(self, name, **fields):
        missing = [key for key in self.__slots__[1:] if key not in fields]
        unknown = sorted(set(fields) - set(self.__slots__))
        if missing or unknown:
            raise TypeError("device type %r: missing field(s) %s, unknown field(s) %s" % (name, missing, unknown))
        object.__setattr__(self, "name", name)
        for key in self.__slots__[1:]:
            object.__setattr__(self, key, fields[key])

    def __setattr__(self, key, value):
        raise AttributeError("a device type row is read-only")

    def __repr__(self):
        return "DeviceType(%r)" % (self.name,)

    @property
    def irq_roles(self):
        """The type's pools have IRQ (and ACL, release) CPUs: the plan has an IRQ step."""
        return self.roles == SPLIT

    @property
    def multi_die(self):
        return self.dies_per_npu > 1


# vllm-ascend's SoC-name table (vllm_ascend/device/hardware.py _SOC_VERSION_TO_DEVICE_TYPE):
# 9362 is its last A3 name at 182b75ea; the 0.30 line adds ascend910_9363 (A3, runtime soc 256)
_A3_NAMES = (
    "910",
    "910C",
    "910_9391",
    "910_9392",
    "910_9372",
    "910_9362",
    "910_9363",
    "910_9381",
    "910_9382",
    "9391",
    "9392",
    "9372",
    "9362",
    "9363",
    "9381",
    "9382",
)

# Upstream facts in the rows: vllm_mode, vllm_950_path and the A5 cluster (8 physical cores):
# vllm_ascend/cpu_binding.py DEVICE_BINDING_MODE, _is_ascend_950, NO_IRQ_BINDING_DEVICE_TYPES,
# ASCEND_950_PHYSICAL_CPUS_PER_CLUSTER (v0.23.0rc1 - v0.25.1rc1, 182b75ea); vllm_profiled:
# vllm_ascend/device/hardware_profile.py _HARDWARE_PROFILES (A2, A3, _310P, A5; 182b75ea,
# releases 0.27.1rc1 on); softshare: MindCluster 26.0 soft share on Atlas A2/A3 inference hosts
# (docs/research/ascend_device_plugin.md). The order is the modules' choices and the order the
# chip-name patterns are tried in.
TABLE = (
    DeviceType(
        "A2",
        label="A2",
        pci_ids=("d802",),
        names=r"(910B\d|A2G\d)",
        precedence=30,
        dies_per_npu=1,
        phy_id_header=False,
        roles=SPLIT,
        cluster_cores=0,
        vllm_mode=TOPO_AFFINITY,
        vllm_950_path=False,
        vllm_profiled=True,
        process_table=CHIP_ROWS,
        softshare=True,
    ),
    DeviceType(
        "A3",
        label="A3",
        pci_ids=("d803",),
        names=r"(%s)\Z" % "|".join(_A3_NAMES),
        precedence=20,
        dies_per_npu=2,
        phy_id_header=True,
        roles=SPLIT,
        cluster_cores=0,
        vllm_mode=GLOBAL_SLICE,
        vllm_950_path=False,
        vllm_profiled=True,
        process_table=CHIP_ROWS,
        softshare=True,
    ),
    DeviceType(
        "A5",
        label="Ascend 950",
        pci_ids=(),
        names=r"950",
        precedence=0,
        dies_per_npu=1,
        phy_id_header=False,
        roles=CLUSTER,
        cluster_cores=8,
        vllm_mode=TOPO_AFFINITY,
        vllm_950_path=True,
        vllm_profiled=True,
        process_table=NPU_ID_ROWS,
        softshare=False,
    ),
    DeviceType(
        "310P",
        label="310P",
        pci_ids=("d500",),
        names=r"(310P|I2)",
        precedence=10,
        dies_per_npu=1,
        phy_id_header=False,
        roles=SPLIT,
        cluster_cores=0,
        vllm_mode=TOPO_AFFINITY,
        vllm_950_path=False,
        vllm_profiled=True,
        process_table=CHIP_ROWS,
        softshare=False,
    ),
    # any other 910 name (910A, 910ProB, 910PremiumA): the first generation (after A2 and A3)
    DeviceType(
        "910A",
        label="910A",
        pci_ids=("d801",),
        names=r"910",
        precedence=40,
        dies_per_npu=1,
        phy_id_header=False,
        roles=SPLIT,
        cluster_cores=0,
        vllm_mode=TOPO_AFFINITY,
        vllm_950_path=False,
        vllm_profiled=False,
        process_table=CHIP_ROWS,
        softshare=False,
    ),
    # an Ascend chip no row knows (310, 310B; after 310P): also what an absent or foreign
    # device_type reads as (``row``)
    DeviceType(
        "unknown",
        label="unknown",
        pci_ids=(),
        names=r"310",
        precedence=50,
        dies_per_npu=1,
        phy_id_header=False,
        roles=SPLIT,
        cluster_cores=0,
        vllm_mode=TOPO_AFFINITY,
        vllm_950_path=False,
        vllm_profiled=False,
        process_table=CHIP_ROWS,
        softshare=False,
    ),
)
BY_NAME = dict((r.name, r) for r in TABLE)
UNKNOWN = "unknown"

TYPES = tuple(r.name for r in TABLE)


def row(name):
    """The row of device type ``name``; the ``unknown`` row for None or a name no row has."""
    found = BY_NAME.get(name) if isinstance(name, str) else None
    return found if found is not None else BY_NAME[UNKNOWN]


def names_where(test):
    """The names of the rows for which ``test(row)`` holds, in table order."""
    return tuple(r.name for r in TABLE if test(r))


def normalise_name(name):
    """``"Ascend 910B4"`` / ``"Ascend910B4"`` -> ``"910B4"``; ``"Ascend950DT"`` -> ``"950DT"``."""
    text = "".join((name or "").split())
    if text.lower().startswith("ascend"):
        text = text[len("ascend") :]
    return text


def type_of_name(name):
    """Device type implied by one chip name, or None when the name says nothing (Mcu, xxx)."""
    text = normalise_name(name)
    upper = text.upper()
    if not text or upper == "MCU":
        return None
    for found in TABLE:
        if re.match(found.names, upper):
            return found.name
    return None


def type_of_pci_device(device_id):
    """``"0xd802"``/``"d802"`` -> ``"A2"``; None for anything else."""
    text = (device_id or "").strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    for found in TABLE:
        if text in found.pci_ids:
            return found.name
    return None


def _pick(kinds):
    """The kind of the lowest ``precedence`` (between kinds of the same strength)."""
    return min(kinds, key=lambda k: row(k).precedence)


def detect(
    chip_names=(),
    pci_device_ids=(),
    phy_id_column=False,
    chips_per_npu=None,
    distinct_bus_per_die=False,
    board_device_ids=(),
):
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
    sources = (("PCI device", pci_device_ids), ("npu-smi info -t board PCI device", board_device_ids))
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
        # the type with the most dies per NPU that this many dies can be
        fits = [r for r in TABLE if 2 <= r.dies_per_npu <= chips_per_npu]
        if fits:
            dies.append((max(fits, key=lambda r: r.dies_per_npu).name, why))
    header = []
    if phy_id_column:
        header.extend((name, "'Chip  Phy-ID' column") for name in names_where(lambda r: r.phy_id_header))
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
                warnings.append(
                    "device type evidence of the same strength disagrees (%s): "
                    "%s taken" % ("; ".join("%s -> %s" % (w, k) for k, w in level), decided)
                )
            continue
        for kind, why in level:
            if kind != decided:
                warnings.append(
                    "device type %s from %s wins over %s from %s (weaker evidence)" % (decided, winner, kind, why)
                )
    if decided is None and chip_names:
        evidence.append("chip names %s match no known type" % ", ".join(repr(n) for n in chip_names))
        decided = "unknown"
    return {"device_type": decided, "evidence": evidence, "warnings": warnings}
