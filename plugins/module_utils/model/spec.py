# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spec language of ``schema`` and its two walks.

A spec is a tuple: ``(INT,)``, ``(NODE,)`` (an INT or -1), ``(INT_TEXT,)`` (an integer or its
decimal text), ``(STR,)``, ``(BOOL,)``, ``(NUM,)``, ``(CPUS,)``,
``(SCALAR,)``, ``(ANY,)``, ``(OPT, spec)`` (None allowed), ``(LIST, item)``, ``(MAP, key,
value)`` (keys: ``STR`` or ``DIGITS``, decimal text) and ``(RECORD, {field: spec})``.

``check(value, spec, source, fast)`` raises ``InputError(source, "<field>: <problem>")`` for
the first field of a wrong type, found by ``_check``, the reference walk and the one place
that words a problem. ``fast`` is ``compile_spec(spec)``: the same answer as a predicate
compiled once, which a valid input (the usual one) needs alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from itertools import chain, repeat
from operator import itemgetter

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset

INT, NODE, STR, BOOL, NUM, CPUS, SCALAR, ANY, OPT, LIST, MAP, RECORD, DIGITS, INT_TEXT = (
    "int", "node", "str", "bool", "num", "cpus", "scalar", "any", "opt", "list", "map", "record",
    "digits", "int_text")
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
        if not (_int_ok(value) or (kind == NODE and isinstance(value, int) and value == -1 and
                                   not isinstance(value, bool))):
            problems.append("%s: expected an integer from %d to %d, got %s"
                            % (_path(where), low, MAX_INT, _short(value)))
    elif kind == INT_TEXT:
        if not (_int_ok(value) or (isinstance(value, str) and value.isascii() and
                                   value.isdigit() and len(value) <= 9)):
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
        if not (isinstance(value, str) or _int_ok(value) or
                (isinstance(value, list) and len(value) <= MAX_ITEMS and
                 all(_int_ok(item) or (isinstance(item, str) and item.isdecimal())
                     for item in value))):
            problems.append("%s: expected a cpulist such as \"0-3,8\", got %s"
                            % (_path(where), _short(value)))
    elif kind == LIST:
        if not _container_problem(value, list, "a list", where, problems):
            for index, item in enumerate(value):
                _check(item, spec[1], (where, "[%d]", index), problems)
                if problems:
                    return
    elif kind == MAP:
        if not _container_problem(value, dict, "a mapping", where, problems):
            for key, item in value.items():
                if not isinstance(key, str) or (spec[1] == DIGITS and not (
                        key.isdigit() and key.isascii() and len(key) <= 9)):
                    problems.append("%s: key %s is not %s" % (
                        _path(where), _short(key), "a decimal id" if spec[1] == DIGITS else "a string"))
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


# -- the compiled check -------------------------------------------------------------------
# ``compile_spec(spec)`` is a predicate, True exactly when ``_check`` finds no problem: closures
# built once at import that test the usual types inline, so a valid topology costs one pass
# over the fields listed instead of a ``_check`` call per value. ``check`` runs ``_check``
# (the one place that words a problem) only when it says False; the unit tests hold the two
# to the same answer on real and mutated inputs.

_NONE = type(None)
_ABSENT = object()
# the decimal texts of small ids ("0" to "4095"): map keys and INT_TEXT values found by lookup
_ID_TEXTS = frozenset(str(number) for number in range(4096))


def _fits_int(value):
    return (value.__class__ is int and MIN_INT <= value <= MAX_INT) or _int_ok(value)


def _fits_node(value):
    return _fits_int(value) or (isinstance(value, int) and not isinstance(value, bool) and
                                value == -1)


def _fits_int_text(value):
    return _int_ok(value) or (isinstance(value, str) and value.isascii() and value.isdigit() and
                              len(value) <= 9)


def _fits_cpus(value):
    return isinstance(value, str) or _int_ok(value) or (
        isinstance(value, list) and len(value) <= MAX_ITEMS and
        all(_int_ok(item) or (isinstance(item, str) and item.isdecimal()) for item in value))


# leaf kind: (predicate, the types whose every value fits)
_LEAVES = {
    INT: (_fits_int, ()), NODE: (_fits_node, ()), INT_TEXT: (_fits_int_text, ()),
    STR: (lambda value: isinstance(value, str), (str,)),
    BOOL: (lambda value: isinstance(value, bool), (bool,)),
    NUM: (lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
          (int, float)),
    SCALAR: (lambda value: isinstance(value, (str, int, float, bool)), (str, int, float, bool)),
    CPUS: (_fits_cpus, (str,)),
    ANY: (lambda value: True, ()),
}


