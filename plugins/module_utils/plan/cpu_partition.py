# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host CPU partition a plan implies: which CPUs are isolated for the workers, which are
left to everything else (housekeeping). Pure: the plan and the facts' ``cpu`` section in, a
dict of cpulists out; ``render/cpu_partition`` writes it, ``apply/cpu_partition`` applies it.

The rules, each once:

1. ``workers`` is the plan's ``cpu_budget.workers`` (every device pool; the 950 UVB set).
   Only plans with a ``cpu_budget`` (``policy=strict`` and GPU plans) can be partitioned:
   a vllm_ascend plan does not account for the host's other CPUs.
2. ``isolated`` = ``workers`` minus the IRQ CPUs of each NPU (``npus.*.irq``): the workers'
   main, ACL and release CPUs (GPU plans and the 950 have no IRQ role: the whole pool).
   The IRQ CPUs take the devices' interrupts (``npu_irq_affinity``): neither isolated nor
   housekeeping - nothing else is scheduled there either.
3. ``housekeeping`` = ``frontend`` + ``spare`` + ``reserved`` of the budget, minus the CPUs
   the kernel already isolates (``cpu.isolated``, ``cpu.nohz_full``): what the plan leaves to
   the instances' frontends and to the host. ``system.slice``, ``user.slice``, ``init.scope``,
   the unbound workqueues and new IRQs are held there.
4. A host whose housekeeping CPUs are fewer than ``min_housekeeping`` is refused, with the
   numbers (sshd, journald and the frontends would fight over them).

Standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.model.cpu_partition_facts import (  # noqa: F401 pylint: disable=unused-import
    HELD_UNITS,
    VLLM_SLICE,
)

DEFAULT_MIN_HOUSEKEEPING = 2


def _ids(text, source):
    if text is None:
        return set()
    if not isinstance(text, str):
        raise PlanError("%s must be a cpulist string (got %s)" % (source, type(text).__name__))
    return set(cpulist.parse(text, source))


def partition(plan, cpu_facts=None, min_housekeeping=DEFAULT_MIN_HOUSEKEEPING):
    """``{"isolated", "irq", "housekeeping", "workers", "allowed"}`` (cpulists) and
    ``counts`` for one plan; PlanError when the plan cannot be partitioned."""
    if not isinstance(plan, dict):
        raise PlanError("npuops_cpu_partition: the plan must be a dict (npu_cpu_plan's plan)")
    if plan.get("skipped"):
        raise PlanError(
            "npuops_cpu_partition: the plan is skipped (%s): nothing to partition"
            % (plan.get("reason") or "no reason given")
        )
    budget = plan.get("cpu_budget")
    if not isinstance(budget, dict):
        raise PlanError(
            "npuops_cpu_partition needs a plan with a cpu_budget (policy strict or a "
            "GPU plan); this plan (policy %s) does not account for the host's "
            "other CPUs" % plan.get("policy")
        )
    part = dict(
        (key, _ids(budget.get(key), "plan cpu_budget.%s" % key)) for key in ("workers", "frontend", "reserved", "spare")
    )
    irq = set()
    for npu, entry in sorted((plan.get("npus") or {}).items()):
        if isinstance(entry, dict):
            irq |= _ids(entry.get("irq"), "plan npus.%s.irq" % npu)
    irq &= part["workers"]
    isolated = part["workers"] - irq
    cpu = cpu_facts or {}
    kernel = _ids(cpu.get("isolated"), "topology cpu.isolated") | _ids(cpu.get("nohz_full"), "topology cpu.nohz_full")
    housekeeping = (part["frontend"] | part["spare"] | part["reserved"]) - kernel - part["workers"]
    allowed = set().union(*part.values())
    if not isolated:
        raise PlanError(
            "npuops_cpu_partition: the plan isolates no CPU (cpu_budget.workers %r)" % budget.get("workers")
        )
    if len(housekeeping) < max(1, int(min_housekeeping)):
        raise PlanError(
            "npuops_cpu_partition: the plan leaves %d housekeeping CPU(s) (%s) for the host and "
            "the frontends, fewer than npuops_cpu_partition_min_housekeeping=%d; %d CPUs are "
            "workers' (%d isolated, %d for IRQs) of %d allowed. Give the instances a frontend "
            "(npuops_frontend_cpus), reserve CPUs (npuops_reserved_cpus) or plan fewer devices"
            % (
                len(housekeeping),
                cpulist.format(housekeeping) or "none",
                int(min_housekeeping),
                len(part["workers"]),
                len(isolated),
                len(irq),
                len(allowed),
            )
        )
    return {
        "isolated": cpulist.format(isolated),
        "irq": cpulist.format(irq),
        "housekeeping": cpulist.format(housekeeping),
        "workers": cpulist.format(part["workers"]),
        "allowed": cpulist.format(allowed),
        "counts": {
            "isolated": len(isolated),
            "irq": len(irq),
            "housekeeping": len(housekeeping),
            "allowed": len(allowed),
        },
    }


def cgroup_version(topology):
    """2, "hybrid", 1 or None from the facts' ``cgroup`` section."""
    return ((topology or {}).get("cgroup") or {}).get("version")


def kernel_cmdline(part):
    """The kernel arguments of the explicit boot-time isolation (``kernel_cmdline: true``):
    ``isolcpus=managed_irq,domain,<isolated> nohz_full=<isolated> rcu_nocbs=<isolated>``
    (kernel-parameters.txt). Taking effect needs a reboot, which nothing here does."""
    cpus = part["isolated"]
    return ["isolcpus=managed_irq,domain,%s" % cpus, "nohz_full=%s" % cpus, "rcu_nocbs=%s" % cpus]
