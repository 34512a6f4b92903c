# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which IRQs a plan pins, and onto which of its CPUs: the pure rule shared by
``apply/irq.py`` (which finds the IRQ numbers on the host when the facts lack them, and writes
them) and the fleet report (which counts them against irqbalance's bans).

- Ascend 950 plans have no IRQ roles (``has_irq_step``); a skipped plan pins nothing.
- An NPU with IRQ CPUs: its send queue on the first IRQ CPU, every completion vector
  (``irqs.cq_all``, else ``irqs.cq``) on the second (as vllm-ascend).
- A GPU plan pins the paired RDMA NIC's completion IRQs (``nics[].irqs``), a NIC shared by
  several GPUs once, for the lowest GPU (``nic_claims``).
- An IRQ two devices resolve to is kept once, for the first (lowest id) device.
- Which planned devices count (``scoped_devices``, ``DEVICE_SCOPES``): ``instances`` those some
  instance of the plan (``plan.instances[].npus``) uses - a plan without instances pins
  nothing; ``all`` every device of the plan.

Pure functions, standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types

from ansible_collections.npuops.fleet.plugins.module_utils.errors import IrqError

ASCEND950_MODE = "ascend950"
# Which planned devices get their IRQs pinned: the devices instances use, or all of them.
DEVICE_SCOPES = ("instances", "all")
# The one line a run that pins nothing for want of instances reports (npu_irq_affinity's
# ``skipped`` and warning).
NO_INSTANCE_NOTE = (
    "No IRQ pinned: no vLLM instance in the plan uses a device (irqbalance keeps "
    "their IRQs). To pin every device's IRQs, set npuops_irq_devices: all."
)


def has_irq_step(plan):
    """False for plans without IRQ roles (Ascend 950: ``device_type.row(...).irq_roles``)."""
    return plan.get("mode") != ASCEND950_MODE and device_types.row(plan.get("device_type")).irq_roles


def scoped_devices(plan, scope, source="devices"):
    """The keys (``"0"``, ``"1"``, ...) of the planned devices whose IRQs ``scope`` pins, in id
    order: ``all`` every device of the plan's device table; ``instances`` those some instance
    of ``plan.instances`` lists (a device the table lacks is not planned, so not pinned)."""
    if scope not in DEVICE_SCOPES:
        raise IrqError("%s: %r is not one of %s" % (source, scope, ", ".join(DEVICE_SCOPES)))
    table = plan.get(vendors.of_plan(plan).device_key) or {}
    if not isinstance(table, dict):
        return []
    keys = [k for k in table if isinstance(k, str) and k.isdigit()]
    if scope == "instances":
        used = set()
        instances = plan.get("instances") or {}
        for entry in instances.values() if isinstance(instances, dict) else []:
            for dev in (entry.get("npus") if isinstance(entry, dict) else None) or []:
                if isinstance(dev, int) and not isinstance(dev, bool):
                    used.add(str(dev))
        keys = [k for k in keys if k in used]
    return sorted(keys, key=int)


def npu_known_irqs(fact_irqs):
    """``(sq, [cq, ...])`` from an NPU's facts ``irqs`` (``cq_all`` first, else ``cq``)."""
    known = fact_irqs if isinstance(fact_irqs, dict) else {}
    cqs = known.get("cq_all") or ([known["cq"]] if known.get("cq") is not None else [])
    return known.get("sq"), list(cqs)


def npu_roles(sq, cqs, cpus):
    """``[(irq, role, cpu)]`` of one NPU: ``sq`` on ``cpus[0]``, completions on ``cpus[1]``
    (``cq``, ``cq1``, ...). ``sq`` None or ``cqs`` empty: those roles are left out."""
    rows = []
    if sq is not None:
        rows.append((sq, "sq", cpus[0]))
    for index, cq in enumerate(cqs):
        rows.append((cq, "cq" if index == 0 else "cq%d" % index, cpus[1 % len(cpus)]))
    return rows


def nic_claims(plan, wanted):
    """``[(nic, gpu key)]``: each paired NIC once, for the lowest GPU of ``wanted``."""
    claimed = {}
    for key in sorted(wanted, key=int):
        nic = plan["gpus"][key].get("nic")
        if nic and nic not in claimed:
            claimed[nic] = key
    return sorted(claimed.items(), key=lambda kv: int(kv[1]))


def device_label(plan, key, nic=None):
    """``NPU3`` / ``GPU3/mlx5_0``: the label a pinned IRQ is reported under."""
    word = vendors.of_plan(plan).device_word
    return "%s%s/%s" % (word, key, nic) if nic else "%s%s" % (word, key)


def pinned_from_facts(plan, facts, scope="all"):
    """``(pinned, unknown)`` from the facts alone: ``pinned`` ``[(irq, label, role)]`` in device
    order, each IRQ once; ``unknown`` the labels of planned devices whose IRQs the facts lack.
    Only devices with IRQ CPUs count (an NPU without ``irq`` CPUs is left alone), and only
    those of ``scope`` (``scoped_devices``)."""
    pinned, unknown, seen = [], [], set()
    if plan.get("skipped") or not has_irq_step(plan):
        return pinned, unknown

    def add(irq, label, role):
        if isinstance(irq, int) and not isinstance(irq, bool) and irq not in seen:
            seen.add(irq)
            pinned.append((irq, label, role))

    row = vendors.of_plan(plan)
    table = plan.get(row.device_key) or {}
    if not isinstance(table, dict):
        return pinned, unknown
    wanted = set(scoped_devices(plan, scope, "scope"))
    table = dict((k, v) for k, v in table.items() if k in wanted and isinstance(v, dict))
    facts = facts if isinstance(facts, dict) else {}
    if row.irq_source == "device":
        npu_facts = dict(
            (str(n.get("logic_id")), n)
            for n in facts.get("npus") or []
            if isinstance(n, dict) and n.get("logic_id") is not None
        )
        for key in sorted(table, key=int):
            if not str(table[key].get("irq") or "").strip():
                continue
            label = device_label(plan, key)
            sq, cqs = npu_known_irqs((npu_facts.get(key) or {}).get("irqs"))
            if sq is None or not cqs:
                unknown.append(label)
            for irq, role, _cpu in npu_roles(sq, cqs, [0]):
                add(irq, label, role)
        return pinned, unknown
    nic_facts = dict((n.get("name"), n) for n in facts.get("nics") or [] if isinstance(n, dict))
    for nic, key in nic_claims({"gpus": table}, list(table)):
        label = device_label(plan, key, nic)
        irqs = (nic_facts.get(nic) or {}).get("irqs")
        if not isinstance(irqs, list):
            unknown.append(label)
            continue
        for index, irq in enumerate(irqs):
            add(irq, label, "comp%d" % index)
    return pinned, unknown
