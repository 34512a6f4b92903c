#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: npu_cpu_partition
short_description: Keep everything that is not a vLLM tree off the workers' CPUs (host CPU partition from the plan)
version_added: 0.2.0
description:
  - Computes the partition from the plan - C(isolated) = the workers' main, ACL and release CPUs
    (C(cpu_budget.workers) minus each NPU's IRQ CPUs; a GPU pool whole), C(housekeeping) =
    C(cpu_budget.frontend), C(spare) and C(reserved) minus kernel-isolated CPUs - and applies it.
  - cgroup v2 - C(AllowedCPUs=) drop-ins for C(system.slice), C(user.slice) and C(init.scope),
    effective for running processes at the C(systemctl daemon-reload) the module runs. cgroup v1 or
    hybrid - the manager's C(CPUAffinity=) in C(/etc/systemd/system.conf.d/), applied by the same
    C(daemon-reload) (systemd re-reads its configuration and sets its affinity; a C(daemon-reexec)
    would not); services started from then on get it, running services keep their CPUs until they
    restart. Taken back, the drop-in is first rewritten to the affinity the manager had before and
    reloaded - an unset C(CPUAffinity=) leaves the manager's affinity as it is.
  - C(/sys/devices/virtual/workqueue/cpumask) and C(/proc/irq/default_smp_affinity) are written
    at once and again at boot (C(/etc/tmpfiles.d/npuops-cpu-partition.conf)).
  - Where tuned is the host's tuning daemon (O(tuned)), a tuned profile C(npuops-cpu-partition)
    that includes tuned's C(cpu-partitioning) with the plan's isolated cores is activated instead
    (tuned then owns the workqueue mask, the manager's affinity and irqbalance's banned CPUs); the
    vLLM trees are excluded from its scheduler plugin, the slice drop-ins are still written.
  - The instances' services (the plan's C(instances)) get a drop-in C(Slice=npuops-vllm.slice) - the
    slice is outside C(system.slice), so its restriction never cuts their pools; the service's own
    C(AllowedCPUs=) (its pools and frontend) still confines it. The move happens at the service's
    next start; on a live cgroup v2 host, while one still runs in C(system.slice), the module refuses
    or restarts it (O(restart_instances)).
  - Kernel command-line isolation (C(isolcpus), C(nohz_full), C(rcu_nocbs)) only with
    O(kernel_cmdline=true); it needs a reboot, which the module never does (RV(reboot_pending)).
  - All or nothing - a failing step undoes the steps taken and the message says what state the
    host is in. O(state=absent) removes every file, restores the saved runtime values and tuned
    profile.
  - Runs at once take turns - a real run holds an exclusive lock on
    C(/var/lib/npuops/.cpu_partition.json.lock) (beside the state file; left there, empty) from
    reading the state file to its last step, for at most 600 s; check mode takes no lock.
  - A plan that leaves fewer than O(min_housekeeping) housekeeping CPUs is refused with the numbers.
