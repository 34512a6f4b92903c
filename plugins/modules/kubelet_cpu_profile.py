#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: kubelet_cpu_profile
short_description: Write the kubelet CPU, Topology and Memory Manager profile a Kubernetes node needs, from its CPU plan
version_added: 0.2.0
description:
  - Computes the kubelet profile from the host plan (M(npuops.fleet.npu_cpu_plan)) and the
    topology facts, and writes it to the kubelet's configuration.
  - C(cpuManagerPolicy=static), with C(full-pcpus-only) where SMT is on and C(strict-cpu-reservation)
    (KEP-4540, kubelet 1.32 and later) so the reserved CPUs serve system daemons and interrupts only.
  - C(reservedSystemCPUs) holds every planned IRQ CPU (each NPU's IRQ pair; on GPU hosts one
    core, or the plan's spare CPUs, on the node of each paired NIC), the plan's reserved CPUs and
    O(housekeeping_cpus), widened to whole cores.
  - C(topologyManagerPolicy=single-numa-node) when every device group (each planned instance's
    devices, else O(pod_devices) devices) fits one NUMA node, else C(restricted) with
    C(prefer-closest-numa-nodes); C(topologyManagerScope=pod).
  - With O(memory_manager), C(memoryManagerPolicy=Static) and C(reservedMemory) equal to
    kubeReserved + systemReserved + the hard eviction threshold, as the kubelet checks at start.
  - Where the kubelet runs with C(--config-dir), writes a drop-in (O(dropin_name)) there;
    otherwise merges the keys into the kubelet's config file, every other key and line kept.
  - It never restarts the kubelet. RV(reset_needed) says when the new policy needs the kubelet
    stopped, its state files removed and the node drained first (the C(k8s_node) role does that).
options:
  plan:
    description: The plan returned by M(npuops.fleet.npu_cpu_plan) (policy C(strict)).
    type: dict
    required: true
  topology:
    description: The facts C(ansible_facts['npu_topology']).
    type: dict
    required: true
  mode:
    description:
      - V(auto) writes a drop-in when the kubelet is started with C(--config-dir) (read from its
        systemd unit, unit drop-ins and C(kubeadm-flags.env)), else merges into its config file.
      - V(dropin) always writes the drop-in (warns when the kubelet is not started with C(--config-dir)).
      - V(merge) always edits the config file.
    type: str
    choices: [auto, dropin, merge]
    default: auto
  config_dir:
    description: The kubelet's drop-in directory; default the C(--config-dir) it runs with, else
      C(/etc/kubernetes/kubelet.conf.d).
    type: path
  dropin_name:
    description: File name of the drop-in (the kubelet reads C(*.conf) in name order; later ones win).
    type: str
    default: 50-npuops.conf
  config_file:
    description: The kubelet's config file; default its C(--config), else C(/var/lib/kubelet/config.yaml).
    type: path
  housekeeping_cpus:
    description: More CPUs to reserve for system daemons (a cpulist), beside the IRQ CPUs.
    type: str
  pod_devices:
    description: Devices a pod takes, when the plan has no instances; default all of the host's.
    type: int
  memory_manager:
    description: Also write the Memory Manager (C(Static)) and its C(reservedMemory).
    type: bool
    default: false
  kube_reserved_memory:
    description: C(kubeReserved.memory) to write (for example V(2Gi)); default the value in effect.
    type: str
  system_reserved_memory:
    description: C(systemReserved.memory) to write; default the value in effect.
    type: str
  eviction_hard_memory:
    description: C(evictionHard[memory.available]) to write; default the value in effect, else the kubelet's 100Mi.
    type: str
  memory_reserved_node:
    description: NUMA node that carries C(reservedMemory); default the lowest node with IRQ CPUs.
    type: int
  strict_cpu_reservation:
    description: Add C(strict-cpu-reservation); default when the kubelet version is 1.32 or later.
    type: bool
  kubelet_version:
    description: The kubelet's version (for example V(v1.35.0)); default what C(kubelet --version) prints.
    type: str
attributes:
  check_mode:
    support: full
    details: Computes the profile and RV(reset_needed) and reports C(changed) without writing.
  diff_mode:
    support: full
    details: The file's text before and after.
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.host_root
notes:
  - Idempotent; a second run reports C(changed=false).
  - Drop-ins need kubelet 1.30 or later started with C(--config-dir); the merge path rewrites only
    the profile's top-level keys and refuses a file it cannot read back identically.
seealso:
  - module: npuops.fleet.npu_cpu_plan
  - module: npuops.fleet.npu_irq_affinity
'''

EXAMPLES = r'''
- name: Plan the host
  npuops.fleet.npu_cpu_plan:
    topology: "{{ ansible_facts['npu_topology'] }}"
  register: cpu_plan

- name: Kubelet profile from the plan
  npuops.fleet.kubelet_cpu_profile:
    plan: "{{ cpu_plan.plan }}"
    topology: "{{ ansible_facts['npu_topology'] }}"
  register: kubelet_profile

- name: With the Memory Manager, 2Gi for Kubernetes daemons
  npuops.fleet.kubelet_cpu_profile:
    plan: "{{ cpu_plan.plan }}"
    topology: "{{ ansible_facts['npu_topology'] }}"
    memory_manager: true
    kube_reserved_memory: 2Gi
'''

RETURN = r'''
path:
  description: The file written (the drop-in or the config file).
  returned: always
  type: str
  sample: /etc/kubernetes/kubelet.conf.d/50-npuops.conf
mode:
  description: V(dropin) or V(merge), as chosen.
  returned: always
  type: str
profile:
  description:
    - The profile; C(config) holds the KubeletConfiguration keys written, with
      C(reserved_cpus), C(irq_cpus), C(irq_nodes), C(banned_cpus) (every allowed CPU but the
      reserved ones, for irqbalance), C(topology_reason) and C(exclusive_cpus_per_node).
  returned: always
  type: dict
  sample: {config: {cpuManagerPolicy: static, reservedSystemCPUs: "0-1,12-13", topologyManagerPolicy: restricted}}
content:
  description: The text the file holds after the run (what M(npuops.fleet.kubelet_state_reset) writes while the kubelet is stopped).
  returned: always
  type: str
reset_needed:
  description: True when the kubelet must be stopped, its state files removed and the node drained before it starts with the new configuration.
  returned: always
  type: bool
reset_reasons:
  description: Why (the kubelet's own refusals), one line each.
  returned: always
  type: list
  elements: str
kubelet:
  description: What was read of the kubelet - C(version), C(config_file), C(config_dir), C(flags_from), C(healthz_port).
  returned: always
  type: dict
'''

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.apply import kubelet_config, kubelet_reset
from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import LiveHostIO
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import check_components
from ansible_collections.npuops.fleet.plugins.module_utils.model import kubelet as kubelet_facts
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema
from ansible_collections.npuops.fleet.plugins.module_utils.parse import kubelet as parse
from ansible_collections.npuops.fleet.plugins.module_utils.plan.kubelet_profile import kubelet_profile

DEFAULT_DIR = "/etc/kubernetes/kubelet.conf.d"
MEMORY_OPTIONS = ("kube_reserved_memory", "system_reserved_memory", "eviction_hard_memory",
                  "memory_reserved_node")


def _target(params, state):
    kube = state["kubelet"]
    mode = params["mode"]
    warnings = []
    if mode == "auto":
        mode = "dropin" if kube["config_dir"] else "merge"
    elif mode == "dropin" and not kube["config_dir"] and not params["config_dir"]:
        warnings.append("the kubelet is not started with --config-dir (unit, drop-ins, "
                        "kubeadm-flags.env): it will not read %s until it is" % DEFAULT_DIR)
    name = params["dropin_name"]
    if "/" in name or not name.endswith(".conf") or name.startswith("."):
        raise NpuopsError("dropin_name %r: a file name ending in .conf (the kubelet reads only those)" % name)
    directory = params["config_dir"] or kube["config_dir"] or DEFAULT_DIR
    path = directory + "/" + name if mode == "dropin" else kube["config_file"]
    check_components(path)
    return mode, path, warnings


def prepare(module):
    params, host_root = module.params, module.params["host_root"]
    schema.check_topology(params["topology"])
    schema.check_plan(params["plan"])
    io = LiveHostIO(host_root)
    state = kubelet_facts.gather(io, params["config_file"], params["config_dir"],
                                 version=not params["kubelet_version"]) or {
        "kubelet": {"version": None, "config_file": params["config_file"] or kubelet_facts.DEFAULT_CONFIG,
                    "config_dir": params["config_dir"], "flags_from": [], "config": None,
                    "dropins": [], "effective": {}},
        "cpu_manager_state": None, "memory_manager_state": None, "errors": []}
    kube = state["kubelet"]
    before = kube["effective"]
    profile = kubelet_profile(
        params["topology"], params["plan"], housekeeping_cpus=params["housekeeping_cpus"],
        pod_devices=params["pod_devices"], memory_manager=params["memory_manager"], current=before,
        kubelet_version=params["kubelet_version"] or kube["version"],
        strict_cpu_reservation=params["strict_cpu_reservation"],
        memory=dict((k, params[k]) for k in MEMORY_OPTIONS))
    mode, path, warnings = _target(params, state)
    real_path = kubelet_reset.resolve_dirs(host_root, path)  # a symlinked /var/lib/kubelet followed
    current = fileops.read_host_text(host_root, real_path)
    if mode == "dropin":
        text = kubelet_config.render_dropin(profile["config"])
        others = [(d["name"], d["config"]) for d in kube["dropins"] if d["name"] != params["dropin_name"]]
        after = parse.merge_configs(kube["config"] or {}, others + [(params["dropin_name"], profile["config"])])
        for key, value in sorted(profile["config"].items()):
            if parse.merge_configs({key: after.get(key)}, [("x", {key: value})]) != {key: after.get(key)}:
                warnings.append("%s: a later drop-in overrides %s" % (path, key))
    else:
        if current is None:
            raise NpuopsError("%s: the kubelet's config file does not exist; give config_file or "
                              "use mode=dropin" % path)
        text = kubelet_config.merge_text(current, profile["config"], path)
        after = parse.merge_configs(parse.parse_config(text, path),
                                    [(d["name"], d["config"]) for d in kube["dropins"]])
    reasons = kubelet_config.reset_reasons(before, after, state["cpu_manager_state"],
                                           state["memory_manager_state"])
    result = fileops.ensure_file(host_root, real_path, text, mode=0o644 if current is None else None,
                                 check_mode=module.check_mode, create_parents=True)
    warnings.extend(profile["warnings"])
    warnings.extend("%s: %s" % (e["source"], e["msg"]) for e in state["errors"])
    return dict(changed=result["changed"], path=path, mode=mode, profile=profile, content=text,
                reset_needed=bool(reasons), reset_reasons=reasons,
                kubelet=dict([(k, kube[k]) for k in ("version", "config_file", "config_dir", "flags_from")]
                             + [("healthz_port", (before or {}).get("healthzPort") or 10248)]),
                diff=result["diff"], warnings=warnings)


def main():
    run(dict(
        plan=dict(type="dict", required=True),
        topology=dict(type="dict", required=True),
        mode=dict(type="str", default="auto", choices=["auto", "dropin", "merge"]),
        config_dir=dict(type="path"),
        dropin_name=dict(type="str", default="50-npuops.conf"),
        config_file=dict(type="path"),
        housekeeping_cpus=dict(type="str"),
        pod_devices=dict(type="int"),
        memory_manager=dict(type="bool", default=False),
        kube_reserved_memory=dict(type="str"),
        system_reserved_memory=dict(type="str"),
        eviction_hard_memory=dict(type="str"),
        memory_reserved_node=dict(type="int"),
        strict_cpu_reservation=dict(type="bool"),
        kubelet_version=dict(type="str"),
        host_root=dict(type="path", default="/"),
    ), prepare)


if __name__ == "__main__":
    main()
