#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: npu_cpu_plan
short_description: Per-host CPU pools and role split for Ascend NPUs; GPU pools and GPU-NIC pairing
version_added: 0.1.0
description:
  - Computes, from the facts of M(npuops.fleet.npu_topology_facts), a CPU pool for every NPU of
    the host and its role split (two IRQ CPUs, main, ACL, release), before any worker starts.
  - C(policy=strict) (default) gives disjoint, NUMA-local pools over every NPU of the host and
    keeps the requested ones, so independent services never collide. C(policy=vllm_ascend)
    reproduces vllm-ascend's own in-process allocator exactly, defects included, to predict
    what its binding will do. See C(docs/policies.md).
  - On NVIDIA hosts it plans a pool per GPU from its NUMA node and pairs GPUs with RDMA NICs.
  - Pure computation, nothing on the host changes; C(changed) is always false.
options:
  topology:
    description: The facts C(ansible_facts['npu_topology']).
    type: dict
    required: true
  policy:
    description: The allocator.
    type: str
    choices: [strict, vllm_ascend]
    default: strict
  npus:
    description:
      - Logic NPU ids (GPU indices on NVIDIA hosts) to keep in the plan. The plan is always made
        over every NPU of the host.
      - Default with C(strict) every NPU; with C(vllm_ascend) the NPUs of O(instances), else the
        NPUs that run processes now (an audit), else every NPU.
    type: list
    elements: int
  instances:
    description:
      - vLLM instances, each C({name, npus}); the plan gets per instance the union of its NPUs'
        main CPUs and pools. An NPU may belong to one instance only.
    type: list
    elements: dict
  device_type:
    description: Overrides the detected device type (the mode follows from it).
    type: str
    choices: [A2, A3, A5, 310P, 910A, unknown]
  allowed_cpus:
    description: Cpulist overriding the facts' C(cpu.allowed), for example the cpuset of the container to launch.
    type: str
  reserved_cpus:
    description: Cpulist kept out of every pool, for example CPUs for the OS.
    type: str
  nics:
    description: NVIDIA hosts, RDMA NIC names the GPU pairing may use (default all).
    type: list
    elements: str
  nics_regex:
    description: NVIDIA hosts, a regex the RDMA NIC names must fully match; exclusive with O(nics).
    type: str
extends_documentation_fragment:
  - npuops.fleet.attributes
attributes:
  check_mode:
    support: full
    details: The module only computes; check mode returns the same plan.
  diff_mode:
    support: N/A
    details: Nothing on the host changes.
author:
  - npuops.fleet contributors (@npuops)
'''

EXAMPLES = r'''
- name: Gather the topology
  npuops.fleet.npu_topology_facts:

- name: Plan CPU pools for two vLLM instances (strict policy)
  npuops.fleet.npu_cpu_plan:
    topology: "{{ ansible_facts['npu_topology'] }}"
    instances:
      - {name: qwen-tp4-a, npus: [0, 1, 2, 3]}
      - {name: qwen-tp4-b, npus: [4, 5, 6, 7]}
    reserved_cpus: "0-1"
  register: cpu_plan

- name: Predict what vllm-ascend's in-process binding will do here (audit)
  npuops.fleet.npu_cpu_plan:
    topology: "{{ ansible_facts['npu_topology'] }}"
    policy: vllm_ascend
  register: predicted

- name: Show the CPU map
  ansible.builtin.debug:
    msg: "{{ cpu_plan.cpu_map.splitlines() }}"
'''

RETURN = r'''
plan:
  description: The plan; cpulists are strings. Schema in the collection's C(docs/dev/architecture.md).
  returned: success
  type: dict
  contains:
    policy: {description: strict or vllm_ascend., type: str}
    mode: {description: 'global_slice, topo_affinity, ascend950 or gpu_numa.', type: str}
    device_type: {description: The device type used., type: str}
    skipped: {description: True where binding does not apply (see reason)., type: bool}
    reason: {description: Why the plan is skipped., type: str}
    numa_nodes: {description: The host's NUMA nodes (id to cpulist)., type: dict}
    npus:
      description: Per logic NPU id, C(pool), C(pool_order) (positional order), C(numa_nodes),
        C(irq), C(main), C(acl), C(release); strict adds C(home_node) and C(locality).
      type: dict
      sample: {"0": {"pool": "144-167", "pool_order": "144-167", "numa_nodes": [3], "irq": "144-145",
               "main": "146-165", "acl": "166", "release": "167"}}
    instances: {description: 'Per instance its npus, main, pool, numa_nodes and env.', type: dict}
    gpus: {description: 'Per GPU pool, numa_node, nic and link (NVIDIA).', type: dict}
    env: {description: Node-wide launch environment (NVIDIA)., type: dict}
    uvb: {description: Ascend 950 CPUs for the UVB poll threads., type: str, returned: Ascend 950}
    log: {description: The plan log (vllm_ascend - the lines each worker would print)., type: list}
    warnings: {description: Things to look at., type: list}
cpu_map:
  description: ASCII CPU map of the plan (a row per NUMA node, a row per NPU with its roles).
  returned: success
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.npuops.fleet.plugins.module_utils.render import cpumap
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError


def main():
    module = AnsibleModule(
        argument_spec=dict(
            topology=dict(type="dict", required=True),
            policy=dict(type="str", default="strict", choices=["strict", "vllm_ascend"]),
            npus=dict(type="list", elements="int"),
            instances=dict(type="list", elements="dict"),
            device_type=dict(type="str", choices=list(plan_mod.DEVICE_TYPES)),
            allowed_cpus=dict(type="str"),
            reserved_cpus=dict(type="str"),
            nics=dict(type="list", elements="str"),
            nics_regex=dict(type="str"),
        ),
        mutually_exclusive=[("nics", "nics_regex")],
        supports_check_mode=True,
    )
    params = module.params
    try:
        plan = plan_mod.make_plan(
            params["topology"], policy=params["policy"], npus=params["npus"],
            instances=params["instances"], device_type=params["device_type"],
            allowed_cpus=params["allowed_cpus"], reserved_cpus=params["reserved_cpus"],
            nics=params["nics"] if params["nics"] is not None else params["nics_regex"])
        text = cpumap.render_text(plan, params["topology"])
    except NpuopsError as err:
        module.fail_json(msg="npu_cpu_plan: %s" % err)
    module.exit_json(changed=False, plan=plan, cpu_map=text)


if __name__ == "__main__":
    main()
