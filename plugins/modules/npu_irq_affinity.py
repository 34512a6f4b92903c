#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: npu_irq_affinity
short_description: Put NPU (and paired NIC) IRQs on the planned IRQ CPUs and keep irqbalance off them
version_added: 0.1.0
description:
  - For each planned NPU, finds its C(sq_send_trigger_irq) and C(cq_update_irq) by name (from
    the facts C(npus[].irqs.sq) / C(.cq) when present, else the first of its PCI device's
    C(/sys/bus/pci/devices/<bus_id>/msi_irqs/) named so in C(/proc/interrupts)) and writes
    C(/proc/irq/N/smp_affinity_list) = the plan's first IRQ CPU (C(npus[n].irq), SQ) and second
    (CQ), only where the current value differs. vllm-ascend assumes CQ = SQ + 1; real hosts put
    other vectors in between, so the name decides.
  - On GPU hosts (plan mode C(gpu_numa)) the paired NIC's C(mlx5_comp*) completion IRQs (found by
    C(@pci:<bus id>) in the name, else by the NIC's C(msi_irqs)) are spread round-robin over the
    GPU's pool, one CPU each; a NIC shared by several GPUs follows the lowest-numbered GPU's pool.
  - Ascend 950 has no IRQ roles in its plan (vllm-ascend skips IRQ binding there too); the module
    returns RV(skipped) (C(IRQ binding skipped on Ascend 950 ...)) and changes nothing.
  - Two planned NPUs that resolve to the same IRQ (npu-smi reports one Bus-Id for both 310P chips
    of an Atlas 300I Duo card, so both find the card's C(msi_irqs)) do not fail the task; the lower
    logic id keeps the IRQ and a warning names the IRQ and both NPUs.
  - Every affinity file is read and every needed write checked before the first write; when
    C(/proc/irq) is not writable (a container without C(--privileged)) the module fails with a
    message and writes nothing. If the kernel refuses a write (C(ENOSPC) when a CPU's vectors
    are exhausted, C(EIO) on a managed IRQ) the IRQs already written are restored and the task
    fails naming the IRQ.
  - irqbalance rewrites C(smp_affinity) of every IRQ it balances, so a manual setting does not
    last while it runs (irqbalance issues
    L(246,https://github.com/Irqbalance/irqbalance/issues/246) and
    L(297,https://github.com/Irqbalance/irqbalance/issues/297)); O(irqbalance) says how it is kept off
    these IRQs.
options:
  plan:
    description: The C(plan) returned by M(npuops.fleet.npu_cpu_plan).
    type: dict
    required: true
  topology:
    description: The facts C(ansible_facts['npu_topology']) (bus ids, C(npus[].irqs), C(nics), C(irqbalance)).
    type: dict
  npus:
    description: Only these planned devices (NPU logic ids or GPU indexes). Default the devices O(devices) chooses.
    type: list
    elements: int
  devices:
    description:
      - Which planned devices get their IRQs pinned when O(npus) is not given.
      - V(all) every device of the plan (a plan made without instances holds every device of the host).
      - V(instances) only the devices some instance of the plan (C(plan.instances[].npus)) uses, and on GPU
        hosts the NICs paired with them. A plan without instances pins nothing and the module returns
        RV(skipped) and one warning line saying so. A run without O(npus) also takes back what an earlier run
        recorded for devices it no longer pins - their bans in the irqbalance file (only the ones its marker
        line lists) and their rows in O(irq_state), so irqbalance and the reconciler leave them alone again.
      - The role C(npuops.fleet.cpu_binding) passes C(npuops_irq_devices) (default V(instances)), and V(all) on a
        Kubernetes node (O(reserved_cpus)), where any device may go to a pod.
    type: str
    choices: [all, instances]
    default: all
  irqbalance:
    description:
      - V(ban) keeps irqbalance running for every other IRQ and adds C(--banirq=N) for each of
        these IRQs to C(IRQBALANCE_ARGS) in the irqbalance environment file the unit reads (on a
        live host the last of C(systemctl show -p EnvironmentFiles irqbalance); else
        C(/etc/sysconfig/irqbalance) (RHEL, openEuler, Kylin) or C(/etc/default/irqbalance)
        (Debian, Ubuntu), whichever exists). With a plan C(cpu_budget), it also sets
        C(IRQBALANCE_BANNED_CPULIST) to the worker CPUs so no other IRQ lands there - unless the
        user set their own list (kept, with a warning) or a non-empty C(IRQBALANCE_BANNED_CPUS),
        which irqbalance reads first. Every other line and option is kept; the file is written
        atomically. RV(irqbalance_restart_needed) tells the role to restart it.
      - V(stop) writes nothing and returns RV(irqbalance_stop_needed) so the role stops and
        disables the service (vllm-ascend's own behaviour, minus its never restarting it).
      - V(ignore) leaves irqbalance alone; a warning says it may move the IRQs again.
    type: str
    choices: [ban, stop, ignore]
    default: ban
  reserved_cpus:
    description:
      - Kubernetes nodes - the kubelet's C(reservedSystemCPUs) (RV(npuops.fleet.kubelet_cpu_profile#module:profile.reserved_cpus)).
        Each IRQ not already on them goes to the reserved CPUs of its NUMA node, and with
        O(irqbalance=ban) C(IRQBALANCE_BANNED_CPULIST) becomes every allowed CPU but these, so no
        IRQ lands on a CPU a pod gets exclusively.
    type: str
  irq_state:
    description:
      - File recording every pinned IRQ, its device and its CPUs (JSON). The reconciler of each
        vLLM instance (M(npuops.fleet.vllm_launch_wrapper)) pins back from it what moved. Empty
        writes none.
      - With O(npus) (one instance's devices) the IRQs the file records for other devices are
        kept, so each instance's call adds its own; without it the file holds this plan's IRQs.
      - Runs that rewrite it at the same time take turns (an exclusive lock on C(.<name>.lock)
        beside it; a lock held over 60 s fails the task, naming the lock file).
    type: path
    default: /var/lib/npuops/irq-state.json
  allow_foreign_plan:
    description:
      - Accept a plan or topology made on another host (their C(hostname) differs from this
        host's). Off, they fail the task; set it when that is intended (a sandbox replaying a
        recorded host).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details: Writes nothing and warns when a real run would find C(/proc/irq) not writable.
  diff_mode:
    support: full
    details: Shows every IRQ's affinity list before and after, and the irqbalance file's diff.
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.host_root
notes:
  - "With O(irqbalance=ban) a marker line C(# npuops.fleet banned IRQs: ...) in the irqbalance
    file remembers which bans are ours, so IRQs that left the plan are unbanned on the next full
    run (with O(npus) set, earlier bans are kept)."
  - "Runs at once (two instances' tasks, two playbooks) merge the irqbalance file and the IRQ
    state file one at a time, each under a lock file beside it (C(.irqbalance.lock),
    C(.irq-state.json.lock)), so no run loses another's bans or rows. The state file's lock is
    held from the first C(/proc/irq) write to the state file's rewrite and the binder's IRQ
    reconcile pass takes it too, so a pass never pins IRQs back to the CPUs a run moves them off."
  - C(IRQBALANCE_BANNED_CPULIST) is not used; banning CPUs would make irqbalance move our IRQs
    I(off) the IRQ CPUs.
  - RV(irqbalance_restart_needed) is true when the config changed and irqbalance is not known to
    be inactive.
  - Only plain IRQ numbers are ever written; an C(msi_irqs) entry or facts value that is not a
    decimal number, or a PCI bus id not of the form C(0000:c1:00.0), fails the task. Paths
    through a symlink or with C(..) are refused.
  - A shared IRQ warns, for example that IRQ 1024 is shared by NPU0 (sq) and NPU1 (sq), stays
    with NPU0 on CPU 0, and that NPU1's IRQ CPU 64 is not used for it.
seealso:
  - module: npuops.fleet.npu_cpu_plan
  - module: npuops.fleet.npu_topology_facts
"""

EXAMPLES = r"""
- name: Gather the topology
  npuops.fleet.npu_topology_facts:

- name: Plan the CPU pools
  npuops.fleet.npu_cpu_plan:
    topology: "{{ ansible_facts['npu_topology'] }}"
  register: npu_plan

- name: NPU IRQs onto the planned CPUs, banned from irqbalance
  npuops.fleet.npu_irq_affinity:
    plan: "{{ npu_plan.plan }}"
    topology: "{{ ansible_facts['npu_topology'] }}"
  register: npu_irq

- name: Restart irqbalance so the bans apply
  ansible.builtin.systemd_service:
    name: irqbalance
    state: restarted
  when: npu_irq.irqbalance_restart_needed

# On an A2 host where NPU0's sq_send_trigger_irq is IRQ 100 and its cq_update_irq is IRQ 102
# (IRQ 101 is another vector of the same device), with the plan's npus["0"].irq "2-3":
#   changed_irqs:
#     - "100 (NPU0 sq): 0-3 -> 2"
#     - "102 (NPU0 cq): 0-3 -> 3"
# and /etc/default/irqbalance gains:
#   # npuops.fleet banned IRQs: 100 102
#   IRQBALANCE_ARGS="--journal --banirq=100 --banirq=102"
"""

RETURN = r"""
irqs:
  description: Every IRQ handled, with its affinity before and after.
  returned: always
  type: list
  elements: dict
  sample: [{irq: 123, device: NPU0, role: sq, before: "0-191", after: "144", changed: true}]
changed_irqs:
  description: "One line per IRQ changed (or to change, in check mode): the IRQ, its device and role, the
    affinity before and after."
  returned: always
  type: list
  elements: str
  sample: ["123 (NPU0 sq): 0-191 -> 144"]
skipped:
  description:
    - Why nothing is pinned (Ascend 950, skipped plan, O(devices=instances) and no instance uses a device), or null.
    - Null too when O(devices=instances) found no instance but took back what an earlier run pinned (the task is
      C(changed); the warning says why nothing is pinned).
  returned: always
  type: str
irq_state:
  description: The IRQ state file written or kept, or null when no IRQ was pinned.
  returned: always
  type: str
  sample: /var/lib/npuops/irq-state.json
irqbalance_config:
  description: The irqbalance file written (O(irqbalance=ban)), or null.
  returned: always
  type: str
  sample: /etc/default/irqbalance
irqbalance_restart_needed:
  description: The irqbalance config changed (and irqbalance is not known to be inactive); restart irqbalance.
  returned: always
  type: bool
irqbalance_stop_needed:
  description: O(irqbalance=stop) and irqbalance is (or may be) running.
  returned: always
  type: bool
"""

import contextlib
import json
import shutil
import socket

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops, irq
from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import IrqError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.host import command
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import profile as kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.model import instance_files
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules as host_rules
from ansible_collections.npuops.fleet.plugins.module_utils.parse import irqbalance_conf
from ansible_collections.npuops.fleet.plugins.module_utils.plan import irq_pins
from ansible_collections.npuops.fleet.plugins.module_utils.render import irqbalance


def irqbalance_step(p, irqs, check_mode, warnings=None):
    """(config path or None, file result or None) for irqbalance: ban. Every run of every
    instance merges its bans into the same file: read, merge and write under its lock."""
    state = (p["topology"] or {}).get("irqbalance") or {}
    if p["irqbalance"] != "ban" or state.get("installed") is False:
        return None, None
    if not irqs and not p.get("take_back"):
        return None, None
    path = irq.irqbalance_config_path(p["host_root"], unit_files(p))
    if not irqs and not our_bans(p, path):
        return None, None  # nothing to ban and none of ours to take back
    if check_mode:
        return path, merge_irqbalance_config(p, path, irqs, True, warnings)
    with fileops.exclusive(p["host_root"], path):
        return path, merge_irqbalance_config(p, path, irqs, False, warnings)


def our_bans(p, path):
    """The IRQs the irqbalance file's marker line says an earlier run banned."""
    current = fileops.read_host_text(p["host_root"], path)
    try:
        return irqbalance_conf.parse_config(current or "", path, cpus=False)["ours"]
    except ParseError as err:
        raise IrqError(str(err))


def merge_irqbalance_config(p, path, irqs, check_mode, warnings):
    current = fileops.read_host_text(p["host_root"], path)
    workers = (p["plan"].get("cpu_budget") or {}).get("workers") or None
    if p.get("reserved_cpus"):
        workers = on_reserved_banned(p)
    if not irqs:
        workers = None  # only taking our IRQ bans back: the CPU list is left as it is
    text = irqbalance.render_irqbalance_config(
        current, irqs, keep_previous=p["npus"] is not None, source=path, banned_cpus=workers, warnings=warnings
    )
    return fileops.ensure_file(p["host_root"], path, text, check_mode=check_mode, create_parents=True)


def on_reserved_banned(p):
    """IRQBALANCE_BANNED_CPULIST on a Kubernetes node: every allowed CPU but the reserved ones."""
    cpu = (p["topology"] or {}).get("cpu") or {}
    allowed = cpulist.parse(cpu.get("allowed") or cpu.get("online") or "", "topology cpu.allowed")
    reserved = set(cpulist.parse(p["reserved_cpus"], "reserved_cpus"))
    return cpulist.format([c for c in allowed if c not in reserved]) or None


def unit_files(p):
    """The EnvironmentFiles systemd reports for irqbalance on the real host (None in a sandbox
    root or without systemd): the file the unit really reads."""
    if p["host_root"] not in ("/", "") or not shutil.which("systemctl"):
        return None
    result = command.run(["systemctl", "show", "-p", "EnvironmentFiles", "--value", "irqbalance.service"], timeout=30)
    return irqbalance_conf.unit_environment_files(result.stdout) if result.ok else None


def takes_back(p, targets):
    """A run that chose its devices (``take_back``: no ``npus``, a plan with an IRQ step) and
    pins nothing rewrites an existing state file (its rows of devices no longer pinned go), so
    the reconciler stops pinning them back."""
    return (
        not targets
        and bool(p.get("take_back"))
        and bool(p["irq_state"])
        and fileops.stat_host(p["host_root"], p["irq_state"]) is not None
    )


def state_lock(p, targets, check_mode):
    """The IRQ state file's lock (``fileops.exclusive``), held from the first ``/proc/irq``
    write to the state file's rewrite: the binder's reconcile pass takes it too, so it never
    sees IRQs written and the old rows (it would pin them back to the old CPUs). A no-op in
    check mode or when nothing is recorded."""
    if check_mode or not p["irq_state"] or not (targets or takes_back(p, targets)):
        return contextlib.nullcontext()
    return fileops.exclusive(p["host_root"], p["irq_state"])


def state_file(p, targets, check_mode, warnings, locked=False):
    """The IRQ state file (which IRQ belongs on which CPUs) the reconciler pins back from.
    With ``npus`` (one instance's devices) the IRQs recorded for other devices are kept.
    ``locked``: the caller holds ``state_lock`` already."""
    if not p["irq_state"] or not (targets or takes_back(p, targets)):
        return None
    if check_mode or locked:
        return merge_state_file(p, targets, check_mode, warnings)
    # another instance's run may merge into the same file at the same time: one at a time
    with fileops.exclusive(p["host_root"], p["irq_state"]):
        return merge_state_file(p, targets, False, warnings)


def merge_state_file(p, targets, check_mode, warnings):
    current = fileops.read_host_text(p["host_root"], p["irq_state"]) if p["npus"] is not None else None
    document, problem = irqbalance.merge_state(irqbalance.state_document(targets), current, p["npus"])
    if problem:
        warnings.append("%s: %s" % (p["irq_state"], problem))
    text = json.dumps(document, indent=1, sort_keys=True) + "\n"
    return fileops.ensure_file(
        p["host_root"], p["irq_state"], text, mode=0o644, check_mode=check_mode, create_parents=True
    )


def pin_irqs(module):
    p = module.params
    state = (p["topology"] or {}).get("irqbalance") or {}
    for what, doc in (("plan", p["plan"]), ("topology", p["topology"] or {})):
        foreign = host_rules.foreign_host(what, doc.get("hostname"), socket.gethostname())
        if foreign and not p["allow_foreign_plan"]:
            raise IrqError(foreign)
    targets, skipped, warnings = irq.plan_targets(
        p["plan"], p["topology"], p["host_root"], p["npus"], scope=p.get("devices") or "all"
    )
    if skipped == irq_pins.NO_INSTANCE_NOTE:
        warnings.append(skipped)
    # a run that chose its devices takes back what earlier runs pinned for the others, even
    # when it pins none (their bans and state rows go; never on a plan without an IRQ step)
    p = dict(p, take_back=p["npus"] is None and skipped in (None, irq_pins.NO_INSTANCE_NOTE))
    if p.get("reserved_cpus"):
        targets, moved = kubelet_profile.irq_targets_on_reserved(
            targets,
            cpulist.parse(p["reserved_cpus"], "reserved_cpus"),
            host_rules.node_cpus(p["topology"] or {"cpu": {"numa_nodes": p["plan"].get("numa_nodes")}}),
        )
        warnings.extend(moved)
    # Validate the irqbalance file before touching any IRQ (nothing half-done).
    numbers = sorted(set(t["irq"] for t in targets))
    if p["irqbalance"] == "ban":
        irqbalance_step(p, numbers, check_mode=True)
    # the IRQ writes and their rows one step as a reconcile pass sees them (lock order: the
    # state file's, then the irqbalance file's)
    with state_lock(p, targets, module.check_mode):
        results = irq.apply_targets(targets, p["host_root"], module.check_mode)
        config_path, config = irqbalance_step(p, numbers, module.check_mode, warnings)
        recorded = state_file(p, targets, module.check_mode, warnings, locked=True)
    if module.check_mode:
        blocked = irq.blocked_irqs([r for r in results if r["changed"]], p["host_root"])
        if blocked:
            warnings.append(
                "/proc/irq is not writable for IRQs %s: a real run would fail and "
                "write nothing" % ", ".join(str(b) for b in blocked)
            )
    if p["irqbalance"] == "ignore" and state.get("active"):
        warnings.append("irqbalance is running and may move these IRQs again (irqbalance: ignore)")
    changed_irqs = [
        "%d (%s %s): %s -> %s" % (r["irq"], r["device"], r["role"], r["before"], r["after"])
        for r in results
        if r["changed"]
    ]
    config_changed = bool(config and config["changed"])
    before = "".join("IRQ %d (%s %s): %s\n" % (r["irq"], r["device"], r["role"], r["before"]) for r in results)
    after = "".join("IRQ %d (%s %s): %s\n" % (r["irq"], r["device"], r["role"], r["after"]) for r in results)
    diff = [
        {
            "before_header": "/proc/irq/*/smp_affinity_list",
            "after_header": "/proc/irq/*/smp_affinity_list",
            "before": before,
            "after": after,
        }
    ]
    if config_changed:
        diff.append(config["diff"])
    if recorded and recorded["changed"]:
        diff.append(recorded["diff"])
    changed = bool(changed_irqs) or config_changed or bool(recorded and recorded["changed"])
    if changed and skipped == irq_pins.NO_INSTANCE_NOTE:
        skipped = None  # earlier pins were taken back: ansible must count the task changed, not skipped
    return dict(
        changed=changed,
        irq_state=p["irq_state"] if recorded else None,
        irqs=results,
        changed_irqs=changed_irqs,
        skipped=skipped,
        irqbalance_config=config_path,
        irqbalance_restart_needed=config_changed and state.get("active") is not False,
        irqbalance_stop_needed=p["irqbalance"] == "stop" and bool(targets) and state.get("active") is not False,
        warnings=warnings,
        diff=diff,
    )


def main():
    run(
        dict(
            plan=dict(type="dict", required=True),
            topology=dict(type="dict"),
            npus=dict(type="list", elements="int"),
            devices=dict(type="str", choices=list(irq_pins.DEVICE_SCOPES), default="all"),
            irqbalance=dict(type="str", choices=["ban", "stop", "ignore"], default="ban"),
            irq_state=dict(type="path", default=instance_files.DEFAULT_IRQ_STATE),
            reserved_cpus=dict(type="str"),
            allow_foreign_plan=dict(type="bool", default=False),
            host_root=dict(type="path", default="/"),
        ),
        pin_irqs,
    )


if __name__ == "__main__":
    main()
