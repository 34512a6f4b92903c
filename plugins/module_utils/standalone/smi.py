# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the accelerator tools say about running processes, through the collection's own
parsers (``parse/npu_smi``, ``parse/rocm_smi``; the nvidia-smi CSV queries are read here, their
bus ids in ``parse/pci``'s form) and
its command runner (``host/command.run``: its own process group, killed at the timeout,
output capped). Which tool to ask is the plan vendor's row (``model/vendors``:
``process_query``, ``process_map``), read by ``READERS`` keyed on the vendor's tool.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

# The runner and the tools' parsers are imported where a tool runs: a reconcile pass whose
# workers the tree names runs no tool, and importing subprocess alone would cost it ~3 ms.
# pylint: disable=import-outside-toplevel


def run(argv, timeout=60):
    """(rc, stdout) of a command run by name from PATH (``host/command.run``, without its
    /proc scans: a reconcile pass must stay cheap); rc None when it is not installed."""
    from ansible_collections.npuops.fleet.plugins.module_utils.host import command

    result = command.run(argv, timeout, track=False)
    if result.missing:
        return None, ""
    return result.rc, result.stdout


def parse_npu_map(text):
    """``npu-smi info -m`` -> {npu_id: {chip_id: logic_id}} (ints; ``parse/npu_smi.parse_map``,
    Mcu rows skipped); {} when the text is not a map."""
    from ansible_collections.npuops.fleet.plugins.module_utils.parse import npu_smi

    try:
        raw = npu_smi.parse_map(text or "")["map"]
    except ParseError:
        return {}
    return dict(
        (int(npu), dict((int(chip), int(logic)) for chip, logic in chips.items())) for npu, chips in raw.items()
    )


def parse_npu_processes(text):
    """``npu-smi info`` process table -> [(npu_id, chip_id or None, pid, memory_mb)]
    (``parse/npu_smi.parse_info``); [] when the text holds no table."""
    from ansible_collections.npuops.fleet.plugins.module_utils.parse import npu_smi

    try:
        rows = npu_smi.parse_info(text or "")["processes"]
    except ParseError:
        return []
    return [(row["npu_id"], row["chip_id"], row["pid"], row["memory_mb"] or 0) for row in rows]


def _memory(cell):
    match = re.match(r"^\s*(\d+)", cell or "")
    return int(match.group(1)) if match else 0


def home_devices(rows):
    """{pid: device} where each pid holds the most device memory: a worker also opens a small
    context (~126 MB) on another chip of its instance (real A3 table: pid 2268928, 126 MB on
    chip 2/0, 58953 MB on chip 3/1). Ties keep the first row."""
    best = {}
    for device, pid, memory in rows:
        if device is None:
            continue
        if pid not in best or memory > best[pid][1]:
            best[pid] = (device, memory)
    return dict((pid, dev) for pid, (dev, _mem) in best.items())


def resolve_logic(npu_map, npu, chip):
    """Logic id of (card, chip) through the ``-m`` map; the card id when there is no map."""
    chips = npu_map.get(npu)
    if chips:
        if chip is None:
            return list(chips.values())[0] if len(chips) == 1 else None
        return chips.get(chip)
    if not npu_map and chip in (None, 0):
        return npu
    return None


def parse_gpu_bus_ids(text):
    """``nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader`` -> {bus: index}."""
    from ansible_collections.npuops.fleet.plugins.module_utils.parse.pci import normalise_bus_id

    rows = [[p.strip() for p in line.split(",")] for line in (text or "").splitlines()]
    return dict((normalise_bus_id(r[1]), int(r[0])) for r in rows if len(r) >= 2 and r[0].isdigit())


def parse_compute_apps(text):
    """``nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory ...`` ->
    [(pid, bus, memory_mib)] (bus ids in ``parse/pci``'s form)."""
    from ansible_collections.npuops.fleet.plugins.module_utils.parse.pci import normalise_bus_id

    out = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            memory = _memory(parts[2]) if len(parts) > 2 else 0
            out.append((int(parts[0]), normalise_bus_id(parts[1]), memory))
    return out


def _ascend_rows(row, timeout):
    _rc, table = run(list(row.process_query), timeout)
    _rc, mapping = run(list(row.process_map), timeout)
    npu_map = parse_npu_map(mapping)
    return [(resolve_logic(npu_map, npu, chip), pid, mem) for npu, chip, pid, mem in parse_npu_processes(table)]


def _nvidia_rows(row, timeout):
    _rc, gpus = run(list(row.process_map), timeout)
    bus_to_index = parse_gpu_bus_ids(gpus)
    _rc, apps = run(list(row.process_query), timeout)
    return [(bus_to_index.get(bus), pid, mem) for pid, bus, mem in parse_compute_apps(apps)]


def _rocm_rows(row, timeout):
    """rocm-smi names each process's GPUs (its indexes: the facts' and the plan's) but not
    their memory: a process on one GPU is that GPU's, one on several is left to the tree."""
    from ansible_collections.npuops.fleet.plugins.module_utils.parse import rocm_smi

    _rc, text = run(list(row.process_query), timeout)
    try:
        pids = rocm_smi.parse_showpidgpus(text or "")
    except ParseError:
        return []
    return [(gpus[0] if len(gpus) == 1 else None, pid, 0) for pid, gpus in sorted(pids.items())]


# the process readers, by the vendor row's tool
READERS = {"npu-smi": _ascend_rows, "nvidia-smi": _nvidia_rows, "rocm-smi": _rocm_rows}


def device_rows(row, timeout=30):
    """``[(device, pid, memory)]`` of the processes the devices of vendor ``row`` (a
    ``model/vendors`` row) show now (device: logic NPU id or GPU index; None when it cannot
    be resolved)."""
    return READERS[row.tool](row, timeout)
