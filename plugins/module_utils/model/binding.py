# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is really bound on a host, instance by instance, and how far it is from the plan.

``gather(io, ...)`` reads every instance ``vllm_launch_wrapper`` installed under ``dest`` (its
plan JSON) and asks the instance's own binder, in check mode, what it would change now
(``<name>-bind --once --check --json``): the binder is the one implementation of "which process
and thread should be where", so the facts and the reconciler cannot disagree. Through the host
I/O object the binder's answer and the unit's state are commands: a recorded snapshot replays
them like any other command.

``drift(state)`` turns that state into rows - one per kind of drift and device - each with
its evidence and its fix.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.model import cpu_intruders, instance_files, schema
from ansible_collections.npuops.fleet.plugins.module_utils.model.instance_files import unit_names
from ansible_collections.npuops.fleet.plugins.module_utils.model.spec import (
    ANY,
    BOOL,
    INT,
    LIST,
    NUM,
    OPT,
    RECORD,
    SCALAR,
    STR,
    check,
)
from ansible_collections.npuops.fleet.plugins.module_utils.model.drift_kinds import (
    FIX_INTRUDER,
    FIX_IRQ,
    FIX_IRQBALANCE,
    FIX_MEMORY,
    FIX_MISSING,
    FIX_THREADS,
    FIX_UNIT,
)

SCHEMA_VERSION = 1
# a worker with more than this share of its resident memory off its node is drifted
REMOTE_MEMORY_LIMIT = 0.10
_NAME_RE = schema.INSTANCE_NAME  # the one instance-name rule (vllm_launch_wrapper's)
MAX_PLAN_BYTES = 4 << 20

FIX_SHAPE = (
    "reinstall the instance's binder with vllm_launch_wrapper (its report is not what "
    "this collection reads) and check the host is not compromised"
)


# The parts of a binder report (``<name>-bind --once --check --json``) and of the gathered
# state that ``drift`` reads, in model/spec's language: the binder runs on the host and its
# answer is checked once here, before any of it is read.
_VALUE = (OPT, (SCALAR,))
_PROCS = (
    OPT,
    (
        LIST,
        (
            RECORD,
            {
                "pid": _VALUE,
                "title": _VALUE,
                "role": _VALUE,
                "device": _VALUE,
                "remote_memory_ratio": (OPT, (NUM,)),
                "changed": (OPT, (LIST, (RECORD, {"tid": _VALUE, "role": _VALUE, "before": _VALUE, "after": _VALUE}))),
                "threads": (INT,),
            },
        ),
    ),
)
BINDER_REPORT = (
    RECORD,
    {
        "unit_running": (OPT, (BOOL,)),
        "failed": (OPT, (STR,)),
        "workers": _PROCS,
        "frontend": _PROCS,
        "missing": (OPT, (LIST, (SCALAR,))),
        "irqs": (
            OPT,
            (
                LIST,
                (
                    RECORD,
                    {
                        "irq": (INT,),
                        "device": _VALUE,
                        "role": _VALUE,
                        "before": _VALUE,
                        "after": _VALUE,
                        "drift": (OPT, (ANY,)),
                    },
                ),
            ),
        ),
    },
)
INSTANCE = (RECORD, {"unit": (STR,), "unit_state": _VALUE})
IRQBALANCE = (OPT, (RECORD, {"active": (OPT, (ANY,)), "banned_irqs": (OPT, (LIST, (INT,)))}))


def shape_problem(value, spec, source):
    """Why ``value`` (a binder report, an instance's entry, the irqbalance facts) is not of the shape
    ``drift`` reads: ``<source>: <field>: <problem>``; None when it is."""
    try:
        check(value, spec, source)
    except InputError as err:
        return str(err)
    return None


def _error(errors, source, msg):
    errors.append({"source": source, "msg": msg})


def _instances(io, dest, errors):
    """``{name: plan path}`` of the plan JSONs under ``dest``."""
    names = io.listdir(dest)
    if names is None:
        _error(errors, dest, "no such directory: no instance is installed here")
        return {}
    found = {}
    for entry in sorted(names):
        name = instance_files.name_of_plan_file(entry)
        if name is not None and _NAME_RE.match(name):
            found[name] = instance_files.file_paths(dest, name)["plan"]
    return found


def _plan(io, path, errors):
    text = io.read_text(path)
    if text is None or len(text) > MAX_PLAN_BYTES:
        _error(errors, path, "cannot read the plan JSON" if text is None else "plan JSON too large")
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as err:  # RecursionError: a hostile report nested too deep
        _error(errors, path, "not valid JSON: %s" % err)
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("npuops_instance"), dict):
        _error(errors, path, "no npuops_instance block (not written by vllm_launch_wrapper)")
        return None
    return doc


