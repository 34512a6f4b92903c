#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: npu_irq_affinity
short_description: Put NPU (and paired NIC) IRQs on the planned IRQ CPUs and keep irqbalance off them
version_added: 0.1.0
description:
  - For each planned NPU, finds its C(sq_send_trigger_irq) and C(cq_update_irq) by name (from
    the facts C(npus[].irqs), else its PCI device's C(msi_irqs) and C(/proc/interrupts)) and
    writes C(/proc/irq/N/smp_affinity_list) = the plan's first IRQ CPU (SQ) and second (CQ),
    only where the current value differs.
  - On GPU hosts (plan mode C(gpu_numa)) the paired NIC's C(mlx5_comp*) IRQs are spread
    round-robin over the GPU pool; a NIC shared by several GPUs follows the lowest GPU.
  - Ascend 950 has no IRQ roles; the module skips it and says so.
  - Two planned NPUs that resolve to the same IRQ (two chips behind one PCI function, as
    npu-smi reports an Atlas 300I Duo card) do not fail the task; the lower logic id keeps the
    IRQ and a warning names the IRQ and both NPUs.
  - Every affinity file is read and every needed write checked before the first write; when
    C(/proc/irq) is not writable (a container) the module fails with a message and writes
    nothing. A failed write restores the IRQs already written.
options:
  plan:
    description: The plan from M(npuops.fleet.npu_cpu_plan).
    type: dict
    required: true
  topology:
    description: The facts C(ansible_facts['npu_topology']) (bus ids, IRQs, NICs, irqbalance).
    type: dict
  npus:
    description: Only these planned devices (NPU logic ids or GPU indexes). Default all.
    type: list
    elements: int
  irqbalance:
    description:
      - V(ban) keeps irqbalance running and adds C(--banirq=N) for these IRQs to
        C(IRQBALANCE_ARGS) in C(/etc/sysconfig/irqbalance) or C(/etc/default/irqbalance),
        keeping every other line and option; RV(irqbalance_restart_needed) tells the role to
        restart it.
      - V(stop) returns RV(irqbalance_stop_needed) so the role stops and disables the service.
      - V(ignore) leaves irqbalance alone (it may move the IRQs again).
    type: str
    choices: [ban, stop, ignore]
    default: ban
extends_documentation_fragment:
  - npuops.fleet.attributes
  - npuops.fleet.host_root
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
author:
  - npuops.fleet contributors (@npuops)
'''

EXAMPLES = r'''
- name: NPU IRQs onto the planned CPUs, banned from irqbalance
  npuops.fleet.npu_irq_affinity:
    plan: "{{ npu_plan.plan }}"
    topology: "{{ ansible_facts['npu_topology'] }}"
  register: npu_irq
  notify: npuops restart irqbalance
'''

RETURN = r'''
irqs:
  description: Every IRQ handled, with its affinity before and after.
  returned: always
  type: list
  elements: dict
  sample: [{irq: 123, device: NPU0, role: sq, before: "0-191", after: "144", changed: true}]
changed_irqs:
  description: C(IRQ old->new) for each IRQ changed (or to change, in check mode).
  returned: always
  type: list
  elements: str
  sample: ["123 (NPU0 sq): 0-191 -> 144"]
skipped:
  description: Why the plan has no IRQ step (Ascend 950, skipped plan), or null.
  returned: always
  type: str
irqbalance_config:
  description: The irqbalance file written (O(irqbalance=ban)), or null.
  returned: always
  type: str
  sample: /etc/default/irqbalance
irqbalance_restart_needed:
  description: The irqbalance config changed; restart irqbalance.
  returned: always
  type: bool
irqbalance_stop_needed:
  description: O(irqbalance=stop) and irqbalance is (or may be) running.
  returned: always
  type: bool
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops, irq
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError


def irqbalance_step(p, irqs, check_mode):
    """(config path or None, file result or None) for irqbalance: ban."""
    state = (p["topology"] or {}).get("irqbalance") or {}
    if p["irqbalance"] != "ban" or not irqs or state.get("installed") is False:
        return None, None
    path = irq.irqbalance_config_path(p["host_root"])
    current = fileops.read_text(fileops.host_path(p["host_root"], path))
    text = irq.render_irqbalance_config(current, irqs, keep_previous=p["npus"] is not None,
                                        source=path)
    return path, fileops.ensure_file(p["host_root"], path, text, check_mode=check_mode,
                                     create_parents=True)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            plan=dict(type="dict", required=True),
            topology=dict(type="dict"),
            npus=dict(type="list", elements="int"),
            irqbalance=dict(type="str", choices=["ban", "stop", "ignore"], default="ban"),
            host_root=dict(type="path", default="/"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    state = (p["topology"] or {}).get("irqbalance") or {}
    try:
        targets, skipped, warnings = irq.plan_targets(p["plan"], p["topology"], p["host_root"],
                                                      p["npus"])
        # Validate the irqbalance file before touching any IRQ (nothing half-done).
        numbers = sorted(set(t["irq"] for t in targets))
        if p["irqbalance"] == "ban" and numbers:
            irqbalance_step(p, numbers, check_mode=True)
        results = irq.apply_targets(targets, p["host_root"], module.check_mode)
        config_path, config = irqbalance_step(p, numbers, module.check_mode)
    except (NpuopsError, ValueError, IOError, OSError) as err:
        module.fail_json(msg=str(err))
    if module.check_mode:
        blocked = irq.blocked_irqs([r for r in results if r["changed"]], p["host_root"])
        if blocked:
            warnings.append("/proc/irq is not writable for IRQs %s: a real run would fail and "
                            "write nothing" % ", ".join(str(b) for b in blocked))
    if p["irqbalance"] == "ignore" and state.get("active"):
        warnings.append("irqbalance is running and may move these IRQs again (irqbalance: ignore)")
    for warning in warnings:
        module.warn(warning)
    changed_irqs = ["%d (%s %s): %s -> %s" % (r["irq"], r["device"], r["role"], r["before"],
                                              r["after"]) for r in results if r["changed"]]
    config_changed = bool(config and config["changed"])
    result = dict(
        changed=bool(changed_irqs) or config_changed,
        irqs=results,
        changed_irqs=changed_irqs,
        skipped=skipped,
        irqbalance_config=config_path,
        irqbalance_restart_needed=config_changed and state.get("active") is not False,
        irqbalance_stop_needed=p["irqbalance"] == "stop" and bool(targets)
        and state.get("active") is not False,
    )
    if module._diff:
        before = "".join("IRQ %d (%s %s): %s\n" % (r["irq"], r["device"], r["role"], r["before"])
                         for r in results)
        after = "".join("IRQ %d (%s %s): %s\n" % (r["irq"], r["device"], r["role"], r["after"])
                        for r in results)
        result["diff"] = [{"before_header": "/proc/irq/*/smp_affinity_list",
                           "after_header": "/proc/irq/*/smp_affinity_list",
                           "before": before, "after": after}]
        if config_changed:
            result["diff"].append(config["diff"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
