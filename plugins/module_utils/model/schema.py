# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shapes of the structured inputs modules take: the topology facts and the plan.

``check_topology(value)`` and ``check_plan(value)`` walk an input (a dict that came through
Ansible, possibly edited or made up by hand) against the fields the layers read, before any of
them is used, and raise ``InputError("topology" | "plan", "<field>: <problem>")`` naming the
first field of a wrong type, e.g. ``topology: npus[0].logic_id: expected an integer, got
'x'``. The shapes are open: keys not listed are not looked at (facts grow; a plan carries
more than a module reads). Cpulists are only checked to be text (or CPU ids); their content
is read by ``cpus/`` with its own bounds.

A spec is a tuple: ``(INT,)``, ``(NODE,)`` (an INT or -1), ``(INT_TEXT,)`` (an integer or its
decimal text), ``(STR,)``, ``(BOOL,)``, ``(NUM,)``, ``(CPUS,)``,
``(SCALAR,)``, ``(ANY,)``, ``(OPT, spec)`` (None allowed), ``(LIST, item)``, ``(MAP, key,
value)`` (keys: ``STR`` or ``DIGITS``, decimal text) and ``(RECORD, {field: spec})``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset

INT, NODE, STR, BOOL, NUM, CPUS, SCALAR, ANY, OPT, LIST, MAP, RECORD, DIGITS, INT_TEXT = (
    "int", "node", "str", "bool", "num", "cpus", "scalar", "any", "opt", "list", "map", "record",
    "digits", "int_text")
# Ids, counts and sizes in facts and plans: 0 to 2**31 - 1 (a NUMA node may also be -1, as
# sysfs says "no node").
MIN_INT, MAX_INT = 0, (1 << 31) - 1
MAX_ITEMS = 1 << 16  # entries of one list or mapping (a host has hundreds at most)


def _opt(spec):
    return (OPT, spec)


_CPULIST = _opt((CPUS,))
_ID = _opt((INT,))
_NODE_ID = _opt((NODE,))
_TEXT = _opt((STR,))

TOPOLOGY = (RECORD, {
    "schema_version": _ID,
    "hostname": _TEXT,
    "arch": _TEXT,
    "vendor": _TEXT,
    "device_type": _TEXT,
    "numa_off": _opt((BOOL,)),
    "cpu": _opt((RECORD, {
        "allowed": _CPULIST,
        "allowed_self": _CPULIST,
        "online": _CPULIST,
        "isolated": _CPULIST,
        "nohz_full": _CPULIST,
        "threads_per_core": _ID,
        "numa_nodes": _opt((MAP, DIGITS, _CPULIST)),
        "numa_distance": _opt((MAP, DIGITS, _opt((MAP, DIGITS, _ID)))),
        "packages": _opt((MAP, DIGITS, _NODE_ID)),
        "smt_siblings": _opt((LIST, _CPULIST)),
        "numa_source": _TEXT,
        "model": _TEXT,
    })),
    "npus": _opt((LIST, (RECORD, {
        "logic_id": (INT,),
        "npu_id": _ID,
        "chip_id": _ID,
        "phy_id": _ID,
        "name": _TEXT,
        "bus_id": _TEXT,
        "numa_node": _NODE_ID,
        "affinity": _CPULIST,
        "health": _TEXT,
        "hbm_total_mb": _ID,
        "hbm_used_mb": _ID,
        "processes": _opt((LIST, _opt((RECORD, {"pid": _ID, "name": _TEXT,
                                                "memory_mb": _ID})))),
        "irqs": _opt((RECORD, {"sq": _opt((INT_TEXT,)), "cq": _opt((INT_TEXT,))})),
    }))),
    "npu_map": _opt((MAP, STR, _opt((MAP, STR, _opt((INT_TEXT,)))))),
    "gpus": _opt((LIST, (RECORD, {
        "index": (INT,),
        "name": _TEXT,
        "bus_id": _TEXT,
        "numa_node": _NODE_ID,
        "affinity": _CPULIST,
        "links": _opt((MAP, STR, _TEXT)),
    }))),
    "nics": _opt((LIST, (RECORD, {
        "name": (STR,),
        "legend": _TEXT,
        "netdev": _TEXT,
        "bus_id": _TEXT,
        "numa_node": _NODE_ID,
        "irqs": _opt((LIST, (INT,))),
    }))),
    "irqbalance": _opt((RECORD, {
        "installed": _opt((BOOL,)),
        "active": _opt((BOOL,)),
        "config": _TEXT,
        "banned_irqs": _opt((LIST, (INT,))),
        "banned_cpus": _CPULIST,
    })),
    "visible_devices": _opt((MAP, STR, _opt((SCALAR,)))),
})

_ENV = _opt((MAP, STR, _opt((SCALAR,))))
_DEVICES = _opt((LIST, (INT,)))