options:
  plan:
    description: The plan (RV(npuops.fleet.npu_cpu_plan#module:plan)); required with O(state=present).
    type: dict
  topology:
    description: The host facts (C(cpu) and C(cgroup) sections are read).
    type: dict
  state:
    description: V(present) applies the partition, V(absent) takes every piece of it back.
    type: str
    choices: [present, absent]
    default: present
  min_housekeeping:
    description: The fewest housekeeping CPUs a host may be left with.
    type: int
    default: 2
  tuned:
    description:
      - V(auto) drives tuned where it runs (live host - C(tuned.service) active; sandbox root -
        C(/etc/tuned/active_profile) exists), V(always) or V(never).
    type: str
    choices: [auto, always, never]
    default: auto
  kernel_cmdline:
    description: Also isolate at boot (C(isolcpus=managed_irq,domain,...), C(nohz_full), C(rcu_nocbs)); takes effect after a reboot.
    type: bool
    default: false
  cgroup:
    description: V(auto) takes the facts' C(cgroup.version); V(v2) or V(v1) override it.
    type: str
    choices: [auto, v2, v1]
    default: auto
  restart_instances:
    description:
      - On a live cgroup v2 host, instance units (C(vllm-<name>.service)) that still run in
        C(system.slice) are restarted after the reload so they move to C(npuops-vllm.slice)
        (a running unit cannot change slice). V(false) refuses the run instead, changing nothing.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details: Reads the host and reports every step; writes nothing and runs no command.
  diff_mode:
    support: full
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.host_root
seealso:
  - module: npuops.fleet.npu_cpu_plan
"""

EXAMPLES = r"""
- name: Partition the host's CPUs from its plan
  npuops.fleet.npu_cpu_partition:
    plan: "{{ npuops_plan }}"
    topology: "{{ ansible_facts['npu_topology'] }}"

- name: Take the partition back
  npuops.fleet.npu_cpu_partition:
    state: absent
"""

RETURN = r"""
isolated:
  description: The CPUs kept for the workers' threads.
  returned: state=present
  type: str
  sample: "146-155,158-167"
irq_cpus:
  description: The workers' IRQ CPUs (neither isolated nor housekeeping).
  returned: state=present
  type: str
  sample: "144-145,156-157"
housekeeping:
  description: The CPUs everything else runs on.
  returned: state=present
  type: str
  sample: "24-47,72-95"
files:
  description: The files the partition keeps on the host.
  returned: always
  type: list
  elements: str
steps:
  description: What was (check mode - would be) changed.
  returned: always
  type: list
  elements: str
pending:
  description: Commands a sandbox root could not run (a live host runs them).
  returned: always
  type: list
  elements: str
reboot_pending:
  description: O(kernel_cmdline=true) and the running kernel's command line lacks the isolation (or a bootloader file changed).
  returned: always
  type: bool
restarted:
  description: Instance units restarted into C(npuops-vllm.slice) (O(restart_instances)).
  returned: state=present
  type: list
  elements: str
tuned:
  description: Whether tuned drives the partition.
  returned: always
  type: bool
"""

import contextlib
import shutil

from ansible_collections.npuops.fleet.plugins.module_utils.apply import cpu_partition as apply
from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import command
from ansible_collections.npuops.fleet.plugins.module_utils.plan import cpu_partition as planner
from ansible_collections.npuops.fleet.plugins.module_utils.render import cpu_partition as render


def uses_tuned(p, part):
    if p["tuned"] != "auto":
        return p["tuned"] == "always"
    if part.live:
        if not shutil.which("systemctl"):
            return False
        result = command.run(["systemctl", "is-active", "tuned.service"], timeout=30)
        return result.stdout.strip() == "active"
    return part.tuned_active() is not None


def cgroup_of(p):
    if p["cgroup"] != "auto":
        return 2 if p["cgroup"] == "v2" else 1
    version = planner.cgroup_version(p["topology"])
    if version is None:
        raise NpuopsError(
            "npu_cpu_partition: the facts do not say which cgroup version the host "
            "runs (topology cgroup.version); set cgroup: v2 or v1"
        )
    return version


def _shown(steps):
    out = []
    for s in steps:
        text = s["kind"] in ("file", "restore_then_remove")
        out.append(
            "%s %s: %s -> %s"
            % (
                "file" if text else s["kind"],
                s["path"],
                "absent" if s["before"] is None else ("present" if text else s["before"]),
                "absent" if s["after"] is None else ("written" if text else s["after"]),
            )
        )
    return out


def present(module, part):
    p = module.params
    if not p["plan"]:
        raise NpuopsError("npu_cpu_partition: plan is required with state=present")
    cpu = (p["topology"] or {}).get("cpu")
    layout = planner.partition(p["plan"], cpu, p["min_housekeeping"])
    version = cgroup_of(p)
    tuned = uses_tuned(p, part)
    with state_lock(module, part):  # a refused plan or option has taken no lock
        return apply_present(module, part, layout, version, tuned)


def apply_present(module, part, layout, version, tuned):
    p = module.params
    files, runtime = render.files(
        layout, version, tuned, p["kernel_cmdline"], sorted((p["plan"].get("instances") or {}).keys())
    )
    steps, warnings = part.compare(files, runtime, render.TUNED_PROFILE if tuned else None)
    state = part.state()
    state_text = apply.new_state(
        state,
        steps,
        part.tuned_active(),
        layout,
        part.manager_affinity(),
        planner.kernel_cmdline(layout) if p["kernel_cmdline"] else None,
        part.root_cpus() or layout["allowed"],
    )
    state_before = part.read(render.STATE_FILE)
    if state_before != state_text:  # first in the list: execute writes it before anything else
        steps.insert(0, {"kind": "file", "path": render.STATE_FILE, "before": state_before, "after": state_text})
    if not tuned and part.tuned_active() == render.TUNED_PROFILE:
        steps.append(
            {
                "kind": "tuned",
                "path": apply.TUNED_ACTIVE,
                "before": render.TUNED_PROFILE,
                "after": (state or {}).get("tuned_before") or None,
            }
        )
    restart = []
    if (
        steps
        and version == 2
        and part.live
        and any(s["path"].startswith(render.UNIT_DIR + "/system.slice") for s in steps)
    ):
        restart = part.instances_in_system_slice()
        if restart and not p["restart_instances"]:
            raise NpuopsError(
                "npu_cpu_partition: %s still run(s) in system.slice, whose AllowedCPUs=%s would "
                "cut their pools at once. A running unit cannot change slice: set "
                "restart_instances (npuops_cpu_partition_restart_instances: true) to restart "
                "them into %s as part of this run, or stop them first. Nothing was changed"
                % (", ".join(restart), layout["housekeeping"], planner.VLLM_SLICE)
            )
    pending = []
    if steps and not module.check_mode:
        pending = part.execute([s for s in steps if s["path"] != render.STATE_FILE], state_text, restart)
    cmdline = (part.io.read_text("/proc/cmdline") or "") if p["kernel_cmdline"] else ""
    reboot = p["kernel_cmdline"] and (
        any(s["path"] == render.GRUB_DROPIN for s in steps)
        or not all(arg in cmdline.split() for arg in planner.kernel_cmdline(layout))
    )
    return dict(
        changed=bool(steps),
        isolated=layout["isolated"],
        irq_cpus=layout["irq"],
        housekeeping=layout["housekeeping"],
        counts=layout["counts"],
        files=sorted(files),
        steps=_shown(steps),
        pending=pending,
        tuned=tuned,
        restarted=restart,
        reboot_pending=bool(reboot),
        warnings=warnings,
        diff=apply.diff_of(steps),
    )


def state_lock(module, part):
    """The state file's lock (``apply/fileops.exclusive``, ``.cpu_partition.json.lock`` beside
    it), held from reading the state to the last step: two runs at once (two playbooks, a
    take-back beside an apply) cannot lose the values saved before the first partition. None
    in check mode, which writes nothing."""
    if module.check_mode:
        return contextlib.nullcontext()
    return fileops.exclusive(part.host_root, render.STATE_FILE, timeout=apply.LOCK_SECONDS)


def absent(module, part):
    steps, warnings = part.restore_steps(part.state())
    pending = []
    if steps and not module.check_mode:  # nothing to take back: no lock file left behind
        with state_lock(module, part):
            steps, warnings = part.restore_steps(part.state())  # again, under the lock
            pending = part.execute(steps)
    return dict(
        changed=bool(steps),
        files=[],
        steps=_shown(steps),
        pending=pending,
        tuned=False,
        reboot_pending=any(s["path"] == render.GRUB_DROPIN for s in steps),
        warnings=warnings,
        diff=apply.diff_of(steps),
    )


def body(module):
    part = apply.Partition(module.params["host_root"])
    if module.params["state"] == "absent":
        return absent(module, part)
    return present(module, part)


def main():
    run(
        dict(
            plan=dict(type="dict"),
            topology=dict(type="dict"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            min_housekeeping=dict(type="int", default=2),
            tuned=dict(type="str", choices=["auto", "always", "never"], default="auto"),
            kernel_cmdline=dict(type="bool", default=False),
            cgroup=dict(type="str", choices=["auto", "v2", "v1"], default="auto"),
            restart_instances=dict(type="bool", default=False),
            host_root=dict(type="path", default="/"),
        ),
        body,
    )


if __name__ == "__main__":
    main()
