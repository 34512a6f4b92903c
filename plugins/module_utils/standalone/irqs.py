# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The IRQ part of a reconcile: compare each planned IRQ's ``/proc/irq/<n>/smp_affinity_list``
with the CPUs ``npu_irq_affinity`` pinned it to (its state file), and pin it again when it moved
(irqbalance back, a driver reload). Only numeric IRQs are written, to a regular single-link
procfs file opened without following links.

A pass reads the state file and compares under the file's shared lock (``host/locks``, the
lock ``npu_irq_affinity`` holds from its first ``/proc/irq`` write to the state file's
rewrite): it never sees IRQs moved and their old rows, which would pin them back to the old
CPUs. A run holding the lock past ``LOCK_TIMEOUT`` skips the pass with one error row."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, UnsafePathError
from ansible_collections.npuops.fleet.plugins.module_utils.host import locks

from .rules import BindError, format_cpulist, parse_cpulist, read_json

PROC_IRQ = "/proc/irq"
MAX_STATE_BYTES = 16 << 20
LOCK_TIMEOUT = 20.0  # a run writes its IRQs and rows in well under a second


def load_state(path, devices=None):
    """``[{irq, device, role, cpus}]`` from the IRQ state file, only for ``devices`` (None: all)."""
    doc = read_json(path, MAX_STATE_BYTES, "IRQ state", missing={})
    entries = []
    for item in (doc.get("irqs") if isinstance(doc, dict) else None) or []:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("irq"), int)
            or isinstance(item.get("irq"), bool)
            or item["irq"] < 0
            or not (
                item.get("device") is None
                or (isinstance(item.get("device"), int) and not isinstance(item.get("device"), bool))
            )
        ):
            raise BindError("IRQ state %s: %r is not an IRQ entry" % (path, item))
        if devices is not None and item.get("device") not in devices:
            continue
        entries.append(
            {
                "irq": item["irq"],
                "device": item.get("device"),
                "role": str(item.get("role") or "irq"),
                "cpus": parse_cpulist(item.get("cpus"), "IRQ %d cpus" % item["irq"]),
            }
        )
    return entries


def _affinity_path(irq):
    return os.path.join(PROC_IRQ, str(int(irq)), "smp_affinity_list")


def current(irq):
    try:
        with open(_affinity_path(irq)) as handle:
            return parse_cpulist(handle.read().strip(), "IRQ %d affinity" % irq)
    except (IOError, OSError):
        return None


def write(irq, cpus):
    """Write ``cpus`` to the IRQ's affinity (``host/paths.write_in_place_at``, the writer
    ``apply/irq`` uses too): the IRQ's directory opened without following a link, and then a
    regular single-link file only."""
    # imported here: only an IRQ that moved is written
    from ansible_collections.npuops.fleet.plugins.module_utils.host import paths  # pylint: disable=import-outside-toplevel

    directory = os.path.dirname(_affinity_path(irq))
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        paths.write_in_place_at(
            dir_fd, "smp_affinity_list", (format_cpulist(cpus) + "\n").encode("ascii"), _affinity_path(irq)
        )
    except UnsafePathError as err:
        raise BindError(str(err))
    finally:
        os.close(dir_fd)


def reconcile(entries, check=False):
    """``[{irq, device, role, drift, before, after, error}]``: every entry checked, moved ones
    pinned again unless ``check``."""
    out = []
    for entry in entries:
        now = current(entry["irq"])
        row = {
            "irq": entry["irq"],
            "device": entry["device"],
            "role": entry["role"],
            "drift": now is not None and now != entry["cpus"],
            "error": None,
            "before": None if now is None else format_cpulist(now),
            "after": format_cpulist(entry["cpus"]),
        }
        if now is None:
            row["error"] = "IRQ %d is gone (no %s)" % (entry["irq"], _affinity_path(entry["irq"]))
        elif row["drift"] and not check:
            try:
                write(entry["irq"], entry["cpus"])
            except (OSError, BindError) as err:
                row["error"] = "IRQ %d: %s" % (entry["irq"], err)
        out.append(row)
    return out


def reconcile_state(path, devices=None, check=False):
    """``reconcile(load_state(path, devices), check)`` under the state file's shared lock
    (the lock file beside it, which every ``npu_irq_affinity`` run that writes the state file
    makes; none yet: no lock): the rows, or one row with ``irq`` None and the error when the
    lock stayed held past ``LOCK_TIMEOUT`` or is not a plain file (a symlink planted there)."""
    directory, name = os.path.split(os.path.abspath(path))
    label = os.path.join(directory, locks.lock_name(name))
    fd = None
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        dir_fd = None  # no directory: no state file either (load_state says so)
    try:
        if dir_fd is not None:
            fd = locks.open_lock_at(dir_fd, locks.lock_name(name), label, create=False)
            if fd is not None:
                locks.hold(fd, label, path, LOCK_TIMEOUT, shared=True)
        return reconcile(load_state(path, devices), check)
    except (locks.LockTimeout, UnsafePathError) as err:  # a hung run, a planted lock file
        return [
            {
                "irq": None,
                "device": None,
                "role": None,
                "drift": False,
                "before": None,
                "after": None,
                "error": "IRQ pass skipped: %s" % err,
            }
        ]
    except (NpuopsError, OSError) as err:
        if isinstance(err, BindError):
            raise
        raise BindError("IRQ state %s: %s" % (path, err))
    finally:
        for one in (fd, dir_fd):
            if one is not None:
                os.close(one)