PLAN = (RECORD, {
    "hostname": _TEXT,
    "policy": _TEXT,
    "mode": _TEXT,
    "device_type": _TEXT,
    "skipped": _opt((BOOL,)),
    "reason": _TEXT,
    "numa_nodes": _opt((MAP, DIGITS, _CPULIST)),
    "npus": _opt((MAP, DIGITS, (RECORD, {
        "pool": _CPULIST, "pool_order": _CPULIST, "main": _CPULIST, "irq": _CPULIST,
        "acl": _CPULIST, "release": _CPULIST, "numa_nodes": _opt((LIST, (INT,))),
    }))),
    "gpus": _opt((MAP, DIGITS, (RECORD, {
        "pool": _CPULIST, "numa_node": _NODE_ID, "nic": _TEXT, "link": _TEXT,
    }))),
    "instances": _opt((MAP, STR, (RECORD, {
        "npus": _DEVICES, "gpus": _DEVICES, "main": _CPULIST, "pool": _CPULIST,
        "numa_nodes": _opt((LIST, (INT,))), "env": _ENV,
    }))),
    "env": _ENV,
    "uvb": _CPULIST,
})


# A vLLM instance name: it names files (<name>-launch, <name>.plan.json, <name>-bind) and the
# unit vllm-<name>.service. Letters, digits, '_', '.', '-', not first '.' or '-' (a hidden file,
# an option to the binder); no '@' (systemd would read vllm-a@.service as a template); at most
# MAX_NAME characters (unit names and file names stay far below systemd's and NAME_MAX's 255).
MAX_NAME = 100
INSTANCE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,%d}\Z" % (MAX_NAME - 1))


def instance_name_problem(name):
    """Why ``name`` cannot name a vLLM instance, or None when it can."""
    if not isinstance(name, str):
        return "must be a string"
    if not INSTANCE_NAME.match(name):
        return ("must be 1 to %d of [A-Za-z0-9_.-], not starting with '.' or '-' (no '@': "
                "systemd reads vllm-<name>@.service as a template)" % MAX_NAME)
    return None


def _kind(value):
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
            problems.append("%s: expected a string, got %s" % (_path(where), _kind(value)))
    elif kind == BOOL:
        if not isinstance(value, bool):
            problems.append("%s: expected true or false, got %s" % (_path(where), _short(value)))
    elif kind == NUM:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append("%s: expected a number, got %s" % (_path(where), _short(value)))
    elif kind == SCALAR:
        if not isinstance(value, (str, int, float, bool)):
            problems.append("%s: expected a string or a number, got %s" % (_path(where), _kind(value)))
    elif kind == CPUS:
        # a cpulist (text), one CPU id or a list of CPU ids: cpus/ reads the content
        if not (isinstance(value, str) or _int_ok(value) or
                (isinstance(value, list) and len(value) <= MAX_ITEMS and
                 all(_int_ok(item) or (isinstance(item, str) and item.isdecimal())
                     for item in value))):
            problems.append("%s: expected a cpulist such as \"0-3,8\", got %s"
                            % (_path(where), _short(value)))
    elif kind == LIST:
        if not isinstance(value, list):
            problems.append("%s: expected a list, got %s" % (_path(where), _kind(value)))
        elif len(value) > MAX_ITEMS:
            problems.append("%s: more than %d entries" % (_path(where), MAX_ITEMS))
        else:
            for index, item in enumerate(value):
                _check(item, spec[1], (where, "[%d]", index), problems)
                if problems:
                    return
    elif kind == MAP:
        if not isinstance(value, dict):
            problems.append("%s: expected a mapping, got %s" % (_path(where), _kind(value)))
        elif len(value) > MAX_ITEMS:
            problems.append("%s: more than %d entries" % (_path(where), MAX_ITEMS))
        else:
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
            problems.append("%s: expected a mapping, got %s" % (_path(where), _kind(value)))
            return
        for field, sub in spec[1].items():
            if field in value:
                _check(value[field], sub, (where, ".%s", field), problems)
                if problems:
                    return
            elif sub[0] != OPT:
                problems.append("%s: missing" % _path((where, ".%s", field)))
                return


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


def check_topology(value, source="topology"):
    """The topology facts (``ansible_facts.npu_topology``) in the shape the layers read."""
    if not isinstance(value, dict):
        raise InputError(source, "expected the npu_topology facts (a mapping), got %s"
                         % _kind(value))
    return check(value, TOPOLOGY, source)


def check_plan(value, source="plan"):
    """A plan (``npu_cpu_plan``'s ``plan``) in the shape the wrapper and IRQ steps read."""
    if not isinstance(value, dict):
        raise InputError(source, "must be a dict (the npu_cpu_plan result), got %s"
                         % _kind(value))
    return check(value, PLAN, source)