def _unit_state(io, unit, timeout):
    result = io.run(["systemctl", "is-active", unit], timeout=timeout)
    if result.missing:
        return None
    return (result.stdout or "").strip() or "unknown"


def _binder_report(io, binder, argv, timeout, source, errors):
    result = io.run([binder] + argv, timeout=timeout)
    if result.missing:
        _error(errors, source, "the binder %s is not installed" % binder)
        return None
    try:
        report = json.loads(result.stdout or "")
    except (ValueError, RecursionError):
        _error(
            errors,
            source,
            "the binder gave no report (rc %s): %s"
            % (result.rc, (result.stderr or result.stdout or "").strip()[-300:]),
        )
        return None
    return report if isinstance(report, dict) else None


def gather(
    io,
    dest=instance_files.DEFAULT_DEST,
    irq_state=instance_files.DEFAULT_IRQ_STATE,
    timeout=60,
    host_root="/",
    root_pids=None,
    proc_irq=None,
    systemd=None,
):
    """The binding state of every instance under ``dest`` (host paths; ``host_root`` prefixes
    the paths handed to the binder, which reads them itself). ``root_pids`` ({instance: pid})
    names the main process where no systemd unit runs it (tests, the demo's sandbox).
    A sandbox root (``host_root`` not ``/``) is the one place both defaults come from: the
    binder reads its IRQ directories (``proc_irq``: ``<host_root>/proc/irq``), and no unit is
    asked (``systemd``: this machine's systemd is not the sandbox's), so an instance without a
    root pid is listed with ``checked: false``."""
    errors = []
    prefix = "" if host_root in (None, "", "/") else host_root.rstrip("/")
    if systemd is None:
        systemd = not prefix
    if proc_irq is None and prefix:
        proc_irq = prefix + "/proc/irq"
    state = {"schema_version": SCHEMA_VERSION, "dest": dest, "instances": {}, "errors": errors}
    for name, path in sorted(_instances(io, dest, errors).items()):
        doc = _plan(io, path, errors)
        if doc is None:
            continue
        info = doc["npuops_instance"]
        unit = unit_names(name)["service"]
        entry = {
            "unit": unit,
            "unit_state": None,
            "binding": info.get("binding"),
            "vendor": info.get("vendor") or "ascend",
            "devices": info.get("devices") or [],
            "frontend": info.get("frontend"),
            "plan_file": path,
            "report": None,
            "checked": True,
        }
        if (root_pids or {}).get(name) is None:
            if not systemd:
                entry["checked"] = False
                state["instances"][name] = entry
                continue
            entry["unit_state"] = _unit_state(io, unit, timeout)
        binder = instance_files.file_paths(dest, name)["binder"]
        if info.get("binding") == "host" and io.exists(binder):
            argv = [
                "--plan",
                prefix + path,
                "--instance",
                name,
                "--once",
                "--check",
                "--json",
                "--no-migrate",
                "--irq-state",
                prefix + irq_state,
            ]
            if proc_irq:
                argv += ["--proc-irq", proc_irq]
            if (root_pids or {}).get(name) is not None:
                argv += ["--root-pid", str(int(root_pids[name]))]
            else:
                argv += ["--unit", unit]
            entry["report"] = _binder_report(io, prefix + binder, argv, timeout, binder, errors)
        state["instances"][name] = entry
    isolated = cpu_intruders.isolated_cpus(io)
    if isolated:  # a partitioned host: who else may run on the workers' CPUs
        state["cpu_intruders"] = cpu_intruders.scan(io, isolated)
    return state


def _row(instance, device, kind, evidence, fix):
    return {"instance": instance, "device": device, "kind": kind, "evidence": evidence, "fix": fix}


def device_label(entry, device):
    """The device as the binder and the metrics name it: ``GPU<n>`` on a GPU instance (the
    plan's vendor ``nvidia``), else ``NPU<n>``."""
    return "%s%s" % ("GPU" if (entry or {}).get("vendor") == "nvidia" else "NPU", device)


def _thread_rows(name, report, entry=None):
    rows = []
    for proc in (report.get("workers") or []) + (report.get("frontend") or []):
        changed = proc.get("changed") or []
        if not changed:
            continue
        device = "frontend" if proc.get("role") != "worker" else device_label(entry, proc.get("device"))
        moved = ", ".join(
            "tid %s (%s) on %s, planned %s" % (c.get("tid"), c.get("role"), c.get("before"), c.get("after"))
            for c in changed[:4]
        )
        more = "" if len(changed) <= 4 else " and %d more" % (len(changed) - 4)
        rows.append(
            _row(
                name,
                device,
                "threads_off_plan",
                "pid %s (%s): %d of %d threads off their planned CPUs: %s%s"
                % (proc.get("pid"), proc.get("title"), len(changed), proc.get("threads"), moved, more),
                FIX_THREADS % unit_names(name),
            )
        )
    return rows


