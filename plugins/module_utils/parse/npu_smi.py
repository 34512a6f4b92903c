# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for Ascend ``npu-smi`` outputs (text -> plain data).

- ``parse_info``  ``npu-smi info``: device table (A2 "Chip", A3 "Chip  Phy-ID", 310P
  "Chip  Device") and process table (A2/A3 "NPU  Chip" rows, Ascend 950 "NPU ID" rows,
  "No running processes found" rows).
- ``parse_map``   ``npu-smi info -m``: A2/910A, A3 (+Chip Phy-ID) and 950 (Slot ID, no
  Chip Logic ID) layouts; the raw map as vllm-ascend builds it plus rows with names.
- ``parse_topo``  ``npu-smi info -t topo``: link matrix and the CPU Affinity column.
- ``parse_board`` ``npu-smi info -t board -i N [-c C]``: key/value fields, PCIe Bus Info.

Every parser accepts what vllm-ascend's own parsing accepts and raises only ParseError.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import pci

# the commands these parsers read (``model/topology`` runs them; board: + ``-i N [-c C]``) and
# the sources their errors name
INFO_ARGV = ("npu-smi", "info")
MAP_ARGV = INFO_ARGV + ("-m",)
TOPO_ARGV = INFO_ARGV + ("-t", "topo")
BOARD_ARGV = INFO_ARGV + ("-t", "board")
SRC_INFO, SRC_MAP, SRC_TOPO, SRC_BOARD = (" ".join(argv) for argv in (INFO_ARGV, MAP_ARGV, TOPO_ARGV, BOARD_ARGV))

# ASCII digits, bounded for int(): a longer number is not a value npu-smi prints
_PAIR = re.compile(r"(?<![0-9])([0-9]{1,12})\s*/\s*([0-9]{1,12})(?![0-9])")
_INT = re.compile(r"^[0-9]{1,12}\Z")
# a Bus-Id with its digits masked where it was posted ("0000:xx:00.0"): bus unknown
_MASKED_BUS = re.compile(r"^[0-9A-Fa-fxX]{4,8}:[0-9A-Fa-fxX]{2}:[0-9A-Fa-fxX]{2}\.[0-9A-Fa-fxX]\Z")


def _cells(line):
    """Cells of a ``| a | b |`` table line, stripped; the outer empties dropped."""
    parts = line.strip().split("|")
    if parts and parts[0] == "":
        parts = parts[1:]
    if parts and parts[-1].strip() == "":
        parts = parts[:-1]
    return [p.strip() for p in parts]


def _int(text):
    return int(text) if text is not None and _INT.match(text) else None


