#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_binding_facts
short_description: Read back what is really bound for each installed vLLM instance, and its drift
version_added: 0.1.0
description:
  - For every instance M(npuops.fleet.vllm_launch_wrapper) installed under O(dest) (its
    C(<name>.plan.json)), asks the instance's own binder in check mode
    (C(<name>-bind --once --check --json)) which processes and threads are off their planned CPUs,
    which planned IRQs moved (the IRQ state file M(npuops.fleet.npu_irq_affinity) writes), how much
    of each worker's resident memory is off its NUMA node (C(/proc/<pid>/numa_maps)), and whether
    its systemd unit runs. Nothing is changed but a snapshot written with O(save_snapshot).
  - Returns C(ansible_facts.npu_binding) with the state per instance and C(drift), one row per
    kind of drift and device, each with its evidence and its fix; the fleet audit reports them.
  - Works live and from a recorded host snapshot - the binder's report and the unit state are
    commands, recorded and replayed like the others (O(save_snapshot), O(snapshot)).
options:
  dest:
    description: Directory holding the instances' plan JSON and binder (the wrapper's O(dest)).
    type: path
    default: /usr/local/lib/npuops
  irq_state:
    description: IRQ state file of M(npuops.fleet.npu_irq_affinity) (which IRQ belongs on which CPUs).
    type: path
    default: /var/lib/npuops/irq-state.json
  topology:
    description:
      - The host's C(npu_topology) facts; when given, its C(irqbalance) block tells whether
        irqbalance runs without banning the pinned IRQs (drift C(irqbalance_undoing)).
    type: dict
  root_pids:
    description:
      - "C({instance: pid}) of main processes that no systemd unit runs (a sandbox, a test); an
        instance listed here is looked up by this pid instead of its unit's C(MainPID)."
    type: dict
  timeout:
    description: Seconds each command (a binder, C(systemctl)) may take.
    type: int
    default: 60
  snapshot:
    description: Replay this recorded host snapshot directory instead of reading the host.
    type: path
  save_snapshot:
    description:
      - Also record everything read into this new snapshot directory (0700, files 0600).
        C(changed) is true when it is written, and in check mode, where it is not written,
        when it would be.
      - An existing directory that holds anything is refused unless O(overwrite_snapshot) is
        true (checked before anything is read).
    type: path
  overwrite_snapshot:
    description: Replace the files of an existing, non-empty O(save_snapshot) directory.
    type: bool
    default: false
  proc_irq:
    description:
      - Where the binder finds the IRQ directories. Default C(/proc/irq), or C(<host_root>/proc/irq)
        when O(host_root) is a sandbox root.
    type: path
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.attributes.facts
  - npuops.fleet.attributes.info_module
  - npuops.fleet.host_root
attributes:
  facts:
    support: full
notes:
  - "Drift kinds: C(threads_off_plan), C(irq_moved), C(memory_remote) (more than 10% of a
    worker's resident memory off its node), C(irqbalance_undoing), C(unit_down),
    C(worker_missing), C(binder_failed)."
  - "With O(host_root) other than C(/) (a sandbox root) no systemd unit is asked: this
    machine's systemd is not the sandbox's. Only the instances named in O(root_pids) are checked;
    the others are listed with C(checked: false)."
  - "The reconciler timer the wrapper installs (C(vllm-<name>-reconcile.timer)) runs the same binder
    without C(--check), so it pins back what drifted and writes node_exporter metrics."
"""

EXAMPLES = r"""
- name: Read the binding state of this host's vLLM instances
  npuops.fleet.vllm_binding_facts:
    topology: "{{ ansible_facts['npu_topology'] | default(omit) }}"

- name: Fail when an instance drifted
  ansible.builtin.assert:
    that: ansible_facts['npu_binding']['drift'] | length == 0
    fail_msg: "{{ ansible_facts['npu_binding']['drift'] | map(attribute='evidence') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: C(npu_binding) with C(schema_version), C(dest), C(instances), C(drift), C(errors).
  returned: always
  type: dict
  contains:
    npu_binding:
      description: The binding state.
      type: dict
      returned: always
      sample:
        schema_version: 1
        dest: /usr/local/lib/npuops
        instances:
          svc0:
            unit: vllm-svc0.service
            unit_state: active
            binding: host
            devices: [0, 1, 2, 3]
            checked: true
            report: {changed: true, workers: [], frontend: [], irqs: [], missing: []}
        drift:
          - {instance: svc0, device: NPU0, kind: threads_off_plan,
             evidence: "pid 4242 (VLLM::Worker_TP0): 1 of 40 threads off their planned CPUs",
             fix: "run the instance's reconciler"}
        errors: []
snapshot_saved:
  description: Directory the snapshot was written to (with O(save_snapshot)).
  returned: when a snapshot was written
  type: str
"""

from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.apply import snapshot_save
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import binding, instance_files


def read_binding(module):
    p = module.params
    if p["timeout"] <= 0:
        raise NpuopsError("timeout must be a positive number of seconds, got %d" % p["timeout"])
    for name, pid in (p["root_pids"] or {}).items():
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise NpuopsError("root_pids[%s]: %r is not a process id" % (name, pid))
    source = hostio.SnapshotHostIO(p["snapshot"]) if p["snapshot"] else hostio.LiveHostIO(p["host_root"])
    recorder = snapshot_save.recorder(source, p["save_snapshot"], p["overwrite_snapshot"])
    state = binding.gather(
        recorder or source,
        p["dest"],
        p["irq_state"],
        p["timeout"],
        host_root=p["host_root"],
        root_pids=p["root_pids"],
        proc_irq=p["proc_irq"],
    )
    state["drift"] = binding.drift(state, ((p["topology"] or {}).get("irqbalance")))
    result = dict(changed=False, ansible_facts=dict(npu_binding=state))
    snapshot_save.save(recorder, p["save_snapshot"], module.check_mode, result, p["overwrite_snapshot"])
    return result


def main():
    run(
        dict(
            dest=dict(type="path", default=instance_files.DEFAULT_DEST),
            irq_state=dict(type="path", default=instance_files.DEFAULT_IRQ_STATE),
            topology=dict(type="dict"),
            root_pids=dict(type="dict"),
            timeout=dict(type="int", default=60),
            snapshot=dict(type="path"),
            save_snapshot=dict(type="path"),
            overwrite_snapshot=dict(type="bool", default=False),
            proc_irq=dict(type="path"),
            host_root=dict(type="path", default="/"),
        ),
        read_binding,
        mutually_exclusive=[("snapshot", "save_snapshot")],
    )


if __name__ == "__main__":
    main()
