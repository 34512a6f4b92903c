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
  - C(policy=strict) places the whole process tree - each instance gets a C(frontend) for its
    API server, EngineCore and tokenizer processes, on the nearest CPUs no worker holds (same
    package first, by the NUMA distance table), or carved from its workers' main CPUs where the
    workers hold every CPU (A3) - and accounts for every allowed CPU in C(cpu_budget).
  - On GPU hosts (NVIDIA, AMD Instinct) it plans a pool per GPU from its NUMA node and pairs GPUs
    with RDMA NICs. Every plan names the facts' C(vendor).
  - Pure computation, nothing on the host changes; C(changed) is always false.
options:
  topology:
    description: The facts C(ansible_facts['npu_topology']) of M(npuops.fleet.npu_topology_facts).
    type: dict
    required: true
  policy:
    description: The allocator.
    type: str
    choices: [strict, vllm_ascend]
    default: strict
  vllm_ascend_version:
    description:
      - C(policy=vllm_ascend), the vllm-ascend release to predict, for example V(0.23.0.post1) or
        V(0.26.0rc1); each release group binds differently (C(docs/policies.md)).
      - Default - the version in the facts (C(vllm_ascend.version), read from the host's Python
        environments and running workers), else the newest release the collection knows, with a
        warning. A build that is no release (C(.devN), C(+local)) or a version newer than the
        newest known is predicted with the rules of the newest release at or before it, with a
        warning; an older or unknown release, or a malformed string, fails with a message.
      - The warnings are in the plan's C(warnings) and C(vllm_ascend.warnings); about a version
        given here they are also task warnings.
    type: str
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
        main CPUs and pools, and an C(env) with C(ASCEND_RT_VISIBLE_DEVICES) (C(CUDA_VISIBLE_DEVICES)
        on NVIDIA hosts) naming its devices. An NPU may belong to one instance only.
      - An instance may carry its C(command); its C(--device-ids) (indices into C(npus), as vLLM
        reads them) puts the devices in rank order for the C(vllm_ascend) prediction, and an id
        the plan cannot follow (a UUID, out of range, twice) fails the task naming the flag.
    type: list
    elements: dict
  device_type:
    description: Overrides the detected device type (the mode follows from it).
    type: str
    choices: [A2, A3, A5, 310P, 910A, unknown]
  allowed_cpus:
    description:
      - Cpulist overriding the facts' C(cpu.allowed), for example the cpuset of the container to
        launch.
      - Without it, a plan that runs out of CPUs while the facts' C(cpu.allowed) is smaller than
        the host (facts gathered inside a job's cgroup) fails with a message that says so; gather
        the facts outside the cgroup, or pass O(allowed_cpus).
    type: str
  reserved_cpus:
    description: Cpulist kept out of every pool, for example CPUs for the OS or other services.
    type: str
  nics:
    description: NVIDIA hosts, RDMA NIC names the GPU pairing may use (default all).
    type: list
    elements: str
  nics_regex:
    description: NVIDIA hosts, a regex the RDMA NIC names must fully match; exclusive with O(nics).
    type: str
  frontend_cpus:
    description:
      - C(policy=strict) and NVIDIA hosts, the most CPUs (whole SMT cores) an instance's
        C(frontend) gets; what it leaves goes to C(cpu_budget.spare). V(0) plans no frontend.
      - Default - every free CPU of the nodes nearest to the instance's devices, or, where no
        CPU is free, 2 + (number of devices) cores carved from its workers' main CPUs.
    type: int
  show_warnings:
    description:
      - Also return each of the plan's C(warnings) as a task warning, shown during the play. The
        fleet_audit role sets V(false) - it reports them as findings.
    type: bool
    default: true
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
attributes:
  check_mode:
    support: full
    details: The module only computes; check mode returns the same plan.
  diff_mode:
    support: N/A
    details: Nothing on the host changes.
notes:
  - "A plan that cannot be made fails with a message naming the NPU and the reason, for example
    C(npu_cpu_plan: NPU 1: The number of CPUs is insufficient. Each NPU requires at least 5 CPUs.)"
  - Where binding does not apply the plan has C(skipped=true) and a C(reason).
  - Under C(policy=vllm_ascend) the two services of the RV(cpu_map) sample (NPU0 and NPU2 in a
    container with cpuset 144-191) get 144-155 and 156-167, and CPUs 168-191 stay unused; the
    strict plan gives them 144-167 and 168-191.
  - "Frontend and budget on the real A2 host (8 x 910B3, 8 NUMA nodes of 24 CPUs, NPUs on nodes
    6, 4, 0 and 2) with instances C(svc0) (NPUs 0-3) and C(svc1) (NPUs 4-7) - each NPU 12 CPUs
    on its node; C(svc0.frontend) C(120-143,168-191) (nodes 5 and 7, the sibling dies of its
    nodes 4 and 6), C(svc1.frontend) C(24-47,72-95); C(cpu_budget.spare) empty."
  - Where a home node lacks room the NPU borrows from the nearest node no NPU calls home, never
    from another package while its own has free CPUs; its C(numa_nodes) (the memory target)
    stay its home node, C(pool_nodes) say where its CPUs are.
