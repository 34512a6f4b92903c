#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: npu_topology_facts
short_description: Gather Ascend NPU / NVIDIA GPU / CPU / NUMA / RDMA NIC topology of a host
version_added: 0.1.0
description:
  - Reads an accelerator host - live, or replayed from a recorded host snapshot - and returns
    C(ansible_facts.npu_topology) (schema 1). C(changed) is always false.
  - "Commands, all run concurrently with C(LC_ALL=C) and no shell, each under O(timeout):
    C(npu-smi info), C(npu-smi info -m), C(npu-smi info -t topo), C(lscpu), C(lscpu -e=CPU,NODE),
    C(nvidia-smi topo -m), C(nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader),
    C(systemctl is-active irqbalance)."
  - Files read are C(/proc/self/status) (C(Cpus_allowed_list)), C(/sys/devices/system/cpu/online),
    C(/sys/devices/system/node/node*/cpulist), C(/sys/bus/pci/devices/<bdf>/{numa_node,vendor,device,msi_irqs/}),
    C(/proc/interrupts), C(/sys/class/infiniband/*) and the irqbalance environment file
    C(/etc/sysconfig/irqbalance) or C(/etc/default/irqbalance). Tools looked up on C(PATH) are
    npu-smi, nvidia-smi, migratepages, taskset, systemctl and irqbalance.
  - A source that fails (non-zero exit, timeout, unparsable text) is listed in C(errors) with the
    reason; a tool that is not installed is not an error (see C(tools)). The module fails only
    when no CPU information at all can be read.
  - The device type (A2, A3, A5 for Ascend 950, 310P, 910A, unknown) is derived from chip names,
    the C(Phy-ID) column, dies per NPU and Huawei PCI device ids; C(device_type_evidence) says
    why (rules in the notes).
author:
  - npuops.fleet contributors (@npuops)
options:
  snapshot:
    description:
      - Replay this recorded host snapshot directory (C(snapshot.yml) + C(fs/)) instead of
        reading the host. Nothing on the host is read. The format is in the notes.
    type: path
  save_snapshot:
    description:
      - Record everything read into this directory (created when missing; files in it are
        overwritten), so the host can be replayed later with O(snapshot).
      - Not written in check mode.
    type: path
  timeout:
    description:
      - Seconds each command may run before it is killed and reported in C(errors).
    type: int
    default: 30
extends_documentation_fragment:
  - npuops.fleet.attributes
  - npuops.fleet.attributes.facts
  - npuops.fleet.attributes.info_module
attributes:
  facts:
    support: full
notes:
  - NUMA nodes come from sysfs, else C(lscpu -e), else the C(lscpu) summary; C(cpu.numa_source)
    says which.
  - NPU IRQs (C(npus[].irqs)) are found by name, the chip's C(msi_irqs) entries matched in
    C(/proc/interrupts) - the first C(sq_send_trigger_irq) and the first C(cq_update_irq), not
    SQ + 1 as vllm-ascend assumes.
  - NIC IRQs (C(nics[].irqs)) are the NIC's C(mlx5_comp*) completion IRQs, found by
    C(@pci:<bus id>) in the name, else by its C(msi_irqs) - the IRQs
    M(npuops.fleet.npu_irq_affinity) pins for a paired GPU; null when C(/proc/interrupts) or the
    bus id is unknown.
  - "irqbalance (C(irqbalance)): C(active) comes from C(systemctl is-active); C(config) is the
    environment file read, null when there is none - C(/etc/sysconfig/irqbalance) when it
    exists, else C(/etc/default/irqbalance), the one that
    O(npuops.fleet.npu_irq_affinity#module:irqbalance=ban) writes; C(banned_irqs) the IRQs its C(IRQBALANCE_ARGS) bans
    (C(--banirq=N), C(--banirq N), C(-i N); ours and the user's alike); C(banned_cpus) the cpulist
    of C(IRQBALANCE_BANNED_CPULIST) (or of the mask C(IRQBALANCE_BANNED_CPUS)), null when unset."
  - "An irqbalance file that cannot be parsed (an unclosed quote) is listed in C(errors) under its
    path and bans nothing. The fleet audit uses C(banned_irqs) to tell whether irqbalance can
    still move the planned IRQs. After O(npuops.fleet.npu_irq_affinity#module:irqbalance=ban)
    ran on the real A2 host the facts read
    C({installed: true, active: true, config: /etc/default/irqbalance, banned_irqs: [1024, 1026, 1028, ..., 1054], banned_cpus: null})."
  - Device type rules (C(device_type_evidence) says which applied) - chip name C(Ascend950*) ->
    A5; C(310P*) -> 310P; C(910B<n>) -> A2 unless the host shows A3's shape (C(Chip  Phy-ID)
    header, two dies per NPU with their own bus ids), which wins; C(Ascend910), C(9391), C(9392),
    ... -> A3; C(910A), C(910ProB) -> 910A; PCI C(19e5:d801), C(d802), C(d803), C(d500) -> 910A,
    A2, A3, 310P when names say nothing.
  - The C(npu-smi info -t topo) CPU Affinity is keyed by logical NPU id (as vllm-ascend reads it).
    A3 and Ascend 950 topo matrices have no affinity column; C(affinity) is null there.
  - Soft-share capacity (C(softshare.capacity)) is healthy chips x 100; A3 counts dies.
  - Beyond the product schema the facts carry C(device_type_evidence), C(numa_off) (NVIDIA, from
    the C(nvidia-smi topo -m) parser), C(warnings), C(cpu.numa_source) and C(cpu.model).
  - Ad hoc audit of a fleet, C(ansible all -m npuops.fleet.npu_topology_facts -a timeout=10).
  - Snapshot format (O(save_snapshot) writes it, O(snapshot) replays it) - a directory with
    C(snapshot.yml), C(cmd/<slug>.txt) (multi-line command outputs, named by C(stdout_file)) and
    C(fs/...), a mirror of the host paths read (C(fs/proc/self/status), C(fs/sys/...)). The last
    example shows a C(snapshot.yml).
  - "C(snapshot.yml) keys: C(schema) (1), C(hostname), C(captured_at), C(arch), C(env) (the
    visible-device variables), C(commands) (command line to its result), C(links) (extension,
    answers for realpath(); the longest entry that prefixes a path resolves it) and C(tools)
    (extension, answers for which(); absent or null means not installed)."
  - "A path absent from C(fs/) does not exist on that host; a command absent from C(commands), or
    with C(missing: true), is not installed. Command fields are C(rc), C(stdout) or C(stdout_file)
    (relative, inside the snapshot), C(stderr), C(missing), C(timed_out), C(seconds)."
  - Empty directories hold a C(.snapshot-keep) marker (never listed). Replay refuses C(..),
    relative paths, C(stdout_file) outside the snapshot and symlinks inside C(fs/).
  - C(snapshot.yml) is read without PyYAML, as a strict YAML subset (block mappings and
    sequences, flow mappings and sequences, plain / single- / double-quoted scalars with JSON
    escapes, ints, floats, bools, null, C(|) literal blocks, comments) or one JSON object.
    Anything else fails with the file and line. The writer emits JSON-style double-quoted strings.
  - Recorded hosts for tests and the demo fleet live in the collection's C(tests/snapshots/) (its
    README says what is real and what is synthesised); C(scripts/gen_snapshots.py) rebuilds them.
seealso:
  - module: npuops.fleet.npu_cpu_plan
'''

EXAMPLES = r'''
- name: Gather NPU/GPU topology
  npuops.fleet.npu_topology_facts:

- name: Show the NUMA node of every NPU
  ansible.builtin.debug:
    msg: "{{ ansible_facts.npu_topology.npus | map(attribute='numa_node') | list }}"

- name: Record this host for offline planning and tests
  npuops.fleet.npu_topology_facts:
    save_snapshot: /tmp/snapshots/{{ inventory_hostname }}

- name: Replay a recorded host (nothing on the target is read)
  npuops.fleet.npu_topology_facts:
    snapshot: "{{ playbook_dir }}/snapshots/a2-910b3x8"
  delegate_to: localhost

- name: Fail fast on wedged drivers
  npuops.fleet.npu_topology_facts:
    timeout: 5

# A snapshot directory:
#   <snapshot>/snapshot.yml
#   <snapshot>/cmd/<slug>.txt   # multi-line command outputs (stdout_file)
#   <snapshot>/fs/...           # mirror of host paths read: fs/proc/self/status, fs/sys/...
# and its snapshot.yml:
#   schema: 1
#   hostname: a2-node-01
#   captured_at: "2026-11-30T05:00:00Z"
#   arch: aarch64
#   env: {ASCEND_RT_VISIBLE_DEVICES: "0,1"}
#   commands:
#     "npu-smi info": {rc: 0, stdout_file: cmd/npu-smi-info.txt}
#     "systemctl is-active irqbalance": {rc: 3, stdout: "inactive\n"}
#     "nvidia-smi topo -m": {missing: true}
#     "npu-smi info -t topo": {rc: -9, timed_out: true, seconds: 30.0}
#   links:      # extension: answers for realpath()
#     "/sys/class/infiniband/mlx5_0/device": "/sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0"
#   tools:      # extension: answers for which(); absent or null = not installed
#     migratepages: /usr/bin/migratepages
'''

RETURN = r'''
ansible_facts:
  description: Facts added to the host.
  returned: success
  type: dict
  contains:
    npu_topology:
      description:
        - Host topology, schema 1 (see the collection's C(docs/dev/architecture.md)).
        - Keys C(schema_version), C(hostname), C(arch), C(vendor) (ascend, nvidia, none),
          C(device_type), C(device_type_evidence), C(cpu) (allowed, online, threads_per_core,
          numa_nodes, numa_source, model), C(npus), C(npu_map), C(gpus), C(numa_off), C(nics),
          C(tools), C(irqbalance), C(visible_devices), C(softshare), C(warnings), C(errors).
        - The sample is C(tests/snapshots/a2-910b3x8) with one of its eight NPUs.
      returned: success
      type: dict
      sample:
        schema_version: 1
        hostname: a2-910b3x8
        arch: aarch64
        vendor: ascend
        device_type: A2
        device_type_evidence: ["chip name '910B3' -> A2", "PCI device 19e5:d802 -> A2"]
        cpu: {allowed: "0-191", online: "0-191", threads_per_core: 1, numa_source: sysfs,
              model: Kunpeng-920,
              numa_nodes: {"0": "0-23", "1": "24-47", "2": "48-71", "3": "72-95", "4": "96-119",
                           "5": "120-143", "6": "144-167", "7": "168-191"}}
        npus:
          - {npu_id: 0, chip_id: 0, logic_id: 0, phy_id: null, name: 910B3, bus_id: "0000:c1:00.0",
             numa_node: 6, affinity: "144-167", health: OK, hbm_total_mb: 65536, hbm_used_mb: 3338,
             processes: [], irqs: {sq: 1024, cq: 1026}}
        npu_map: {"0": {"0": "0"}, "1": {"0": "1"}, "2": {"0": "2"}, "3": {"0": "3"},
                  "4": {"0": "4"}, "5": {"0": "5"}, "6": {"0": "6"}, "7": {"0": "7"}}
        gpus: []
        numa_off: null
        nics: []
        tools: {npu-smi: true, nvidia-smi: false, migratepages: true, taskset: true,
                systemctl: true}
        irqbalance: {installed: true, active: true, config: null, banned_irqs: [],
                     banned_cpus: null}
        visible_devices: {ASCEND_RT_VISIBLE_DEVICES: null, CUDA_VISIBLE_DEVICES: null}
        softshare: {chips_total: 8, chips_healthy: 8, capacity: 800}
        warnings: []
        errors: []
snapshot_saved:
  description: Directory the snapshot was written to.
  returned: when O(save_snapshot) is set and not in check mode
  type: str
  sample: /tmp/snapshots/node-01
'''

from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology


def gather(module):
    params = module.params
    if params['timeout'] <= 0:
        raise NpuopsError("timeout must be a positive number of seconds, got %d" % params['timeout'])
    result = dict(changed=False)
    if params['snapshot']:
        source = hostio.SnapshotHostIO(params['snapshot'])
    else:
        source = hostio.LiveHostIO()
    recorder = hostio.RecordingHostIO(source) if params['save_snapshot'] else None
    facts = topology.gather(recorder or source, timeout=params['timeout'])
    if recorder is not None and not module.check_mode:
        try:
            recorder.save(params['save_snapshot'])
        except (IOError, OSError) as err:
            raise SnapshotError("cannot write snapshot %s: %s" % (params['save_snapshot'], err))
        result['snapshot_saved'] = params['save_snapshot']
    result['ansible_facts'] = dict(npu_topology=facts)
    return result


def main():
    run(dict(
        snapshot=dict(type='path'),
        save_snapshot=dict(type='path'),
        timeout=dict(type='int', default=30),
    ), gather)


if __name__ == '__main__':
    main()
