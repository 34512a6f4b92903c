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
    C(ansible_facts.npu_topology) (schema 1).
  - "Sources: C(npu-smi info), C(npu-smi info -m), C(npu-smi info -t topo), C(lscpu),
    C(lscpu -e=CPU,NODE), C(nvidia-smi topo -m), C(nvidia-smi --query-gpu), C(systemctl is-active irqbalance),
    C(/proc/self/status), C(/proc/interrupts), sysfs NUMA nodes, PCI devices and C(/sys/class/infiniband)."
  - All commands run concurrently with C(LC_ALL=C), each under O(timeout). A source that fails
    is reported in C(errors) with its reason; the module fails only when no CPU information at
    all can be read.
  - The device type (A2, A3, A5 for Ascend 950, 310P, 910A, unknown) is derived from chip names,
    the C(Phy-ID) column, dies per NPU and Huawei PCI device ids; the evidence is returned.
author:
  - npuops.fleet contributors (@npuops)
options:
  snapshot:
    description:
      - Replay this recorded host snapshot directory (C(snapshot.yml) + C(fs/)) instead of
        reading the host. Nothing on the host is read.
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
  - The snapshot format is described in the collection's C(docs/modules/npu_topology_facts.md).
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
'''

RETURN = r'''
ansible_facts:
  description: Facts added to the host.
  returned: success
  type: dict
  contains:
    npu_topology:
      description:
        - Host topology, schema 1 (see the collection's docs/dev/architecture.md).
        - Keys C(schema_version), C(hostname), C(arch), C(vendor) (ascend, nvidia, none),
          C(device_type), C(device_type_evidence), C(cpu) (allowed, online, threads_per_core,
          numa_nodes, numa_source, model), C(npus), C(npu_map), C(gpus), C(numa_off), C(nics),
          C(tools), C(irqbalance), C(visible_devices), C(softshare), C(warnings), C(errors).
      returned: success
      type: dict
      sample:
        schema_version: 1
        hostname: a2-910b3x8
        arch: aarch64
        vendor: ascend
        device_type: A2
        cpu: {allowed: "0-191", online: "0-191", threads_per_core: 1, numa_source: sysfs,
              numa_nodes: {"0": "0-23", "1": "24-47", "2": "48-71", "3": "72-95", "4": "96-119",
                           "5": "120-143", "6": "144-167", "7": "168-191"}}
        npus:
          - {npu_id: 0, chip_id: 0, logic_id: 0, phy_id: null, name: 910B3, bus_id: "0000:c1:00.0",
             numa_node: 6, affinity: "144-167", health: OK, hbm_total_mb: 65536, hbm_used_mb: 3338,
             processes: [], irqs: {sq: 1024, cq: 1026}}
        softshare: {chips_total: 8, chips_healthy: 8, capacity: 800}
        errors: []
snapshot_saved:
  description: Directory the snapshot was written to.
  returned: when O(save_snapshot) is set and not in check mode
  type: str
  sample: /tmp/snapshots/node-01
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError


def main():
    module = AnsibleModule(
        argument_spec=dict(
            snapshot=dict(type='path'),
            save_snapshot=dict(type='path'),
            timeout=dict(type='int', default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params['timeout'] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds, got %d" % params['timeout'])
    result = dict(changed=False)
    try:
        if params['snapshot']:
            source = hostio.SnapshotHostIO(params['snapshot'])
        else:
            source = hostio.LiveHostIO()
        recorder = hostio.RecordingHostIO(source) if params['save_snapshot'] else None
        facts = topology.gather(recorder or source, timeout=params['timeout'])
        if recorder is not None and not module.check_mode:
            recorder.save(params['save_snapshot'])
            result['snapshot_saved'] = params['save_snapshot']
    except NpuopsError as err:
        module.fail_json(msg=str(err), **result)
    except (IOError, OSError) as err:
        module.fail_json(msg="cannot write snapshot %s: %s" % (params['save_snapshot'], err), **result)
    result['ansible_facts'] = dict(npu_topology=facts)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
