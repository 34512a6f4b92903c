# -*- coding: utf-8 -*-
"""Hostile inputs for the fuzz suite (tests/unit/fuzz/): text mutations of real outputs and
value mutations of real facts and plans, as hypothesis strategies.

- ``SPICE``: fragments that broke parsers before (huge numbers, non-ASCII digits, deep
  nesting, NUL, separators)
- ``mutated_text(texts)``: a text from ``texts`` with 1-6 insertions, deletions, character
  swaps or number replacements
- ``HOSTILE_VALUES``: values of every JSON type that a field should not hold
- ``mutated_value(value)``: ``value`` (facts, a plan, options) with 1-4 fields anywhere in it
  replaced by a hostile value, or a list/mapping cut or duplicated
- ``texts_of(paths)``: the contents of text files (fixtures, snapshot files)
- ``fuzz_examples(default)``: hypothesis examples per fuzz test; ``NPUOPS_FUZZ_EXAMPLES``
  overrides it for a long campaign (``make test`` keeps the moderate default)
"""

import copy
import os

from hypothesis import strategies as st

SPICE = [
    "9" * 5000,
    "99999999999",
    "0-4294967295",
    "0-99999999",
    "0-19999999",
    "-1",
    "\u00b2",
    "\u0663",
    "\x00",
    "\t",
    "|",
    "+",
    ":",
    ",",
    "  ",
    "\n",
    "%",
    "[" * 3000,
    "{" * 50,
    "1e999",
    "nan",
    "N/A",
    "NA",
    "X",
    "CPU0",
    "GPU0",
    "NPU0",
    "NIC0",
    "mlx5_0",
    "PIX",
    "NUMA node0 CPU(s):",
    "Cpus_allowed_list:",
    "- ",
    "null",
    "true",
    "'",
    '"',
    "#",
    "0-8191,0-8191,0-8191,0-8191,0-8191",
]
NUMBERS = ["9" * 5000, "4294967295", "99999999", "-5", "0-99999999", "x", "\u00b2", "1e999"]

HOSTILE_VALUES = [
    None,
    True,
    False,
    -1,
    -(10**30),
    10**30,
    2**63,
    1.5,
    float("inf"),
    "",
    "x",
    "0-99999999",
    "0-4294967295",
    "9" * 5000,
    "\x00",
    "../../etc",
    "a@b",
    "@",
    [],
    [1],
    ["x"],
    [[[]]],
    {},
    {"x": 1},
    {"0": None},
]


def fuzz_examples(default):
    return int(os.environ.get("NPUOPS_FUZZ_EXAMPLES") or default)


def texts_of(paths, limit=40000):
    out = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                out.append(handle.read(limit).decode("utf-8", "replace"))
        except (IOError, OSError):
            continue
    return out


def files_under(root, suffixes=None):
    found = []
    for dirpath, dirnames, names in os.walk(root):
        dirnames.sort()
        for name in sorted(names):
            if suffixes is None or name.endswith(tuple(suffixes)):
                found.append(os.path.join(dirpath, name))
    return found


@st.composite
def mutated_text(draw, texts):
    text = draw(st.sampled_from(texts))
    for dummy in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "char", "number", "line"]))
        if op == "insert":
            text = text[:pos] + draw(st.sampled_from(SPICE)) + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 60)) :]
        elif op == "char":
            text = text[:pos] + draw(st.characters()) + text[pos + 1 :]
        elif op == "number":
            end = pos
            while end < len(text) and text[end].isdigit():
                end += 1
            text = text[:pos] + draw(st.sampled_from(NUMBERS)) + text[end:]
        else:
            lines = text.split("\n")
            index = draw(st.integers(0, max(0, len(lines) - 1)))
            lines.insert(index, draw(st.sampled_from(lines + SPICE)))
            text = "\n".join(lines)
    return text


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON-like value, containers included."""
    out = [(prefix, value)]
    if isinstance(value, dict):
        for key in value:
            out.extend(_paths(value[key], prefix + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, prefix + (index,)))
    return out


def _set(root, path, new):
    node = root
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new


@st.composite
def mutated_value(draw, value):
    value = copy.deepcopy(value)
    for dummy in range(draw(st.integers(1, 4))):
        paths = [p for p, dummy_v in _paths(value) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "replace", "cut", "grow"]))
        node = value
        for key in path[:-1]:
            node = node[key]
        current = node[path[-1]]
        if op == "cut" and isinstance(current, (list, dict)) and current:
            if isinstance(current, list):
                del current[draw(st.integers(0, len(current) - 1))]
            else:
                del current[draw(st.sampled_from(sorted(current, key=str)))]
        elif op == "grow" and isinstance(current, list) and current:
            current.append(copy.deepcopy(draw(st.sampled_from(current))))
        else:
            _set(value, path, copy.deepcopy(draw(st.sampled_from(HOSTILE_VALUES))))
    return value
