# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Exact minimum-cost assignment, and GPU<->NIC pairing on top of it.

``solve`` is the shortest-augmenting-path Hungarian method (Jonker-Volgenant style, with row
and column potentials), O(n^2 m) for an n x m matrix, in plain Python because managed hosts
have no scipy. A 16 x 40 GPU/NIC matrix solves in a few milliseconds.

``pair`` turns link cells into a canonical pairing: minimum total link cost first, then the
most even NIC load, then a lexicographic tie-break (GPU 0 gets the lowest-ranked NIC among
all optimal pairings, then GPU 1, ...). The three tiers are folded into one exact integer
cost, so the tie-breaks never overturn the primary optimum and identical hosts always give
identical pairings, whatever order their GPUs and NICs were listed in.

Pure functions, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors

# nvidia-smi matrix cell -> cost (smaller is closer). NCCL has no NODE class (it folds NODE
# into PHB, "same NUMA node, through the CPU"); ranking NODE after PHB keeps the order
# nvidia-smi's legend gives and changes nothing NCCL cares about: both are past the GDR gate.
LINK_COSTS = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}
NVLINK_COST = 1
UNKNOWN_COST = 100  # X (self), blank, or a cell the parser could not read


def link_cost(cell):
    """Cost of one matrix cell: NV#/XGMI/PIX 1, PXB 2, PHB 3, NODE 4, SYS 5, anything else 100."""
    if not isinstance(cell, str):
        return UNKNOWN_COST
    cell = cell.strip().upper()
    if re.match(r"^NV\d+\Z", cell):
        return NVLINK_COST
    if cell in LINK_COSTS:
        return LINK_COSTS[cell]
    extra = vendors.link_cost_extra(cell)  # another vendor's fabric (XGMI) ranks as NV#
    return UNKNOWN_COST if extra is None else extra


def _check_matrix(cost_matrix):
    if not isinstance(cost_matrix, (list, tuple)):
        raise PlanError("cost matrix must be a list of rows, got %s" % type(cost_matrix).__name__)
    rows = [list(row) if isinstance(row, (list, tuple)) else row for row in cost_matrix]
    width = None
    for num, row in enumerate(rows):
        if not isinstance(row, list):
            raise PlanError("cost matrix row %d is not a list" % num)
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise PlanError("cost matrix is ragged: row %d has %d columns, row 0 has %d" % (num, len(row), width))
        for col, value in enumerate(row):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise PlanError("cost matrix cell (%d, %d) is not a number: %r" % (num, col, value))
            if (isinstance(value, float) and math.isnan(value)) or value == -float("inf"):
                raise PlanError("cost matrix cell (%d, %d) is %r" % (num, col, value))
    return rows, width or 0


def solve(cost_matrix):
    """Minimum-cost assignment of a rectangular matrix; ``[(row, col), ...]`` sorted by row.

    Every row is assigned when rows <= columns, every column when rows > columns (as
    ``scipy.optimize.linear_sum_assignment``). Cells may be ``float("inf")`` (forbidden);
    raises PlanError when no assignment avoids them, or on a malformed matrix.
    """
    rows, width = _check_matrix(cost_matrix)
    if not rows or not width:
        return []
    if len(rows) <= width:
        return _solve_wide(rows, len(rows), width)
    transposed = [[rows[r][c] for r in range(len(rows))] for c in range(width)]
    pairs = _solve_wide(transposed, width, len(rows))
    return sorted((row, col) for col, row in pairs)


def _solve_wide(cost, n_rows, n_cols):
    """Shortest augmenting paths with potentials; requires n_rows <= n_cols.

    Columns are 1-based inside (column 0 is the virtual start); ``owner[j]`` is the row
    (1-based) holding column j, 0 when free.
    """
    inf = float("inf")
    row_pot = [0] * (n_rows + 1)
    col_pot = [0] * (n_cols + 1)
    owner = [0] * (n_cols + 1)
    via = [0] * (n_cols + 1)
    for row in range(1, n_rows + 1):
        owner[0] = row
        col0 = 0
        slack = [inf] * (n_cols + 1)
        done = [False] * (n_cols + 1)
        while True:
            done[col0] = True
            row0 = owner[col0]
            costs = cost[row0 - 1]
            pot0 = row_pot[row0]
            delta = inf
            col1 = 0
            for col in range(1, n_cols + 1):
                if done[col]:
                    continue
                reduced = costs[col - 1] - pot0 - col_pot[col]
                if reduced < slack[col]:
                    slack[col] = reduced
                    via[col] = col0
                if slack[col] < delta:
                    delta = slack[col]
                    col1 = col
            if col1 == 0 or delta == inf:
                raise PlanError(
                    "no assignment avoids the forbidden (infinite) cells; row %d cannot be placed" % (row - 1)
                )
            for col in range(n_cols + 1):
                if done[col]:
                    row_pot[owner[col]] += delta
                    col_pot[col] -= delta
                else:
                    slack[col] -= delta
            col0 = col1
            if owner[col0] == 0:
                break
        while col0:
            col1 = via[col0]
            owner[col0] = owner[col1]
            col0 = col1
    return sorted((owner[col] - 1, col - 1) for col in range(1, n_cols + 1) if owner[col])


def total_cost(cost_matrix, pairs):
    """Sum of the chosen cells."""
    return sum(cost_matrix[row][col] for row, col in pairs)


def pair(costs, gpus, nics, capacity=None):
    """Pair every GPU with a NIC at minimum total cost, canonically.

    ``costs``: {(gpu, nic): int} primary cost (missing pairs cost UNKNOWN_COST).
    ``gpus``, ``nics``: ids in canonical order (GPU index; NIC PCI address, else name) --
    the order decides ties, nothing else does.
    ``capacity``: most GPUs one NIC may serve; default ceil(len(gpus) / len(nics)), so with
    fewer NICs than GPUs they are shared evenly, and with more only the best are used.

    Returns {gpu: nic} for every GPU ({} when there are no NICs).
    """
    gpus = list(gpus)
    nics = list(nics)
    if not gpus or not nics:
        return {}
    if len(set(gpus)) != len(gpus) or len(set(nics)) != len(nics):
        raise PlanError("GPU and NIC ids given to the pairing must be unique")
    if capacity is None:
        capacity = int(math.ceil(len(gpus) / float(len(nics))))
    if capacity * len(nics) < len(gpus):
        raise PlanError("%d NICs with capacity %d cannot serve %d GPUs" % (len(nics), capacity, len(gpus)))
    n_gpus = len(gpus)
    rank_base = len(nics)
    # tier 3 (lexicographic): GPU i choosing NIC rank j costs j * rank_base**(n-1-i); the sum
    # over all GPUs stays below rank_base**n, so it only ever breaks ties of the tiers above
    lexi_span = rank_base**n_gpus
    # tier 2 (even load): the k-th GPU on a NIC costs k; the sum stays below n * capacity + 1
    load_span = lexi_span * (n_gpus * capacity + 1)
    matrix = []
    for i, gpu in enumerate(gpus):
        weight = rank_base ** (n_gpus - 1 - i)
        row = []
        for j, nic in enumerate(nics):
            primary = costs.get((gpu, nic), UNKNOWN_COST)
            if isinstance(primary, bool) or not isinstance(primary, int) or primary < 0:
                raise PlanError("link cost of %s-%s must be a non-negative integer, got %r" % (gpu, nic, primary))
            for slot in range(capacity):
                row.append(primary * load_span + slot * lexi_span + j * weight)
        matrix.append(row)
    chosen = solve(matrix)
    return dict((gpus[row], nics[col // capacity]) for row, col in chosen)
