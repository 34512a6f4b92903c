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
is read by ``cpus/`` with its own bounds. ``check_planner_input(value)`` checks the part of
the facts ``make_plan`` reads (``PLANNER_INPUT``) with the same messages.

The specs are written in the language of ``model/spec.py`` (tuples such as ``(OPT, (INT,))``
and ``(RECORD, {field: spec})``), which also holds the walks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.model.spec import (
    BOOL,
    CPUS,
    DIGITS,
    INT,
    INT_TEXT,
    LIST,
    MAP,
    NODE,
    OPT,
    RECORD,
    SCALAR,
    STR,
    check,
    fits,
    kind_name,
)


def _opt(spec):
    return (OPT, spec)


_CPULIST = _opt((CPUS,))
_ID = _opt((INT,))
_NODE_ID = _opt((NODE,))
_TEXT = _opt((STR,))

TOPOLOGY = (
    RECORD,
    {
        "schema_version": _ID,
        "hostname": _TEXT,
        "arch": _TEXT,
        "vendor": _TEXT,
        "device_type": _TEXT,
        "numa_off": _opt((BOOL,)),
        "cpu": _opt(
            (
                RECORD,
                {
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
                    "allowed_source": _TEXT,
                },
            )
        ),
        "npus": _opt(
            (
                LIST,
                (
                    RECORD,
                    {
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
                        "processes": _opt((LIST, _opt((RECORD, {"pid": _ID, "name": _TEXT, "memory_mb": _ID})))),
                        "irqs": _opt((RECORD, {"sq": _opt((INT_TEXT,)), "cq": _opt((INT_TEXT,))})),
                        "driver": _TEXT,
                        "firmware": _TEXT,
                    },
                ),
            )
        ),
        "npu_map": _opt((MAP, STR, _opt((MAP, STR, _opt((INT_TEXT,)))))),
        "npu_process_layout": _TEXT,  # npu-smi info's process table: npu_chip | npu_id
        "gpus": _opt(
            (
                LIST,
                (
                    RECORD,
                    {
                        "index": (INT,),
                        "name": _TEXT,
                        "bus_id": _TEXT,
                        "numa_node": _NODE_ID,
                        "memory_nodes": _opt((LIST, (INT,))),
                        "affinity": _CPULIST,
                        "links": _opt((MAP, STR, _TEXT)),
                        "model": _TEXT,
                        "memory_mb": _opt((INT,)),
                        "health": _TEXT,
                        "driver": _TEXT,
                        "vbios": _TEXT,
                    },
                ),
            )
        ),
        "nics": _opt(
            (
                LIST,
                (
                    RECORD,
                    {
                        "name": (STR,),
                        "legend": _TEXT,
                        "netdev": _TEXT,
                        "bus_id": _TEXT,
                        "numa_node": _NODE_ID,
                        "irqs": _opt((LIST, (INT,))),
                    },
                ),
            )
        ),
        "irqbalance": _opt(
            (
                RECORD,
                {
                    "installed": _opt((BOOL,)),
                    "active": _opt((BOOL,)),
                    "config": _TEXT,
                    "banned_irqs": _opt((LIST, (INT,))),
                    "banned_cpus": _CPULIST,
                },
            )
        ),
        "visible_devices": _opt((MAP, STR, _opt((SCALAR,)))),
        "cgroup": _opt(
            (
                RECORD,
                {
                    "version": _opt((SCALAR,)),
                    "cpuset_controller": _opt((BOOL,)),
                },
            )
        ),
        "vllm_ascend": _opt((RECORD, {"version": (STR,), "source": _TEXT, "commit": _TEXT})),
        "vllm": _opt((RECORD, {"version": (STR,), "source": _TEXT, "commit": _TEXT})),
        # model/inventory: the host's driver, firmware and toolkit versions (null: unknown)
        "versions": _opt(
            (
                RECORD,
                dict(
                    (key, _TEXT)
                    for key in ("npu_driver", "npu_firmware", "cann", "cann_source", "nvidia_driver", "amd_driver")
                ),
            )
        ),
    },
)

