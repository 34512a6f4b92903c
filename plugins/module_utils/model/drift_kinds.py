# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kinds of binding drift and their fix texts, in one place: ``model/binding.drift`` emits
the kinds, the fleet report (``plugin_utils/report/drift.py``) titles and orders them, and the
report's irqbalance problem shares ``FIX_IRQBALANCE``.

A new drift kind: a row in ``KINDS`` (the order the report lists them in, and its title), the
code that detects it in ``model/binding.drift`` and, if it needs one, a fix text here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

UNIT_DOWN = "unit_down"
BINDER_FAILED = "binder_failed"
WORKER_MISSING = "worker_missing"
THREADS_OFF_PLAN = "threads_off_plan"
IRQ_MOVED = "irq_moved"
IRQBALANCE_UNDOING = "irqbalance_undoing"
MEMORY_REMOTE = "memory_remote"
CPU_INTRUDER = "cpu_intruder"

# kind -> the title of its row in the fleet report, in the order the report lists them
KINDS = OrderedDict(
    [
        (UNIT_DOWN, "instance unit not running"),
        (BINDER_FAILED, "binder could not read or apply the plan"),
        (WORKER_MISSING, "device without a worker process"),
        (THREADS_OFF_PLAN, "threads off their planned CPUs"),
        (IRQ_MOVED, "planned IRQ moved"),
        (IRQBALANCE_UNDOING, "irqbalance can undo the IRQ pins"),
        (MEMORY_REMOTE, "worker memory off its NUMA node"),
        (CPU_INTRUDER, "process outside the vLLM trees allowed on worker CPUs"),
    ]
)

# the fix texts name an instance's units: format them with instance_files.unit_names(name)
FIX_THREADS = "run the instance's reconciler (systemctl start %(reconcile)s) or re-run site.yml"
FIX_IRQ = (
    "re-pin with npuops.fleet.npu_irq_affinity (the reconciler does it too) and keep "
    "irqbalance from moving it (npuops_irqbalance: ban)"
)
FIX_MEMORY = (
    "memory moves with a worker's first binding only: restart the instance in a "
    "maintenance window, or run its binder once with --migrate-shared if shared pages moved"
)
FIX_UNIT = "systemctl start %(service)s (journalctl -u %(service)s says why it stopped)"
FIX_MISSING = (
    "no process under the instance's EngineCore serves this device: if vLLM is still "
    "starting (workers appear before the model loads), the next reconcile binds "
    "them; else journalctl -u %(service)s says whether a worker died, and the "
    "device tools (npu-smi info / nvidia-smi) whether the device is up"
)
# the one irqbalance fix: for a drift row and for the audit's "irqbalance will undo" problem
FIX_IRQBALANCE = (
    "set npuops_irqbalance: ban (the planned IRQs are banned in irqbalance's "
    "config) or stop, and re-run the cpu_binding role"
)
# a process outside the vLLM trees that may run on a partitioned host's isolated CPUs
FIX_INTRUDER = (
    "it escaped the partition (a unit with its own CPUAffinity=/AllowedCPUs=, a "
    "taskset, a process started before the partition): restart %(unit)s, or "
    "re-run the cpu_binding role's partition (npuops_cpu_partition: true)"
)
