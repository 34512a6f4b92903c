# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the accelerator tools say about running processes (npu-smi, nvidia-smi), read with
minimal parsers of their text, and ``run``: a command bounded by a timeout that kills its whole
process group, so a wedged driver tool or a child left holding the pipe cannot hang the binder.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from .rules import normalise_bus_id


def run(argv, timeout=60):
    """(rc, stdout) of a command run by name from PATH; rc None when it is not installed.
    It runs in its own session: on timeout the whole group is killed, so a child left
    holding the output pipe cannot hang the binder."""
    import signal  # pylint: disable=import-outside-toplevel  # only when a tool runs
    import subprocess  # pylint: disable=import-outside-toplevel
    env = dict(os.environ, LC_ALL="C", LANG="C", LC_MESSAGES="C")
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    except OSError:
        return None, ""
    try:
        out, _err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _err = proc.communicate()
        return -9, out.decode("utf-8", "replace")
    return proc.returncode, out.decode("utf-8", "replace")


def parse_npu_map(text):
    """``npu-smi info -m`` -> {npu_id: {chip_id: logic_id}} (ints); Mcu rows skipped."""
    lines = [l for l in (text or "").splitlines() if l.strip()]
    if not lines:
        return {}
    header = [h.strip() for h in re.split(r"\s{2,}", lines[0].strip())]
    if "NPU ID" not in header:
        return {}
    col_npu = header.index("NPU ID")
    col_chip = header.index("Chip ID") if "Chip ID" in header else None
    col_logic = header.index("Chip Logic ID") if "Chip Logic ID" in header else None
    result = {}
    for line in lines[1:]:
        cells = line.split()
        try:
            npu = int(cells[col_npu])
            chip = int(cells[col_chip]) if col_chip is not None else 0
            logic = cells[col_logic] if col_logic is not None else cells[col_npu]
        except (IndexError, ValueError):
            continue
        if logic.isdigit():
            result.setdefault(npu, {})[chip] = int(logic)
    return result


def _memory(cell):
    match = re.match(r"^\s*(\d+)", cell or "")
    return int(match.group(1)) if match else 0


def parse_npu_processes(text):
    """``npu-smi info`` process table -> [(npu_id, chip_id or None, pid, memory_mb)]."""
    rows = []
    in_section = False
    with_chip = False
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not in_section:
            if line.startswith("| NPU") and "Process id" in line:
                in_section = True
                first = " ".join(line.split("|")[1].split())
                with_chip = first.startswith("NPU Chip")
            continue
        if not line.startswith("| "):
            continue
        cells = line.split("|")
        if len(cells) < 3:
            continue
        ids = cells[1].split()
        pid = cells[2].strip()
        if not ids or not ids[0].isdigit() or not pid.isdigit():
            continue
        chip = None
        if with_chip:
            if len(ids) < 2 or not ids[1].isdigit():
                continue
            chip = int(ids[1])
        memory = _memory(cells[4]) if len(cells) > 4 else 0
        rows.append((int(ids[0]), chip, int(pid), memory))
    return rows


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
    rows = [[p.strip() for p in line.split(",")] for line in (text or "").splitlines()]
    return dict((normalise_bus_id(r[1]), int(r[0])) for r in rows if len(r) >= 2 and r[0].isdigit())


def parse_compute_apps(text):
    """``nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory ...`` ->
    [(pid, bus, memory_mib)]."""
    out = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            memory = _memory(parts[2]) if len(parts) > 2 else 0
            out.append((int(parts[0]), normalise_bus_id(parts[1]), memory))
    return out


def device_rows(vendor, timeout=30):
    """``[(device, pid, memory)]`` of the processes the devices show now (device: logic NPU id
    or GPU index; None when it cannot be resolved)."""
    if vendor == "nvidia":
        _rc, gpus = run(["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                        timeout)
        bus_to_index = parse_gpu_bus_ids(gpus)
        _rc, apps = run(["nvidia-smi", "--query-compute-apps=pid,gpu_bus_id,used_memory",
                         "--format=csv,noheader,nounits"], timeout)
        return [(bus_to_index.get(bus), pid, mem) for pid, bus, mem in parse_compute_apps(apps)]
    _rc, table = run(["npu-smi", "info"], timeout)
    _rc, mapping = run(["npu-smi", "info", "-m"], timeout)
    npu_map = parse_npu_map(mapping)
    return [(resolve_logic(npu_map, npu, chip), pid, mem)
            for npu, chip, pid, mem in parse_npu_processes(table)]