# What make_plan and the planners under it (plan/, the model/rules helpers) never read. The
# modules check the whole TOPOLOGY at their entry (check_topology); make_plan checks
# PLANNER_INPUT, TOPOLOGY less these, so each field it reads is checked before it is read
# while it does not pay for the rest. A field added to TOPOLOGY is in PLANNER_INPUT unless
# listed here. (Of ``processes`` only the truth of the list is read.)
UNREAD_BY_PLANNERS = (
    "schema_version",
    "irqbalance",
    "cpu.allowed_self",
    "cpu.numa_source",
    "cpu.model",
    "npus.npu_id",
    "npus.chip_id",
    "npus.phy_id",
    "npus.name",
    "npus.bus_id",
    "npus.health",
    "npus.hbm_total_mb",
    "npus.hbm_used_mb",
    "npus.irqs",
    "npus.processes.pid",
    "npus.processes.name",
    "npus.processes.memory_mb",
    "gpus.name",
    "nics.legend",
    "nics.netdev",
    "nics.irqs",
    "cgroup",
    "vllm_ascend.source",
    "vllm_ascend.commit",
    "npus.driver",
    "npus.firmware",
    "gpus.driver",
    "gpus.vbios",
    "versions",
    "vllm",
)


def _without(spec, path):
    """``spec`` less the RECORD field at ``path`` (field names; OPT and LIST are passed)."""
    if spec[0] in (OPT, LIST):
        return (spec[0], _without(spec[1], path))
    if spec[0] != RECORD or path[0] not in spec[1]:
        raise ValueError("no record field %s" % ".".join(path))
    fields = dict(spec[1])
    if len(path) == 1:
        del fields[path[0]]
    else:
        fields[path[0]] = _without(fields[path[0]], path[1:])
    return (RECORD, fields)


PLANNER_INPUT = TOPOLOGY
for _unread in UNREAD_BY_PLANNERS:
    PLANNER_INPUT = _without(PLANNER_INPUT, _unread.split("."))

_ENV = _opt((MAP, STR, _opt((SCALAR,))))
_DEVICES = _opt((LIST, (INT,)))

PLAN = (
    RECORD,
    {
        "hostname": _TEXT,
        "policy": _TEXT,
        "mode": _TEXT,
        "device_type": _TEXT,
        "skipped": _opt((BOOL,)),
        "reason": _TEXT,
        "numa_nodes": _opt((MAP, DIGITS, _CPULIST)),
        "npus": _opt(
            (
                MAP,
                DIGITS,
                (
                    RECORD,
                    {
                        "pool": _CPULIST,
                        "pool_order": _CPULIST,
                        "main": _CPULIST,
                        "irq": _CPULIST,
                        "acl": _CPULIST,
                        "release": _CPULIST,
                        "numa_nodes": _opt((LIST, (INT,))),
                    },
                ),
            )
        ),
        "gpus": _opt(
            (
                MAP,
                DIGITS,
                (
                    RECORD,
                    {
                        "pool": _CPULIST,
                        "numa_node": _NODE_ID,
                        "nic": _TEXT,
                        "link": _TEXT,
                    },
                ),
            )
        ),
        "instances": _opt(
            (
                MAP,
                STR,
                (
                    RECORD,
                    {
                        "npus": _DEVICES,
                        "gpus": _DEVICES,
                        "main": _CPULIST,
                        "pool": _CPULIST,
                        "numa_nodes": _opt((LIST, (INT,))),
                        "env": _ENV,
                    },
                ),
            )
        ),
        "env": _ENV,
        "uvb": _CPULIST,
        "vendor": _TEXT,
        # model/worker_start.of_facts: how the engine starts the workers (the binder reads it)
        "worker_start": _opt(
            (RECORD, {"engine": _TEXT, "version": _TEXT, "order": _TEXT, "reason": _TEXT, "source": _TEXT})
        ),
    },
)


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
        return (
            "must be 1 to %d of [A-Za-z0-9_.-], not starting with '.' or '-' (no '@': "
            "systemd reads vllm-<name>@.service as a template)" % MAX_NAME
        )
    return None


def check_topology(value, source="topology"):
    """The topology facts (``ansible_facts.npu_topology``) in the shape the layers read."""
    if not isinstance(value, dict):
        raise InputError(source, "expected the npu_topology facts (a mapping), got %s" % kind_name(value))
    return check(value, TOPOLOGY, source)


def check_planner_input(value, source="topology"):
    """The fields of the topology facts make_plan and its planners read (``PLANNER_INPUT``;
    no depth bound: each of them has a known leaf type). Facts that fail get check_topology's
    message, the first problem of the whole facts."""
    if fits(value, PLANNER_INPUT):
        return value
    return check_topology(value, source)


def check_plan(value, source="plan"):
    """A plan (``npu_cpu_plan``'s ``plan``) in the shape the wrapper and IRQ steps read."""
    if not isinstance(value, dict):
        raise InputError(source, "must be a dict (the npu_cpu_plan result), got %s" % kind_name(value))
    return check(value, PLAN, source)