seealso:
  - module: npuops.fleet.npu_topology_facts
  - module: npuops.fleet.npu_irq_affinity
  - module: npuops.fleet.vllm_launch_wrapper
'''

EXAMPLES = r'''
- name: Gather the topology
  npuops.fleet.npu_topology_facts:

- name: Plan CPU pools for two vLLM instances (strict policy), keep CPUs 0-1 for the OS
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

- name: What will vllm-ascend's own binding do in a container with cpuset 144-191 on NPU0?
  npuops.fleet.npu_cpu_plan:
    topology: "{{ ansible_facts['npu_topology'] }}"
    policy: vllm_ascend
    allowed_cpus: "144-191"
    npus: [0]
  register: predicted_container

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
      description:
        - Per logic NPU id, C(pool), C(pool_order) (positional order), C(numa_nodes),
          C(irq), C(main), C(acl), C(release); strict adds C(home_node), C(locality) and
          C(pool_nodes) (the nodes of the pool's CPUs; C(numa_nodes), the memory target, is the
          home node).
        - The sample is NPU0 of the RV(cpu_map) sample.
      type: dict
      sample: {"0": {"pool": "144-167", "pool_order": "144-167", "numa_nodes": [3], "irq": "144-145",
               "main": "146-165", "acl": "166", "release": "167", "home_node": 3,
               "locality": "affinity", "pool_nodes": [3]}}
    instances:
      description:
        - Per instance its npus, main, pool, numa_nodes and env; C(policy=strict) and NVIDIA
          hosts add C(frontend) (cpulist for the API server, EngineCore and tokenizers),
          C(frontend_nodes) and C(frontend_source) (C(free), C(carved) from the workers' main
          CPUs, or C(none)).
      type: dict
      sample: {"svc0": {"npus": [0, 1, 2, 3], "main": "98-105,110-117,146-153,158-165",
               "pool": "96-119,144-167", "numa_nodes": [4, 6],
               "env": {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3"}, "frontend": "120-143,168-191",
               "frontend_nodes": [5, 7], "frontend_source": "free"}}
    cpu_budget:
      description:
        - C(policy=strict) and NVIDIA hosts, cpulists that together are exactly the allowed
          CPUs - C(workers) (every device's pool, the Ascend 950 UVB set), C(frontend),
          C(reserved) (O(reserved_cpus) and isolated / nohz_full CPUs no worker holds) and
          C(spare) (left to the OS and NIC IRQs).
      type: dict
      returned: policy strict, NVIDIA hosts
      sample: {"workers": "0-23,48-71,96-119,144-167", "frontend": "24-47,72-95,120-143,168-191",
               "reserved": "", "spare": ""}
    gpus: {description: 'Per GPU pool, numa_node, nic and link (NVIDIA).', type: dict}
    env: {description: Node-wide launch environment (NVIDIA)., type: dict}
    uvb: {description: Ascend 950 CPUs for the UVB poll threads., type: str, returned: Ascend 950}
    log: {description: The plan log (vllm_ascend - the lines each worker would print)., type: list}
    vllm_ascend:
      description:
        - "C(policy=vllm_ascend), the prediction: C(version); C(source) (V(option), C(facts) and
          where the facts read it, or V(default)); C(group) (the release group); C(warnings)
          (about the version); C(migration) (V(thread), V(process), V(process_or_off)); C(ranks),
          one per local rank of each instance, C({rank, npu, outcome, reason, instance,
          own_npu}) - C(outcome) V(bound), V(skipped) or V(error), C(reason) the release's own
          message or stage, C(own_npu) the rank's device."
      type: dict
      returned: policy vllm_ascend
      sample: {"version": "0.26.0rc1", "source": "option", "group": "0.26.0rc1",
               "migration": "process", "ranks": [{"rank": 0, "npu": 8, "outcome": "bound",
               "reason": null, "instance": "svc1", "own_npu": 8}]}
    warnings: {description: Things to look at., type: list}
cpu_map:
  description:
    - ASCII CPU map of the plan (a row per NUMA node, a row per NPU with its roles; strict and
      NVIDIA plans also mark frontend, reserved and spare CPUs and add a row per instance
      frontend).
    - The sample is the strict plan of an A2 host (Kunpeng 920, 4 x 48 CPUs, 8 x 910B) in a
      container with cpuset 144-191, NPU0 and NPU2 (affinity 144-167) as two independent services.
  returned: success
  type: str
  sample: |-
    CPU map: policy strict, mode topo_affinity
    I=IRQ M=main A=ACL R=release W=950 worker U=UVB G=GPU pool F=frontend r=reserved !=in two pools .=spare x=not allowed
    node 0   0-47     xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
    node 1   48-95    xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
    node 2   96-143   xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
    node 3   144-191  IIMMMMMMMMMMMMMMMMMMMMARIIMMMMMMMMMMMMMMMMMMMMAR
    NPU0     144-167  node 3   IIMMMMMMMMMMMMMMMMMMMMAR
    NPU2     168-191  node 3   IIMMMMMMMMMMMMMMMMMMMMAR
'''

from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.parse.device_type import TYPES as DEVICE_TYPES
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.module_utils.render import cpumap


def plan_host(module):
    params = module.params
    # full_check: the whole facts, as every module takes them (the CPU map reads more than the
    # planners, whose fields alone make_plan checks by default)
    plan = dispatch.make_plan(
        params["topology"], policy=params["policy"], npus=params["npus"],
        instances=params["instances"], device_type=params["device_type"],
        allowed_cpus=params["allowed_cpus"], reserved_cpus=params["reserved_cpus"],
        nics=params["nics"] if params["nics"] is not None else params["nics_regex"],
        frontend_cpus=params["frontend_cpus"], full_check=True,
        vllm_ascend_version=params.get("vllm_ascend_version"))
    # each plan warning also shown in the play, not only kept in the plan and the audit - but the
    # release predicted by default or from the facts is said only in the plan (and the audit)
    block = plan.get("vllm_ascend") or {}
    asked = block.get("source") == "option"
    quiet = () if asked else set(block.get("warnings") or [])
    texts = [text for text in plan.get("warnings") or [] if text not in quiet]
    texts += [text for text in block.get("warnings") or [] if asked and text not in texts]
    return dict(changed=False, plan=plan, cpu_map=cpumap.render_text(plan, params["topology"]),
                warnings=["npu_cpu_plan: %s" % text for text in texts if params["show_warnings"]])


def main():
    run(dict(
        topology=dict(type="dict", required=True),
        policy=dict(type="str", default="strict", choices=list(dispatch.POLICIES)),
        npus=dict(type="list", elements="int"),
        instances=dict(type="list", elements="dict"),
        device_type=dict(type="str", choices=list(DEVICE_TYPES)),
        allowed_cpus=dict(type="str"),
        reserved_cpus=dict(type="str"),
        nics=dict(type="list", elements="str"),
        nics_regex=dict(type="str"),
        frontend_cpus=dict(type="int"),
        show_warnings=dict(type="bool", default=True),
        vllm_ascend_version=dict(type="str"),
    ), plan_host, prefix="npu_cpu_plan: ", mutually_exclusive=[("nics", "nics_regex")])


if __name__ == "__main__":
    main()