def parse_info(text, source=SRC_INFO):
    """``npu-smi info`` -> ``{"version", "chip_column", "chips": [...], "processes": [...],
    "process_layout", "warnings"}``.

    Device table layouts: A2/A3/310P (``| NPU  Name |`` over ``| Chip ... | Bus-Id |``) and the
    Ascend 950 one (``| NPU ID | Name | Health |`` over ``| | | Bus-Id |``, one chip per NPU,
    read as chip 0). A Bus-Id ``NA`` or masked where it was posted (``0000:xx:00.0``) keeps its
    chip with ``bus_id`` None (a masked one with a warning naming the cell).

    Each chip: ``npu_id, chip_id, phy_id`` (A3 "Phy-ID" column, else None), ``device_id``
    (310P "Device" column), ``name, health, bus_id`` (lower case), ``hbm_used_mb``,
    ``hbm_total_mb`` (None without an HBM column), ``memory_used_mb``, ``memory_total_mb``.
    Each process: ``npu_id``, ``chip_id`` (None in the 950 "NPU ID" layout), ``pid``,
    ``name``, ``memory_mb``. ``process_layout``: ``npu_chip`` | ``npu_id`` | None.
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    lines = text.splitlines()
    version = None
    chip_column = None
    has_hbm = False
    device_header = None
    process_header = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if version is None:
            match = re.search(r"Version:\s*(\S+)", stripped)
            if match:
                version = match.group(1)
        if not stripped.startswith("| NPU") and not stripped.startswith("|NPU"):
            continue
        if "Process id" in stripped:
            process_header = index
            break
        if device_header is None and "Name" in stripped:
            device_header = index
    if device_header is None and process_header is None:
        raise ParseError(source, "no device table ('| NPU   Name ...' header) found")

    chips = []
    warnings = []
    if device_header is not None:
        end = process_header if process_header is not None else len(lines)
        second = lines[device_header + 1] if device_header + 1 < end else ""
        # Ascend 950 (npu-smi 25.5+): "| NPU ID | Name | Health |" over "| | | Bus-Id |"
        npu_id_column = " ".join((_cells(lines[device_header]) or [""])[0].split()) == "NPU ID"
        first_cell = " ".join((_cells(second) or [""])[0].split())
        chip_column = first_cell or None
        has_hbm = "HBM" in second
        pending = None
        for number in range(device_header + 2, end):
            line = lines[number].strip()
            if not line.startswith("|"):
                continue
            cells = _cells(line)
            if npu_id_column:
                cells = _one_chip_row(cells)
            if len(cells) < 2:
                continue
            masked = _MASKED_BUS.match(cells[1]) and not pci.BUS_ID.match(cells[1])
            if pci.BUS_ID.match(cells[1]) or cells[1].upper() in ("NA", "-") or masked:
                if pending is None:
                    raise ParseError(source, "line %d: chip row without its NPU row" % (number + 1))
                if masked:
                    warnings.append(
                        "line %d: Bus-Id %r is masked: the chip is kept, its bus unknown" % (number + 1, cells[1])
                    )
                    cells = [cells[0], "NA"] + cells[2:]
                chips.append(_chip(pending, cells, chip_column, has_hbm, source, number + 1))
                pending = None
            else:
                if pending is not None:
                    raise ParseError(
                        source,
                        "line %d: NPU row without its chip row (its "
                        "second cell %r is neither a Bus-Id nor NA)" % (pending[1], cells[1][:24]),
                    )
                pending = (cells, number + 1)
    processes, layout = _processes(lines, process_header, source)
    return {
        "version": version,
        "chip_column": chip_column,
        "chips": chips,
        "processes": processes,
        "process_layout": layout,
        "warnings": warnings,
    }


def _one_chip_row(cells):
    """A row of the 950 table in the shape of the A2 one: ``| 0 | Ascend950DT | OK | ...`` ->
    ``["0 Ascend950DT", "OK", ...]``; ``| | | NA | ...`` -> ``["0", "NA", ...]`` (one chip per
    NPU: chip 0, as ``npu-smi info -m`` numbers it)."""
    if len(cells) >= 3 and not cells[0] and not cells[1]:
        return ["0"] + cells[2:]
    if len(cells) >= 3 and cells[0]:
        return ["%s %s" % (cells[0], cells[1])] + cells[2:]
    return cells


def _chip(pending, cells, chip_column, has_hbm, source, number):
    first, first_no = pending
    head = first[0].split(None, 1)
    npu_id = _int(head[0]) if head else None
    if npu_id is None:
        raise ParseError(source, "line %d: NPU id %r is not a number" % (first_no, first[0][:20]))
    ids = cells[0].split()
    chip_id = _int(ids[0]) if ids else None
    if chip_id is None:
        raise ParseError(source, "line %d: chip id %r is not a number" % (number, cells[0][:20]))
    second_id = _int(ids[1]) if len(ids) > 1 else None
    column = (chip_column or "").split()
    pairs = [(int(a), int(b)) for a, b in _PAIR.findall(cells[2] if len(cells) > 2 else "")]
    chip = {
        "npu_id": npu_id,
        "chip_id": chip_id,
        "phy_id": second_id if "Phy-ID" in column else None,
        "device_id": second_id if "Device" in column else None,
        "name": head[1].strip() if len(head) > 1 else None,
        "health": first[1] if len(first) > 1 and first[1] else None,
        "bus_id": pci.normalise_bus_id(cells[1]),
        "hbm_used_mb": None,
        "hbm_total_mb": None,
        "memory_used_mb": None,
        "memory_total_mb": None,
    }
    if has_hbm and pairs:
        chip["hbm_used_mb"], chip["hbm_total_mb"] = pairs[-1]
        pairs = pairs[:-1]
    if pairs:
        chip["memory_used_mb"], chip["memory_total_mb"] = pairs[-1]
    return chip


def _processes(lines, header, source):
    """Process rows after the ``| NPU ... | Process id |`` header (vllm-ascend's rules)."""
    if header is None:
        return [], None
    first = " ".join((_cells(lines[header]) or [""])[0].split())
    layout = "npu_chip" if first == "NPU Chip" else "npu_id"
    processes = []
    for line in lines[header + 1 :]:
        line = line.strip()
        if not line.startswith("| "):
            continue
        cells = _cells(line)
        if len(cells) < 2:
            continue  # "No running processes found in NPU 3"
        ids = cells[0].split()
        npu_id = _int(ids[0]) if ids else None
        chip_id = _int(ids[1]) if layout == "npu_chip" and len(ids) > 1 else None
        if npu_id is None or (layout == "npu_chip" and chip_id is None):
            continue
        pid = _int(cells[1].split()[0]) if cells[1].split() else None
        if pid is None:
            continue
        name = cells[2] if len(cells) > 2 else ""
        memory = _int(cells[3].split()[0]) if len(cells) > 3 and cells[3].split() else None
        processes.append({"npu_id": npu_id, "chip_id": chip_id, "pid": pid, "name": name, "memory_mb": memory})
    return processes, layout


_MAP_COLUMNS = re.compile(r"NPU ID|Slot ID|Chip Logic ID|Chip Phy-ID|Chip ID|Chip Name")


def parse_map(text, source=SRC_MAP):
    """``npu-smi info -m`` -> ``{"map": {NPU ID: {Chip ID: logic id}}, "rows": [...],
    "columns": [...]}``.

    ``map`` is vllm-ascend's: strings everywhere, logic id = "Chip Logic ID" or, when that
    column is absent (Ascend 950), the NPU ID; rows whose logic id is not a number (Mcu)
    are left out. ``rows`` keep every row: ``npu_id, chip_id, logic_id, phy_id, slot_id``
    (ints or None) and ``name`` ("Ascend 910B4", "Mcu", "Ascend950DT").
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ParseError(source, "empty output")
    columns = _MAP_COLUMNS.findall(lines[0])
    if "NPU ID" not in columns:
        raise ParseError(source, "no 'NPU ID' column in header %r" % lines[0].strip()[:80])
    if len(set(columns)) != len(columns):
        raise ParseError(source, "duplicate columns in header %r" % lines[0].strip()[:80])
    name_pos = columns.index("Chip Name") if "Chip Name" in columns else None
    if name_pos is not None and name_pos != len(columns) - 1:
        raise ParseError(source, "'Chip Name' is not the last column")
    id_columns = columns[:name_pos] if name_pos is not None else columns
    raw_map = {}
    rows = []
    for line in lines[1:]:
        tokens = line.split()
        if len(tokens) < len(id_columns):
            continue
        fields = dict(zip(id_columns, tokens))
        npu = fields["NPU ID"]
        if not _INT.match(npu):
            continue
        chip = fields.get("Chip ID", "0")
        logic = fields.get("Chip Logic ID", npu)
        name = " ".join(tokens[len(id_columns) :]) if name_pos is not None else None
        rows.append(
            {
                "npu_id": int(npu),
                "chip_id": _int(chip),
                "logic_id": _int(logic),
                "phy_id": _int(fields.get("Chip Phy-ID")),
                "slot_id": _int(fields.get("Slot ID")),
                "name": name or None,
            }
        )
        if _INT.match(logic) and _INT.match(chip):
            raw_map.setdefault(npu, {})[chip] = logic
    return {"map": raw_map, "rows": rows, "columns": columns}


_ROW_NAME = re.compile(r"^(NPU|Phy-ID|NIC|CPU)(\d+)\Z")
_CPULIST_TOKEN = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*\Z")


def parse_topo(text, source=SRC_TOPO):
    """``npu-smi info -t topo`` -> ``{"affinity": {"<n>": cpulist}, "columns": [...],
    "links": {row: {column: cell}}}``.

    Affinity follows vllm-ascend: a line starting at column 0 with ``NPU<n>`` whose last
    token is a cpulist; ``n`` is taken as the logical NPU id. The cpulist keeps the order
    npu-smi printed (``48-59,0-11`` stays so; ascending runs are compressed). A matrix without a CPU
    Affinity column (A3 "Phy-ID", Ascend 950 "UB") gives ``{}``. Raises ParseError when
    there is no matrix row at all.
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    columns = []
    affinity = {}
    links = {}
    rows = 0
    for line in text.splitlines():
        tokens = line.split()
        if not tokens:
            continue
        # the header row: indented, or at column 0 where its second token is a label too
        # (a matrix row's second token is a cell: X, HCCS, SIO, PXB, ...)
        if (
            not columns
            and _ROW_NAME.match(tokens[0])
            and (line[:1] in (" ", "\t") or (len(tokens) > 1 and _ROW_NAME.match(tokens[1])))
        ):
            columns = []
            for token in tokens:
                if not _ROW_NAME.match(token):
                    break
                columns.append(token)
            continue
        match = _ROW_NAME.match(tokens[0])
        if not match or line[:1] in (" ", "\t"):
            continue
        rows += 1
        if match.group(1) == "NPU" and len(tokens) > 1 and _CPULIST_TOKEN.match(tokens[-1]):
            # written order kept: vllm-ascend's role split is positional ("48-59,0-11")
            affinity[match.group(2)] = cpulist.format_ordered(cpulist.parse_ordered(tokens[-1], source))
        if columns:
            links[tokens[0]] = dict(zip(columns, tokens[1 : 1 + len(columns)]))
    if not rows:
        raise ParseError(source, "no NPU/Phy-ID matrix rows found")
    return {"affinity": affinity, "columns": columns, "links": links}


def parse_board(text, source=SRC_BOARD):
    """``npu-smi info -t board -i N [-c C]`` -> ``{"fields": {key: value},
    "bus_id", "board_id", "pci_device_id", "chip_name", "npu_name"}`` (None when absent)."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    fields = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, _sep, value = line.partition(":")
        key = " ".join(key.split())
        if key:
            fields.setdefault(key, value.strip())
    if not fields:
        raise ParseError(source, "no 'key : value' lines")
    bus = None
    for line in text.splitlines():
        if "PCIe Bus Info" in line and line.split():
            bus = pci.normalise_bus_id(line.split()[-1])
            break
    return {
        "fields": fields,
        "bus_id": bus,
        "board_id": fields.get("Board ID"),
        "pci_device_id": (fields.get("PCI Device ID") or "").lower() or None,
        "chip_name": fields.get("Chip Name"),
        "npu_name": fields.get("NPU Name"),
    }
