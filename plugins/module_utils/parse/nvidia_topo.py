# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia-smi topo -m`` / ``-mp`` text -> GPU/NIC link matrix; RDMA NICs from sysfs.

The parser is lenient on purpose: real captures come with tabs or spaces, ANSI underline
sequences, the extra "GPU NUMA ID" column (and its empty field), old drivers that name NICs
``mlx5_0`` in the header instead of ``NIC0`` + a NIC Legend, cells fused together when a
terminal-wrapped paste lost a TAB (``PXBNODE``, ``0-55,112-167 0N/A``), and cut-off pastes.
It takes what it can and reports the rest in ``warnings``; it raises ``ParseError`` only
when not a single GPU row can be read.

Pure functions, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

SOURCE = "nvidia-smi topo -m"

# ESC-prefixed SGR sequences, and the same with the ESC byte lost in an archive ("[4m").
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\[[0-9;]*m")
# Every value a matrix cell can hold. SOC is what pre-R384 drivers printed for SYS.
# NV# is at most two digits so "NV18" fused with a cpulist ("NV180-55") splits correctly.
_CELL = r"(?:X|NV\d{1,2}|PIX|PXB|PHB|NODE|SYS|SOC)"
_CELL_PREFIX = re.compile(_CELL)  # used with .match(text, pos): anchored at pos
_LABEL_PARTS = re.compile(r"^(?:GPU\d+|NIC\d+|mlx\d+_(?:bond_)?\d+)+\Z")
_LABEL_PART = re.compile(r"GPU\d+|NIC\d+|mlx\d+_(?:bond_)?\d+")
_GPU_LABEL = re.compile(r"^GPU(\d+)\Z")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*\Z")
_ROW_START = re.compile(r"^\s*(GPU\d+|NIC\d+)\s")
_TAIL_START = re.compile(r"\bCPU\b")
_FUSED_NA = re.compile(r"^(\d+)(N/A)\Z")
# the label of a header-less column that is neither known as a GPU's nor as a NIC's
_UNKNOWN_COLUMN = "?col"


def strip_ansi(text):
    """Remove terminal colour/underline sequences (with or without their ESC byte)."""
    return _ANSI.sub("", text)


def _split_label_token(token):
    """Header token -> labels: "NIC8NIC9" -> ["NIC8", "NIC9"]; "mlx5_0" -> ["mlx5_0"]."""
    if _LABEL_PARTS.match(token):
        return _LABEL_PART.findall(token)
    return [token]


def _is_row(line, known_labels):
    """(label, rest) when ``line`` is a matrix row, else None."""
    stripped = line.lstrip()
    if not stripped:
        return None
    label = stripped.split(None, 1)[0]
    if label.endswith(":"):
        return None
    if not (_GPU_LABEL.match(label) or re.match(r"^NIC\d+\Z", label) or label in known_labels):
        return None
    rest = stripped[len(label) :]
    if not rest.strip():
        return None
    first = rest.split(None, 1)[0]
    if not _CELL_PREFIX.match(first):
        return None
    return label, rest


def _find_header(lines):
    """Index of the header row (the line naming GPU0 that is not itself a GPU row), or None."""
    for num, line in enumerate(lines):
        if not re.search(r"GPU0(?!\d)", line):
            continue
        if _ROW_START.match(line) and _is_row(line, ()) is not None:
            continue
        return num
    return None


def _parse_header(line):
    """Header line -> (column labels, has NUMA Affinity column, has GPU NUMA ID column)."""
    match = _TAIL_START.search(line)
    head = line[: match.start()] if match else line
    tail = line[match.start() :] if match else ""
    labels = []
    for token in head.split():
        if set(token) <= set("-"):
            continue
        labels.extend(_split_label_token(token))
    return labels, "NUMA" in tail, "GPU NUMA" in tail


def _cells_and_tail(rest, n_cells):
    """Split a row's text after its label into matrix cells and the remaining fields.

    ``n_cells`` None means: take cells while they look like cells (no header known).
    Returns (cells, tail_fields, tabbed).
    """
    tabbed = "\t" in rest
    if tabbed:
        if rest.startswith("\t"):
            rest = rest[1:]
        else:
            rest = rest.lstrip(" ")
        fields = rest.split("\t")
    else:
        fields = rest.split()
    cells = []
    index = 0
    while index < len(fields) and (n_cells is None or len(cells) < n_cells):
        field = fields[index].strip()
        if not field:
            if tabbed and n_cells is not None:
                cells.append(None)  # an empty cell: keep the column positions
                index += 1
                continue
            break
        taken = False
        for part in field.split():
            pos = 0
            while n_cells is None or len(cells) < n_cells:
                match = _CELL_PREFIX.match(part, pos)
                if not match:
                    break
                cells.append(match.group(0))
                pos = match.end()
                taken = True
            if pos < len(part):
                # leftover of a fused field ("SYS0-55,..."): it starts the tail
                leftover = part[pos:] + field[field.index(part) + len(part) :]
                if not taken:
                    return cells, fields[index:], tabbed
                return cells, [leftover.strip()] + fields[index + 1 :], tabbed
        if not taken:
            break
        index += 1
    return cells, fields[index:], tabbed


def _split_fused_numa(cpu_text):
    """ "56-111,168-2231" -> ("56-111,168-223", "1"): NUMA Affinity glued onto the cpulist.

    Takes the shortest digit suffix that leaves a valid cpulist (a range must not end
    below its start).
    """
    match = re.match(r"^(.*?)(\d+)\Z", cpu_text)
    if not match:
        return None
    digits = match.group(2)
    for cut in range(1, min(len(digits), 5)):  # a NUMA id has at most 4 digits
        head = match.group(1) + digits[:-cut]
        if cpulist.is_cpulist(head):
            return head, digits[-cut:]
    return None


def _affinity_fields(tail, tabbed, has_numa, has_gpu_numa_id):
    """Row tail -> (cpu affinity text, numa text, gpu numa id text, note or None).

    TAB-separated rows are positional (a blank first field is a blank CPU Affinity); rows
    whose tabs were expanded to spaces are read by the shape of their tokens.
    """
    if tabbed and not any(" " in field.strip() for field in tail):
        cpu_text = tail[0].strip() if tail else ""
        others = [field.strip() for field in tail[1:] if field.strip()]
        numa = others[0] if others and has_numa else None
        gpu_numa = others[1] if len(others) > 1 else None
    else:
        tokens = []
        for field in tail:
            for token in field.split():
                fused = _FUSED_NA.match(token)
                tokens.extend(fused.groups() if fused else [token])
        gpu_numa = None
        if has_gpu_numa_id and (len(tokens) >= 2 or tokens == ["N/A"]):
            gpu_numa = tokens.pop()
        if not tokens:
            cpu_text, numa = "", None
        elif len(tokens) >= 2:
            cpu_text, numa = tokens[0], tokens[1]
        elif "-" in tokens[0] or "," in tokens[0] or not has_numa:
            cpu_text, numa = tokens[0], None
        else:
            cpu_text, numa = "", tokens[0]
    note = None
    if cpu_text and numa is None and has_numa:
        split = _split_fused_numa(cpu_text)
        if split is not None:
            note = "CPU Affinity and NUMA Affinity fused into %r; read as CPUs %s, NUMA %s" % (
                cpu_text,
                split[0],
                split[1],
            )
            cpu_text, numa = split
    return cpu_text, numa, gpu_numa, note


_NODE_LIST = re.compile(
    r"^[0-9]{1,4}(?:-[0-9]{1,4})?(?:,[0-9]{1,4}(?:-[0-9]{1,4})?)+\Z|"
    r"^[0-9]{1,4}-[0-9]{1,4}\Z"
)


def _numa_value(text):
    if text is None or text == "N/A":
        return None
    if re.match(r"^-?[0-9]{1,6}\Z", text):
        value = int(text)
        return value if value >= 0 else None
    return False  # not a NUMA id at all


def _numa_list(text):
    """A NUMA Affinity that is a node list -> the ids in the order printed, else None.

    Grace systems (GH200, GB200, GB300; driver R570+) print the CPU node first, then the GPU's
    memory-only nodes: ``0,3-9,11-17``. The ids are bounded like every NUMA id (0-1023)."""
    if text is None or not _NODE_LIST.match(text):
        return None
    try:
        nodes = cpulist.parse_ordered(text, SOURCE)
    except ParseError:
        return None
    if not nodes or max(nodes) > 1023 or len(set(nodes)) != len(nodes):
        return None
    return nodes


def parse(text, source=SOURCE):
    """Parse ``nvidia-smi topo -m`` (or ``-mp``) output.

    Returns ``{"gpus": [{index, name, numa_node, numa_nodes, affinity, gpu_numa_id, links}], "nics":
    [{legend, name}], "numa_off": bool, "warnings": [...]}``. ``links`` maps a peer GPU name
    (``GPU1``) or a NIC's RDMA name (``mlx5_0``; the legend id ``NIC0`` when no legend was
    printed) to the matrix cell (``NV18``, ``PIX``...). ``affinity`` is the CPU Affinity column
    normalised as a cpulist, None when blank (it is cut to the caller's cpuset).
    ``numa_nodes`` is the NUMA Affinity as printed: one id, or on Grace systems a list (the CPU
    node first, then the GPU's memory-only nodes), ``numa_node`` its first id; None when N/A.
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text, got %s" % type(text).__name__)
    lines = strip_ansi(text).replace("\r", "").split("\n")
    warnings = []

    legend = {}
    for line in lines:
        match = _NIC_LEGEND.match(line)
        if match and match.group(1) not in legend:
            legend[match.group(1)] = match.group(2)

    header_at = _find_header(lines)
    if header_at is not None:
        labels, has_numa, has_gpu_numa_id = _parse_header(lines[header_at])
        seen = set()
        for label in labels:
            if label in seen:
                raise ParseError(source, "header names column %s twice" % label)
            seen.add(label)
        body = lines[header_at + 1 :]
    else:
        labels, has_numa, has_gpu_numa_id = None, True, True
        body = lines
        warnings.append("no header row: column labels inferred from the rows")

    known = set(labels or ())
    rows = {}
    order = []
    for line in body:
        if re.match(r"^\s*(Legend|NIC Legend)\s*:", line):
            break
        row = _is_row(line, known)
        if row is None:
            continue
        label, rest = row
        if label in rows:
            warnings.append("row %s appears twice; the first one is used" % label)
            continue
        rows[label] = rest
        order.append(label)

    gpu_rows = [label for label in order if _GPU_LABEL.match(label)]
    for label in list(labels or ()) + gpu_rows:
        match = _GPU_LABEL.match(label)
        if match and len(match.group(1)) > 4:
            raise ParseError(source, "GPU label %s... is out of range" % label[:16])
    if not gpu_rows:
        raise ParseError(source, "no GPU rows found (not nvidia-smi topo -m output?)")

    if labels is None:
        labels = _infer_labels(rows, order, gpu_rows, legend, warnings)
        known = set(labels)
    n_cells = len(labels)

    matrix = {}
    tails = {}
    cut = set()
    for label in order:
        cells, tail, tabbed = _cells_and_tail(rows[label], n_cells)
        if len(cells) < n_cells:
            warnings.append("row %s: %d of %d cells readable" % (label, len(cells), n_cells))
            if not "".join(tail).strip():
                cut.add(label)  # the row stops inside the matrix: its affinities were cut
        for column, cell in zip(labels, cells):
            if cell is not None:
                matrix[(label, column)] = "SYS" if cell == "SOC" else cell
        tails[label] = (tail, tabbed)

    gpu_columns = [label for label in labels if _GPU_LABEL.match(label)]
    nic_columns = [label for label in labels if not _GPU_LABEL.match(label) and not label.startswith(_UNKNOWN_COLUMN)]
    if nic_columns and all(re.match(r"^NIC\d+\Z", label) for label in nic_columns):
        missing = [label for label in nic_columns if label not in legend]
        if missing:
            warnings.append("no NIC Legend for %s: NICs keyed by legend id" % ",".join(missing))
    nics = [{"legend": label, "name": legend.get(label, label)} for label in nic_columns]
    nic_name = dict((nic["legend"], nic["name"]) for nic in nics)

    for column in gpu_columns:
        if column not in rows:
            warnings.append("%s: column in the matrix but no row (capture cut?)" % column)

    gpus = []
    for label in gpu_rows:
        if label not in known:
            warnings.append("row %s has no column in the header; skipped" % label)
            continue
        gpus.append(
            _gpu_entry(
                label, labels, matrix, tails[label], nic_name, has_numa and label not in cut, has_gpu_numa_id, warnings
            )
        )
    if not gpus:
        raise ParseError(source, "no GPU row matches a header column")
    gpus.sort(key=lambda gpu: gpu["index"])

    numa_off = _detect_numa_off(gpus, matrix, warnings)
    return {"gpus": gpus, "nics": nics, "numa_off": numa_off, "warnings": warnings}


def _infer_labels(rows, order, gpu_rows, legend, warnings):
    """Column labels of a header-less capture, from the cells, never from the rows present.

    A column is a GPU's when a GPU row holds its ``X`` or any row an ``NV#`` cell in it (an
    NVLink joins two GPUs); the GPU/NIC boundary is where the first NIC row has its ``X``
    (NIC<k>'s at n_gpu + k), else the NIC Legend's count, else - GPUs joined pairwise by
    NVLink - the first column without NV#. Without any of these the columns past the last
    known GPU are left out with a warning: no phantom NIC, no NIC made of a cut GPU's column.
    """
    width = 0
    n_gpu = 0
    for label in order:
        cells, _tail, _tabbed = _cells_and_tail(rows[label], None)
        width = max(width, len(cells))
        for column, cell in enumerate(cells):
            if cell.startswith("NV"):
                n_gpu = max(n_gpu, column + 1)
        if label in gpu_rows:
            if "X" in cells:
                n_gpu = max(n_gpu, cells.index("X") + 1)
            n_gpu = max(n_gpu, int(_GPU_LABEL.match(label).group(1)) + 1)
    boundary = None
    for label in order:
        match = re.match(r"^NIC(\d+)\Z", label)
        if not match:
            continue
        cells, _tail, _tabbed = _cells_and_tail(rows[label], None)
        if "X" in cells:
            boundary = cells.index("X") - int(match.group(1))
            break
    if boundary is None and legend:
        boundary = width - len(legend)
    if (
        boundary is None
        and n_gpu > 1
        and all(
            cell.startswith("NV") or cell == "X"
            for label in gpu_rows
            for cell in _cells_and_tail(rows[label], None)[0][:n_gpu]
        )
    ):
        boundary = n_gpu  # NVLinked GPUs (every GPU pair NV#): a column without NV# is a NIC
    if boundary is None:
        if width > n_gpu:
            warnings.append(
                "matrix columns %d-%d: no row, no NIC row and no NIC Legend say "
                "whether they are GPUs or NICs; their cells are left out" % (n_gpu, width - 1)
            )
        return ["GPU%d" % i for i in range(n_gpu)] + ["%s%d" % (_UNKNOWN_COLUMN, i) for i in range(n_gpu, width)]
    n_gpu = max(n_gpu, boundary)
    n_nic = max(0, width - n_gpu)
    return ["GPU%d" % i for i in range(n_gpu)] + ["NIC%d" % i for i in range(n_nic)]


def _gpu_entry(label, labels, matrix, tail_info, nic_name, has_numa, has_gpu_numa_id, warnings):
    index = int(_GPU_LABEL.match(label).group(1))
    tail, tabbed = tail_info
    cpu_text, numa_text, gpu_numa_text, note = _affinity_fields(tail, tabbed, has_numa, has_gpu_numa_id)
    if note:
        warnings.append("%s: %s" % (label, note))
    affinity = None
    if cpu_text:
        if cpulist.is_cpulist(cpu_text):
            affinity = cpulist.format(cpulist.parse(cpu_text))
        else:
            warnings.append("%s: CPU Affinity %r is not a cpulist" % (label, cpu_text))
    elif has_numa:
        warnings.append(
            "%s: CPU Affinity is blank (the caller's cpuset holds none of its "
            "CPUs); use the NUMA node's CPUs instead" % label
        )
    numa_node = _numa_value(numa_text)
    numa_nodes = None
    if numa_node is False:
        numa_nodes = _numa_list(numa_text)
        if numa_nodes is None:
            warnings.append("%s: NUMA Affinity %r is not a NUMA id" % (label, numa_text))
            numa_node = None
        else:
            numa_node = numa_nodes[0]
    elif numa_node is not None:
        numa_nodes = [numa_node]
    gpu_numa_id = _numa_value(gpu_numa_text) if has_gpu_numa_id else None
    if gpu_numa_id is False:
        gpu_numa_id = None
    links = {}
    for column in labels:
        if column == label or column.startswith(_UNKNOWN_COLUMN):
            continue
        cell = matrix.get((label, column))
        if cell is None:
            cell = matrix.get((column, label))  # the transposed cell from the peer's row
        if cell is None or cell == "X":
            continue
        links[nic_name.get(column, column)] = cell
    return {
        "index": index,
        "name": label,
        "numa_node": numa_node,
        "numa_nodes": numa_nodes,
        "affinity": affinity,
        "gpu_numa_id": gpu_numa_id,
        "links": links,
    }


def _detect_numa_off(gpus, matrix, warnings):
    """numa=off: every NUMA Affinity N/A, or every GPU on node 0 with the same CPUs and not a
    single SYS cell (the kernel folded both sockets into one node)."""
    if all(gpu["numa_node"] is None for gpu in gpus) and any(gpu["affinity"] for gpu in gpus):
        warnings.append("no GPU has a NUMA Affinity (numa=off?): NUMA pinning is not possible")
        return True
    if len(gpus) < 2:
        return False
    affinities = set(gpu["affinity"] for gpu in gpus)
    nodes = set(gpu["numa_node"] for gpu in gpus)
    if (
        nodes == {0}
        and len(affinities) == 1
        and None not in affinities
        and "SYS" not in matrix.values()
        and "NODE" in matrix.values()
    ):
        warnings.append(
            "every GPU reports NUMA 0 with CPUs %s and no link crosses a socket "
            "(SYS): the kernel runs with numa=off or the host has one NUMA node; "
            "NUMA pinning is not meaningful" % affinities.pop()
        )
        return True
    return False
