# -*- coding: utf-8 -*-
"""Data-driven parser cases (in the spirit of community.general's ``uthelper``): a table of
real fixture -> expected values is a YAML file, one data-driven test runs it.

A case file ``tests/unit/plugins/module_utils/parse/cases/<parser>.yml``::

    module: npu_smi             # plugins/module_utils/parse/<module>.py; a path with a slash
                                # is under module_utils/ (kubelet/parse/files: a feature package)
    function: parse_info        # default parser function of the cases (a case may override)
    cases:
      - fixture: ascend/a2-910b3x8_npu-smi-info_v23.0.7.txt    # under tests/fixtures/real
        id: a2-v23              # optional; default: the fixture's file name without .txt
        function: parse_info    # optional
        expected:               # selector: value; every selector must equal its value
          version: '23.0.7'
          chips[].name: ['910B3', '910B3']
          len(processes): 0

Selectors pick a value out of the parser's result:

- ``a.b.c``: dict keys (an all-digit step indexes a list); a key may hold spaces, not dots
- ``a[]``: the list under ``a``, the rest of the selector applied to each item
- ``a[:N]``: the same over the first N items
- ``a[k=v]``: the one item of the list whose ``str(item[k]) == "v"`` (exactly one must match)
- ``a[?k=v]``: the items whose ``str(item[k]) == "v"`` (any number), the rest applied to each
- ``len(sel)``, ``set(sel)`` (sorted distinct values), ``keys(sel)`` (dict keys in order)

The case files quote every string that starts with a digit or holds a colon (``'23.0.7'``,
``'0x02'``, ``'0-23'``, ``'0000:c1:00.0'``): YAML would read some of them as numbers.
"""

import importlib
import os
import re

import yaml

from npuops_testing import fixture_text

MODULE_UTILS = "ansible_collections.npuops.fleet.plugins.module_utils"
PARSE_PACKAGE = MODULE_UTILS + ".parse"
_STEP = re.compile(r"^([^\[\]]*)(?:\[([^\]]*)\])?$")
_FUNC = re.compile(r"^(len|set|keys)\((.*)\)$")


class Case(object):
    """One row of a case file."""

    def __init__(self, source, module, function, fixture, expected, case_id):
        self.source, self.module, self.function = source, module, function
        self.fixture, self.expected, self.id = fixture, expected, case_id

    def run(self):
        """The parser's result on the fixture's text."""
        if "/" in self.module:
            name = MODULE_UTILS + "." + self.module.replace("/", ".")
        else:
            name = PARSE_PACKAGE + "." + self.module
        parser = getattr(importlib.import_module(name), self.function)
        return parser(fixture_text(self.fixture))

    def __repr__(self):
        return "Case(%s:%s)" % (self.source, self.id)


def load(path):
    """The cases of one file, in file order."""
    with open(path, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    source = os.path.splitext(os.path.basename(path))[0]
    module = doc["module"]
    out = []
    for entry in doc["cases"]:
        unknown = set(entry) - {"fixture", "id", "function", "expected"}
        if unknown or not entry.get("expected"):
            raise ValueError(
                "%s: case %r: unknown keys %s or no expected values" % (path, entry.get("fixture"), sorted(unknown))
            )
        fixture = entry["fixture"]
        case_id = entry.get("id") or os.path.basename(fixture).rsplit(".txt", 1)[0]
        out.append(
            Case(source, module, entry.get("function") or doc.get("function"), fixture, entry["expected"], case_id)
        )
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise ValueError("%s: duplicate case ids" % path)
    return out


def load_dir(directory):
    """The cases of every ``*.yml`` in ``directory``, files sorted by name."""
    out = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".yml"):
            out.extend(load(os.path.join(directory, name)))
    return out


def _steps(path):
    steps = []
    for part in path.split("."):
        match = _STEP.match(part)
        if not match:
            raise ValueError("bad selector step %r in %r" % (part, path))
        steps.append((match.group(1), match.group(2)))
    return steps


def _child(value, key, where):
    if isinstance(value, list) and key.isdigit():
        if int(key) >= len(value):
            raise AssertionError("%s: index %s out of range (%d items)" % (where, key, len(value)))
        return value[int(key)]
    if not isinstance(value, dict) or key not in value:
        keys = sorted(value) if isinstance(value, dict) else type(value).__name__
        raise AssertionError("%s: no key %r (have %s)" % (where, key, keys))
    return value[key]


def _walk(value, steps, where):
    if not steps:
        return value
    (key, spec), rest = steps[0], steps[1:]
    if key:
        value = _child(value, key, where)
    if spec is None:
        return _walk(value, rest, where)
    if not isinstance(value, list):
        raise AssertionError("%s: [%s] on a %s, not a list" % (where, spec, type(value).__name__))
    if spec == "":
        return [_walk(item, rest, where) for item in value]
    if spec.startswith(":"):
        return [_walk(item, rest, where) for item in value[: int(spec[1:])]]
    many = spec.startswith("?")
    field, dummy, want = spec.lstrip("?").partition("=")
    picked = [item for item in value if isinstance(item, dict) and str(item.get(field)) == want]
    if many:
        return [_walk(item, rest, where) for item in picked]
    if len(picked) != 1:
        raise AssertionError("%s: %d items with %s=%s, expected exactly one" % (where, len(picked), field, want))
    return _walk(picked[0], rest, where)


def select(value, selector):
    """The part of ``value`` that ``selector`` names (see the module doc)."""
    match = _FUNC.match(selector)
    if match:
        func, inner = match.groups()
        got = select(value, inner)
        if func == "len":
            return len(got)
        if func == "keys":
            return list(got)
        return sorted(set(got), key=lambda v: (v is not None, type(v).__name__, v))
    return _walk(value, _steps(selector), selector)


def _typed(value):
    """``value`` with booleans told apart from the integers they equal (True != 1 here)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (list, tuple)):
        return [_typed(v) for v in value]
    if isinstance(value, dict):
        return dict((k, _typed(v)) for k, v in value.items())
    return value


def mismatches(result, expected):
    """One line per selector whose value differs from ``expected[selector]``."""
    out = []
    for selector, want in expected.items():
        try:
            got = select(result, selector)
        except AssertionError as err:
            out.append(str(err))
            continue
        if _typed(got) != _typed(want):
            out.append("%s: got %r, expected %r" % (selector, got, want))
    return out


def check(result, expected):
    """Assert every selector of ``expected`` matches ``result``; the message lists them all."""
    problems = mismatches(result, expected)
    assert not problems, "\n".join(problems)
