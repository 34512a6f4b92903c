# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spec language of ``schema`` and its walk.

A spec is a tuple: ``(INT,)``, ``(NODE,)`` (an INT or -1), ``(INT_TEXT,)`` (an integer or its
decimal text), ``(STR,)``, ``(BOOL,)``, ``(NUM,)``, ``(CPUS,)``,
``(SCALAR,)``, ``(ANY,)``, ``(OPT, spec)`` (None allowed), ``(LIST, item)``, ``(MAP, key,
value)`` (keys: ``STR`` or ``DIGITS``, decimal text) and ``(RECORD, {field: spec})``.

``check(value, spec, source)`` raises ``InputError(source, "<field>: <problem>")`` for the
first field of a wrong type, found by ``_check``, the one walk and the one place that words a
problem.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset

INT, NODE, STR, BOOL, NUM, CPUS, SCALAR, ANY, OPT, LIST, MAP, RECORD, DIGITS, INT_TEXT = (
    "int",
    "node",
    "str",
    "bool",
    "num",
    "cpus",
    "scalar",
    "any",
    "opt",
    "list",
    "map",
    "record",
    "digits",
    "int_text",
)
# Ids, counts and sizes in facts and plans: 0 to 2**31 - 1 (a NUMA node may also be -1, as
# sysfs says "no node").
MIN_INT, MAX_INT = 0, (1 << 31) - 1
MAX_ITEMS = 1 << 16  # entries of one list or mapping (a host has hundreds at most)


def kind_name(value):
    """The type of ``value`` as a problem names it (``list``, ``dict``...)."""
    return type(value).__name__


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _int_ok(value):
    return isinstance(value, int) and not isinstance(value, bool) and MIN_INT <= value <= MAX_INT


def _path(where):
    """The field path of a problem: built only when a problem names it (checking a large topology
    would otherwise format a path for every value)."""
    if not isinstance(where, tuple):
        return where
    parent, fmt, key = where
    parent = _path(parent)
    if fmt == ".%s":
        return "%s.%s" % (parent, key) if parent else str(key)
    return parent + fmt % (_short(key) if fmt == "[%s]" else key)


def _container_problem(value, cls, noun, where, problems):
    """True (the problem added) unless ``value`` is a ``cls`` of at most ``MAX_ITEMS`` entries."""
    if not isinstance(value, cls):
        problems.append("%s: expected %s, got %s" % (_path(where), noun, kind_name(value)))
    elif len(value) > MAX_ITEMS:
        problems.append("%s: more than %d entries" % (_path(where), MAX_ITEMS))
    else:
        return False
    return True


def _check(value, spec, where, problems):
    kind = spec[0]
    if kind == OPT:
        if value is not None:
            _check(value, spec[1], where, problems)
        return
    if kind == ANY:
        return
    if kind in (INT, NODE):
        low = -1 if kind == NODE else MIN_INT
        if not (
            _int_ok(value) or (kind == NODE and isinstance(value, int) and value == -1 and not isinstance(value, bool))
        ):
            problems.append(
                "%s: expected an integer from %d to %d, got %s" % (_path(where), low, MAX_INT, _short(value))
            )
    elif kind == INT_TEXT:
        if not (_int_ok(value) or (isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 9)):
            problems.append("%s: expected an integer, got %s" % (_path(where), _short(value)))
    elif kind == STR:
        if not isinstance(value, str):
            problems.append("%s: expected a string, got %s" % (_path(where), kind_name(value)))
    elif kind == BOOL:
        if not isinstance(value, bool):
            problems.append("%s: expected true or false, got %s" % (_path(where), _short(value)))
    elif kind == NUM:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append("%s: expected a number, got %s" % (_path(where), _short(value)))
    elif kind == SCALAR:
        if not isinstance(value, (str, int, float, bool)):
            problems.append("%s: expected a string or a number, got %s" % (_path(where), kind_name(value)))
    elif kind == CPUS:
        # a cpulist (text), one CPU id or a list of CPU ids: cpus/ reads the content
        if not (
            isinstance(value, str)
            or _int_ok(value)
            or (
                isinstance(value, list)
                and len(value) <= MAX_ITEMS
                and all(_int_ok(item) or (isinstance(item, str) and item.isdecimal()) for item in value)
            )
        ):
            problems.append('%s: expected a cpulist such as "0-3,8", got %s' % (_path(where), _short(value)))
    elif kind == LIST:
        if not _container_problem(value, list, "a list", where, problems):
            for index, item in enumerate(value):
                _check(item, spec[1], (where, "[%d]", index), problems)
                if problems:
                    return
    elif kind == MAP:
        if not _container_problem(value, dict, "a mapping", where, problems):
            for key, item in value.items():
                if not isinstance(key, str) or (
                    spec[1] == DIGITS and not (key.isdigit() and key.isascii() and len(key) <= 9)
                ):
                    problems.append(
                        "%s: key %s is not %s"
                        % (_path(where), _short(key), "a decimal id" if spec[1] == DIGITS else "a string")
                    )
                    return
                _check(item, spec[2], (where, "[%s]", key), problems)
                if problems:
                    return
    elif kind == RECORD:
        if not isinstance(value, dict):
            problems.append("%s: expected a mapping, got %s" % (_path(where), kind_name(value)))
            return
        for field, sub in spec[1].items():
            if field in value:
                _check(value[field], sub, (where, ".%s", field), problems)
                if problems:
                    return
            elif sub[0] != OPT:
                problems.append("%s: missing" % _path((where, ".%s", field)))
                return


def fits(value, spec):
    """True when ``_check`` finds no problem in ``value`` (the fields ``spec`` lists; no depth
    bound)."""
    problems = []
    _check(value, spec, "", problems)
    return not problems


def check(value, spec, source):
    """``value`` if it fits ``spec``; InputError(source, "<field>: <problem>") otherwise.
    The whole value (keys the spec does not list included) nests at most 32 levels."""
    yaml_subset.check_depth(value, source, lambda msg: InputError(source, msg.split(": ", 1)[1]))
    problems = []
    _check(value, spec, "", problems)
    if problems:
        message = problems[0]
        if message.startswith(": "):
            message = message[2:]
        raise InputError(source, message)
    return value