def drift(state, irqbalance=None, limit=REMOTE_MEMORY_LIMIT):
    """Rows ``{instance, device, kind, evidence, fix}`` of what differs from the plan now.
    ``irqbalance``: the facts' irqbalance block (active, banned IRQs) when known."""
    rows = []
    instances = (state or {}).get("instances") if isinstance(state, dict) else state
    problem = shape_problem(irqbalance, IRQBALANCE, "topology irqbalance")
    if problem is None and not isinstance(instances, (dict, type(None))):
        problem = "binding state: instances: expected a mapping, got %s" % type(instances).__name__
    if problem:
        return [_row("-", None, "binder_failed", problem, FIX_SHAPE)]
    for name, entry in sorted((instances or {}).items(), key=lambda item: str(item[0])):
        name = str(name)
        problem = shape_problem(
            dict(entry, report=None) if isinstance(entry, dict) else entry,
            INSTANCE,
            "binding state: instances[%s]" % name,
        ) or shape_problem(entry.get("report") or {}, BINDER_REPORT, "the binder's report for %s" % name)
        if problem:
            rows.append(_row(name, None, "binder_failed", problem, FIX_SHAPE))
            continue
        if entry.get("unit_state") not in (None, "active"):
            rows.append(
                _row(
                    name,
                    None,
                    "unit_down",
                    "%s is %s" % (entry["unit"], entry["unit_state"]),
                    FIX_UNIT % unit_names(name),
                )
            )
        report = entry.get("report") or {}
        if report.get("unit_running") is False and entry.get("unit_state") is None:
            rows.append(
                _row(name, None, "unit_down", "%s has no main process" % entry["unit"], FIX_UNIT % unit_names(name))
            )
        rows.extend(_thread_rows(name, report, entry))
        for device in report.get("missing") or []:
            if report.get("unit_running") is not False:
                rows.append(
                    _row(
                        name,
                        device_label(entry, device),
                        "worker_missing",
                        "device %s shows no worker process under the instance's EngineCore" % device,
                        FIX_MISSING % unit_names(name),
                    )
                )
        for worker in report.get("workers") or []:
            ratio = worker.get("remote_memory_ratio")
            if isinstance(ratio, (int, float)) and ratio > limit:
                rows.append(
                    _row(
                        name,
                        device_label(entry, worker.get("device")),
                        "memory_remote",
                        "%.0f%% of pid %s's resident memory is off its NUMA node" % (100.0 * ratio, worker.get("pid")),
                        FIX_MEMORY,
                    )
                )
        moved = [r for r in report.get("irqs") or [] if r.get("drift")]
        for irq in moved:
            rows.append(
                _row(
                    name,
                    device_label(entry, irq.get("device")),
                    "irq_moved",
                    "IRQ %s (%s) on CPUs %s, planned %s"
                    % (irq.get("irq"), irq.get("role"), irq.get("before"), irq.get("after")),
                    FIX_IRQ,
                )
            )
        banned = set((irqbalance or {}).get("banned_irqs") or [])
        pinned = [r.get("irq") for r in report.get("irqs") or []]
        unbanned = sorted(i for i in pinned if i not in banned)
        if (irqbalance or {}).get("active") and unbanned:
            rows.append(
                _row(
                    name,
                    None,
                    "irqbalance_undoing",
                    "irqbalance runs and does not ban pinned IRQs %s" % ", ".join(str(i) for i in unbanned[:8]),
                    FIX_IRQBALANCE,
                )
            )
        if report.get("failed"):
            rows.append(_row(name, None, "binder_failed", report["failed"], FIX_THREADS % unit_names(name)))
    rows.extend(intruder_rows(state))
    return rows


def intruder_rows(state):
    """``cpu_intruder`` rows: one per process outside the vLLM trees allowed on worker CPUs."""
    rows = []
    found = state.get("cpu_intruders") if isinstance(state, dict) else None
    for proc in found if isinstance(found, list) else []:
        if not isinstance(proc, dict):
            continue
        unit = proc.get("unit") or "its unit"
        rows.append(
            _row(
                "-",
                None,
                "cpu_intruder",
                "pid %s (%s, %s) may run on worker CPUs %s (last ran on CPU %s)"
                % (
                    proc.get("pid"),
                    proc.get("comm"),
                    proc.get("unit") or "no unit",
                    proc.get("cpus"),
                    proc.get("last_cpu"),
                ),
                FIX_INTRUDER % {"unit": unit},
            )
        )
    return rows
