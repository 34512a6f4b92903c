#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubelet_cpu_profile
short_description: Write the kubelet CPU, Topology and Memory Manager profile a Kubernetes node needs, from its CPU plan
version_added: 0.2.0
description:
  - Computes the kubelet profile from the host plan (M(npuops.fleet.npu_cpu_plan)) and the
    topology facts, and writes it to the kubelet's configuration.
  - C(cpuManagerPolicy=static), with C(full-pcpus-only) where SMT is on and C(strict-cpu-reservation)
    (KEP-4540) so the reserved CPUs serve system daemons and interrupts only.
  - Writes only what the node's kubelet version accepts (a table of every option's version,
    maturity and feature gate, 1.26 to 1.36); an option behind a gate that is off by default is
    left out with a warning unless O(alpha_gates) is set.
  - Before writing, runs the checks the kubelet runs at start on the configuration it would read
    (base file and every drop-in), and fails naming the key when it would refuse it - reserved
    CPUs beside a reserved cgroup, C(reservedMemory) not the kubelet's own sum, options it does
    not know or refuses together, more NUMA nodes than the Topology Manager allows.
  - C(reservedSystemCPUs) holds every planned IRQ CPU (each NPU's IRQ pair; on GPU hosts one
    core, or the plan's spare CPUs, on the node of each paired NIC), the plan's reserved CPUs and
    O(housekeeping_cpus), widened to whole cores.
  - C(topologyManagerPolicy) the strictest of C(single-numa-node), C(restricted) and
    C(best-effort) under which the kubelet (its own hint merge, of its version) admits every pod
    the plan describes (each planned instance's devices and CPUs, else O(pod_devices) devices),
    found by running the kubelet what-if for each; C(prefer-closest-numa-nodes) with
    C(restricted); C(topologyManagerScope=pod).
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
    description:
      - Add C(strict-cpu-reservation). Default - where the kubelet accepts it without a gate
        that is off by default (beta from 1.33, GA 1.35), or on 1.32 with O(alpha_gates).
      - V(true) on a kubelet that does not take it fails, naming the option.
    type: bool
  kubelet_version:
    description:
      - The kubelet's version (for example V(v1.35.0)); default what C(kubelet --version) prints.
      - Unknown - only what every kubelet from 1.26 accepts is written, with a warning.
    type: str
  alpha_gates:
    description:
      - Where an option the profile wants is alpha on this kubelet (C(strict-cpu-reservation) on
        1.32, C(prefer-closest-numa-nodes) on 1.26-1.27), turn on the feature gate it needs in
        C(featureGates) rather than leave the option out with a warning.
      - A gate the node's configuration sets to false is never turned on.
    type: bool
    default: false
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
"""

EXAMPLES = r"""
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
"""

RETURN = r"""
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
      reserved ones, for irqbalance), C(topology_reason) (why this topology policy, and the pod
      a stricter one would refuse), C(topology_policy_whatif) (each pod shape's what-if under
      each candidate policy) and C(exclusive_cpus_per_node).
  returned: always
  type: dict
  sample: {config: {cpuManagerPolicy: static, reservedSystemCPUs: "0-1,12-13", topologyManagerPolicy: restricted}}
content:
  description: The text the file holds after the run (what M(npuops.fleet.kubelet_state_reset) writes while the kubelet is stopped).
  returned: always
  type: str
reset_needed:
  description:
    - True when the kubelet must be stopped, its state files removed and the node drained before it starts with the new configuration.
    - Decided as the kubelet decides it - the checkpoint's policy, the reserved CPUs in C(defaultCpuSet) (none of them under
      C(strict-cpu-reservation)), every CPU accounted for, the Memory Manager's reservation per NUMA node and memory type.
      A node already in the target state needs none.
    - A state file that is there but cannot be read (corrupt, oversized, an old format, a symlink, a hard link, a directory)
      fails the task; it is never taken as absent.
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
"""

import contextlib

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import LiveHostIO
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import check_components
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.apply import config as kubelet_config
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import facts as kubelet_facts
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import options as ko
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as parse
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import state as kubelet_state
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.checks import start_errors
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules, schema

DEFAULT_DIR = "/etc/kubernetes/kubelet.conf.d"
MEMORY_OPTIONS = ("kube_reserved_memory", "system_reserved_memory", "eviction_hard_memory", "memory_reserved_node")


def _target(params, state, io):
    kube = state["kubelet"]
    mode = params["mode"]
    warnings = []
    if mode == "auto":
        mode = "dropin" if kube["config_dir"] else "merge"
    elif mode == "dropin" and not kube["config_dir"] and not params["config_dir"]:
        warnings.append(
            "the kubelet is not started with --config-dir (unit, drop-ins, "
            "kubeadm-flags.env): it will not read %s until it is" % DEFAULT_DIR
        )
    name = params["dropin_name"]
    if "/" in name or not name.endswith(".conf") or name.startswith("."):
        raise NpuopsError("dropin_name %r: a file name ending in .conf (the kubelet reads only those)" % name)
    directory = params["config_dir"] or kube["config_dir"] or DEFAULT_DIR
    path = directory + "/" + name if mode == "dropin" else kube["config_file"]
    check_components(path)
    parent, base = path.rsplit("/", 1)
    real = io.realpath(parent or "/")
    if real and real != parent:
        # a symlinked directory (/var/lib/kubelet on a data disk): the file is written where
        # the link leads, resolved inside host_root, never through the link
        warnings.append("%s is a symlink to %s: writing %s/%s" % (parent, real, real.rstrip("/"), base))
        path = real.rstrip("/") + "/" + base
        check_components(path)
    return mode, path, warnings


# the role variable behind each key the start checks name
ROLE_VARIABLES = {
    "reservedSystemCPUs": "npuops_k8s_housekeeping_cpus",
    "reservedMemory": "npuops_k8s_kube_reserved_memory / npuops_k8s_system_reserved_memory / "
    "npuops_k8s_eviction_hard_memory",
    "cpuManagerPolicyOptions": "npuops_k8s_alpha_gates / npuops_k8s_strict_cpu_reservation",
    "topologyManagerPolicyOptions": "npuops_k8s_alpha_gates",
}


def _role_variable(key):
    top = key.split(".", 1)[0]
    return ROLE_VARIABLES.get(top, "the node's own kubelet configuration")


def _start_check(after, version, topology, path):
    node_cpus = rules.node_cpus(topology)
    errors = start_errors(after, version, len(node_cpus), sorted(node_cpus))
    if errors:
        raise NpuopsError(
            "%s: nothing written: the kubelet %s would refuse to start with the "
            "configuration this run would leave: %s"
            % (
                path,
                ko.show(version),
                "; ".join("%s: %s (%s)" % (key, msg, _role_variable(key)) for key, msg in errors),
            )
        )


def _all_cpus(topology):
    cpu = topology.get("cpu") or {}
    text = cpu.get("online") or cpu.get("allowed")
    return cpulist.parse(str(text), "topology cpu.online") if text else None


def _hard_links(io, host_root, state):
    """A state file with more than one name is refused too: moving it aside (the reset) would
    leave its content where the other name is (read through directory fds, at the path the
    symlinks inside host_root lead to)."""
    for key, path in (
        ("cpu_manager_state", kubelet_facts.CPU_STATE),
        ("memory_manager_state", kubelet_facts.MEMORY_STATE),
    ):
        if state.get(key) is None:
            continue
        st = fileops.stat_host(host_root, io.realpath(path) or path)
        if st is not None and st.st_nlink > 1:
            state.setdefault("unreadable_state", {})[path] = (
                "has %d hard links; the kubelet's state files have one name" % st.st_nlink
            )


def prepare(module):
    params, host_root = module.params, module.params["host_root"]
    schema.check_topology(params["topology"])
    schema.check_plan(params["plan"])
    io = LiveHostIO(host_root)
    state = kubelet_facts.gather(
        io, params["config_file"], params["config_dir"], version=not params["kubelet_version"]
    ) or {
        "kubelet": {
            "version": None,
            "config_file": params["config_file"] or kubelet_facts.DEFAULT_CONFIG,
            "config_dir": params["config_dir"],
            "flags_from": [],
            "config": None,
            "dropins": [],
            "effective": {},
        },
        "cpu_manager_state": None,
        "memory_manager_state": None,
        "errors": [],
        "unreadable_state": {},
    }
    kube = state["kubelet"]
    _hard_links(io, host_root, state)
    if state.get("unreadable_state"):
        raise NpuopsError(
            "nothing written: the kubelet's state cannot be judged, so neither can "
            "a reset: %s. Look at the file (the kubelet itself may refuse it), move "
            "it aside with the kubelet stopped, and run again"
            % "; ".join("%s %s" % (p, why) for p, why in sorted(state["unreadable_state"].items()))
        )
    before = kube["effective"]
    mode, path, warnings = _target(params, state, io)
    others = [(d["name"], d["config"]) for d in kube["dropins"] if d["name"] != params["dropin_name"]]
    # the profile reads the node's configuration without its own drop-in: what it wrote last
    # time is not taken for the node's own (a gate it turned on, a reservation it set)
    current = parse.merge_configs(kube["config"] or {}, others) if mode == "dropin" else before
    version_text = params["kubelet_version"] or kube["version"]
    profile = kubelet_profile(
        params["topology"],
        params["plan"],
        housekeeping_cpus=params["housekeeping_cpus"],
        pod_devices=params["pod_devices"],
        memory_manager=params["memory_manager"],
        current=current,
        kubelet_version=version_text,
        strict_cpu_reservation=params["strict_cpu_reservation"],
        memory=dict((k, params[k]) for k in MEMORY_OPTIONS),
        alpha_gates=params["alpha_gates"],
    )
    version = ko.parse_version(profile["kubelet_version"]) if profile["kubelet_version"] else None
    # merge mode reads, merges and rewrites the kubelet's own file: under the one lock of a
    # shared file (apply/fileops.exclusive), so two runs cannot lose each other's keys
    locked = mode == "merge" and not module.check_mode and io.exists(path)  # else refused below
    with fileops.exclusive(host_root, path) if locked else contextlib.nullcontext():
        existing = fileops.read_host_text(host_root, path)
        if mode == "dropin":
            text = kubelet_config.render_dropin(profile["config"])
            after = parse.merge_configs(kube["config"] or {}, others + [(params["dropin_name"], profile["config"])])
            for key, value in sorted(profile["config"].items()):
                if parse.merge_configs({key: after.get(key)}, [("x", {key: value})]) != {key: after.get(key)}:
                    warnings.append("%s: a later drop-in overrides %s" % (path, key))
        else:
            if existing is None:
                raise NpuopsError(
                    "%s: the kubelet's config file does not exist; give config_file or use mode=dropin" % path
                )
            text = kubelet_config.merge_text(existing, profile["config"], path)
            after = parse.merge_configs(
                parse.parse_config(text, path), [(d["name"], d["config"]) for d in kube["dropins"]]
            )
        _start_check(after, version, params["topology"], path)
        reasons = kubelet_state.reset_reasons(
            after, state["cpu_manager_state"], state["memory_manager_state"], _all_cpus(params["topology"]), version
        )
        result = fileops.ensure_file(
            host_root,
            path,
            text,
            mode=0o644 if existing is None else None,
            check_mode=module.check_mode,
            create_parents=True,
        )
    warnings.extend(profile["warnings"])
    warnings.extend("%s: %s" % (e["source"], e["msg"]) for e in state["errors"])
    return dict(
        changed=result["changed"],
        path=path,
        mode=mode,
        profile=profile,
        content=text,
        reset_needed=bool(reasons),
        reset_reasons=reasons,
        kubelet=dict(
            [(k, kube[k]) for k in ("version", "config_file", "config_dir", "flags_from")]
            + [("healthz_port", (before or {}).get("healthzPort") or 10248)]
        ),
        diff=result["diff"],
        warnings=warnings,
    )


def main():
    run(
        dict(
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
            alpha_gates=dict(type="bool", default=False),
            host_root=dict(type="path", default="/"),
        ),
        prepare,
    )


if __name__ == "__main__":
    main()