def _inner(spec):
    return spec[1] if spec[0] == OPT else spec


def _compiled(spec):
    """``(fits, sure)``: ``sure``, a frozenset of the types whose every value fits;
    ``fits(value)`` answers for the others (callers test ``sure`` first: OPT adds None)."""
    kind = spec[0]
    if kind == OPT:
        fits, sure = _compiled(spec[1])
        return fits, sure | frozenset([_NONE])
    if kind in _LEAVES:
        fits, sure = _LEAVES[kind]
        return fits, frozenset(sure)
    if kind == LIST:
        return _list(spec[1]), frozenset()
    if kind == MAP:
        return _map(spec[1] == DIGITS, spec[2]), frozenset()
    return _record(spec[1]), frozenset()


def _list(spec):
    if spec[0] == RECORD:
        return _records(spec[1])
    item_fits, sure = _compiled(spec)

    def fits(value):
        if not isinstance(value, list) or len(value) > MAX_ITEMS:
            return False
        for item in value:
            if type(item) not in sure and not item_fits(item):
                return False
        return True
    return fits


def _records(fields):
    """A list of records (``npus``...) checked a field at a time over all of them: the types
    of a column are one set, its ints one min and max, its lists empty when none is true."""
    record_fits = _record(fields)
    columns = []
    for field, sure, item_fits, ranged in _listed(fields):
        spec = fields[field]
        empty = {LIST: list, MAP: dict}.get(_inner(spec)[0])
        # a required field reads as _ABSENT where it is missing, which fits no spec but ANY
        columns.append((field, None if spec[0] == OPT else _ABSENT, sure, item_fits, ranged,
                        sure | frozenset([empty]) if empty else None))
    required = tuple(field for field, sub in fields.items() if sub[0] == ANY)
    # every field of every record in one pass (a missing one raises KeyError: then a field
    # at a time, where a missing one reads as None or _ABSENT)
    row = itemgetter(*fields) if len(fields) > 1 else None
    plain = frozenset([dict])
    ints = frozenset([int])
    get = dict.get
    has = dict.__contains__

    def fits(value):
        if not isinstance(value, list) or len(value) > MAX_ITEMS:
            return False
        if not value:
            return True
        if set(map(type, value)) != plain:
            # not all plain dicts: one at a time
            return all(map(record_fits, value))
        for field in required:
            if not all(map(has, value, repeat(field))):
                return False
        try:
            table = list(zip(*map(row, value))) if row is not None else None
        except KeyError:
            table = None
        for index, (field, absent, sure, item_fits, ranged, sure_or_empty) in \
                enumerate(columns):
            column = table[index] if table is not None else \
                list(map(get, value, repeat(field), repeat(absent)))
            kinds = set(map(type, column))
            if kinds <= sure or (ranged and kinds == ints and MIN_INT <= min(column) and
                                 max(column) <= MAX_INT) or \
                    (sure_or_empty is not None and kinds <= sure_or_empty and not any(column)):
                continue
            for item in column:
                kind = type(item)
                if kind not in sure and not (ranged and kind is int and
                                             MIN_INT <= item <= MAX_INT) and not item_fits(item):
                    return False
        return True
    return fits


def _map(digits, spec):
    maps_fit = _pairs(digits, spec)

    def fits(value):
        return isinstance(value, dict) and len(value) <= MAX_ITEMS and maps_fit((value,))
    return fits


def _key_fits(key, digits):
    return isinstance(key, str) and (not digits or (
        key.isdigit() and key.isascii() and len(key) <= 9))


_STR = frozenset([str])
_DICT = frozenset([dict])
_INT = frozenset([int])


def _pairs(digits, spec):
    """A check of the (key, value) pairs of some mappings of one MAP spec, all at once; a MAP
    of MAPs (``npu_map``, ``numa_distance``) checks the pairs of all its inner mappings in one
    pass."""
    inner = _inner(spec)
    if inner[0] == MAP:
        inner_fit = _pairs(inner[1] == DIGITS, inner[2])
        nullable = spec[0] == OPT

        def nested_fit(mappings):
            if len(mappings) == 1:
                # one mapping of plain mappings (the usual table): its keys and the types and
                # sizes of its values tested at once
                outer = mappings[0]
                inner_maps = list(outer.values())
                if (_ID_TEXTS.issuperset(outer) if digits else set(map(type, outer)) <= _STR) \
                        and set(map(type, inner_maps)) <= _DICT and \
                        (not inner_maps or max(map(len, inner_maps)) <= MAX_ITEMS):
                    return inner_fit(inner_maps)
            maps = []
            for key, item in chain.from_iterable(map(dict.items, mappings)):
                if (key.__class__ is not str or (digits and key not in _ID_TEXTS)) and \
                        not _key_fits(key, digits):
                    return False
                if item.__class__ is dict and len(item) <= MAX_ITEMS:
                    maps.append(item)
                elif not (item is None and nullable) and not (
                        isinstance(item, dict) and len(item) <= MAX_ITEMS and
                        inner_fit((item,))):
                    return False
            return inner_fit(maps)
        return nested_fit
    item_fits, sure = _compiled(spec)
    texts = inner[0] == INT_TEXT
    ranged = inner[0] in (INT, NODE)  # (the usual ints tested inline: numa_distance)

    def columns_fit(mappings):
        # the keys and the values as two columns (a 64-entry distance table): the key texts
        # looked up at once, the value types one set, the ints one min and max. False: "not
        # sure", the pairs are then tested one at a time
        if len(mappings) == 1:
            keys, values = mappings[0], list(mappings[0].values())
        else:
            keys = list(chain.from_iterable(mappings))
            values = list(chain.from_iterable(map(dict.values, mappings)))
        if not (_ID_TEXTS.issuperset(keys) if digits else set(map(type, keys)) <= _STR):
            return False
        kinds = set(map(type, values))
        if kinds <= sure:
            return True
        if ranged and kinds - sure == _INT:
            ints = values if kinds == _INT else [item for item in values if item.__class__ is int]
            return MIN_INT <= min(ints) and max(ints) <= MAX_INT
        return texts and kinds - sure == _STR and \
            _ID_TEXTS.issuperset([item for item in values if item.__class__ is str])

    def maps_fit(mappings):
        if columns_fit(mappings):
            return True
        for key, item in chain.from_iterable(map(dict.items, mappings)):
            if (key.__class__ is not str or (digits and key not in _ID_TEXTS)) and \
                    not _key_fits(key, digits):
                return False
            kind = type(item)
            if kind not in sure and not (ranged and kind is int and MIN_INT <= item <= MAX_INT) \
                    and not (texts and kind is str and item in _ID_TEXTS) and not item_fits(item):
                return False
        return True
    return maps_fit


def _listed(fields):
    # (field, sure, fits, ranged: an INT or NODE, whose usual ints are tested inline)
    return tuple((field,) + _compiled(sub)[::-1] + (_inner(sub)[0] in (INT, NODE),)
                 for field, sub in fields.items())


def _record(fields):
    listed = _listed(fields)
    required = tuple(field for field, sub in fields.items() if sub[0] != OPT)

    def fits(value):
        if not isinstance(value, dict):
            return False
        for field in required:
            if field not in value:
                return False
        get = value.get
        for field, sure, item_fits, ranged in listed:
            item = get(field)  # (None when absent: listed fields are optional here)
            kind = type(item)
            if kind not in sure and not (ranged and kind is int and
                                         MIN_INT <= item <= MAX_INT) and not item_fits(item):
                return False
        return True
    return fits


def compile_spec(spec):
    """The predicate ``check(value, spec, source, fast)`` takes: True when ``_check`` would
    find no problem in ``value`` (the fields ``spec`` lists; no depth bound)."""
    fits, sure = _compiled(spec)
    if not sure:
        return fits  # (a RECORD: the usual root)
    return lambda value: type(value) in sure or fits(value)


def check(value, spec, source, fast=None):
    """``value`` if it fits ``spec``; InputError(source, "<field>: <problem>") otherwise.
    The whole value (keys the spec does not list included) nests at most 32 levels.
    ``fast``: ``compile_spec(spec)``, which answers the usual "it fits" alone."""
    yaml_subset.check_depth(value, source, lambda msg: InputError(source, msg.split(": ", 1)[1]))
    if fast is not None and fast(value):
        return value
    problems = []
    _check(value, spec, "", problems)
    if problems:
        message = problems[0]
        if message.startswith(": "):
            message = message[2:]
        raise InputError(source, message)
    return value
