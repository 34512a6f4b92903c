#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_launch_wrapper
short_description: Install a vLLM launch wrapper, its plan, the post-start binder and a systemd unit
version_added: 0.1.0
description:
  - Installs everything one vLLM instance needs to run on its planned CPUs. Writes, atomically and
    only when the content or mode differs, C(<dest>/<name>-launch) (bash wrapper, 0755),
    C(<dest>/<name>.plan.json) (the instance's part of the plan and an C(npuops_instance) block, 0644),
    C(<dest>/<name>-bind) (the post-start binder, 0755, O(binding=host) only) and
    C(<unit_dir>/vllm-<name>.service) (0644, O(systemd=true)).
  - "The wrapper exports C(ASCEND_RT_VISIBLE_DEVICES) (C(CUDA_VISIBLE_DEVICES) on GPU hosts), the
    plan's launch env and O(env), then with O(binding=host) runs
    C(exec taskset -c <main CPUs> <command>) with every argument shell-quoted, after merging
    C({\"enable_cpu_binding\": false}) into the command's C(--additional-config) JSON on Ascend."
  - The bind unit C(vllm-<name>-bind.service), started by the service, runs the binder, which
    waits for the workers and pins their threads (ACL and release threads to their CPUs) and
    memory (C(migratepages)); it is not in the service's start path.
  - Nothing is written when any path is unsafe (a name or directory with C(..), a path through a
    symlink) or any input is invalid (an unknown NPU, an environment name that is not a shell
    identifier, invalid C(--additional-config) JSON, a NUL byte in an argument).
    Run C(systemctl daemon-reload) when RV(unit_changed) is true (the role's handler does).
options:
  name:
    description:
      - Instance name, used in file and unit names (C(vllm-<name>.service)). 1 to 100 characters of
        C([A-Za-z0-9_.-]), not starting with C(.) or C(-).
      - No C(@) - systemd would read C(vllm-<name>@.service) as a template unit.
    type: str
    required: true
  plan:
    description: The C(plan) returned by M(npuops.fleet.npu_cpu_plan).
    type: dict
    required: true
  npus:
    description:
      - Devices (NPU logic ids, or GPU indexes) of this instance. Default the plan
        instance's C(npus) (C(plan.instances[name])), else every device of the plan.
      - When the plan has an instance of this name, its CPUs (C(main), C(pool), C(frontend)) are
        the instance's, as planned, and the task fails when O(npus) names other devices.
    type: list
    elements: int
  command:
    description: The vLLM command as an argument list (argv), program first (C([vllm, serve, ...])); the program is found on PATH.
    type: list
    elements: str
    required: true
  env:
    description:
      - Extra environment for vLLM; overrides the plan's launch env (C(plan.env),
        C(plan.instances[name].env)).
      - C(ASCEND_RT_VISIBLE_DEVICES) (C(CUDA_VISIBLE_DEVICES)) may only repeat the instance's
        devices; the wrapper exports it itself and fails on any other value.
      - Names are shell identifiers other than the variables bash will not pass on as exported -
        readonly ones (C(SHELLOPTS), C(BASHOPTS), C(UID), C(EUID), C(PPID), C(BASH_VERSINFO)) and
        special ones it makes up or resets (C(RANDOM), C(SECONDS), C(LINENO), C(GROUPS),
        C(FUNCNAME), C(SHLVL), C(_), C(BASH_ARGV), ...); those fail the task.
    type: dict
    default: {}
  dest:
    description:
      - Directory of the wrapper, plan JSON and binder (created when missing).
      - Absolute, of C([A-Za-z0-9_./+,:=@~-]) only (no blank, quote, backslash, C($), C(%) or
        C(;)) - the unit file names these paths, and systemd cannot carry the others in
        C(ExecStart=).
    type: path
    default: /usr/local/lib/npuops
  binding:
    description:
      - "V(host) pins CPUs from the host and turns vllm-ascend's in-process binding off. The
        wrapper starts vLLM under C(taskset -c <the instance's frontend and main CPUs>), and the
        binder then moves the frontend processes to the frontend and each worker to its device's
        CPUs. On Ascend it merges
        C({\"enable_cpu_binding\": false}) into the command's C(--additional-config) JSON (a JSON
        merge; C(--additional-config=JSON) and C(--additional-config JSON) are both handled, the
        user's other keys are kept, the option is appended when absent; invalid JSON fails the
        task). vllm-ascend's in-process binding would otherwise re-pin the workers to its own pools,
        which differ from ours (see C(docs/policies.md)). The unit confines the whole tree with
        C(AllowedCPUs=) (cgroup v2) and C(CPUAffinity=) to the frontend and the pools, and pulls
        in the binder's own unit. On cgroup v1, hybrid, or v2 without the C(cpuset) controller
        systemd ignores C(AllowedCPUs=) silently; the module then warns that the tree is held
        only by C(CPUAffinity=) at start and by the binder and reconciler."
      - V(vllm) leaves vllm-ascend's own binding on and only prepares the host (no taskset,
        no binder, no C(CPUAffinity=)). On GPU hosts it passes the plan to vLLM's own NUMA binding
        instead - C(--numa-bind --numa-bind-nodes <node per GPU> --numa-bind-cpus <pool per GPU>). vllm-ascend computes its pools from the process's
        C(Cpus_allowed_list); narrowing it would shift the pools it picks (global slicing on A3
        divides the allowed CPUs by the number of NPUs on the host), so the unit leaves the process
        the whole host.
    type: str
    choices: [host, vllm]
    default: host
  systemd:
    description: Write the systemd unit.
    type: bool
    default: true
  unit_dir:
    description: Directory of the systemd unit (the characters of O(dest)).
    type: path
    default: /etc/systemd/system
  bind_timeout:
    description: Seconds the binder waits for every device to show its worker (1 to 604800).
    type: int
    default: 900
  ready_url:
    description:
      - Health URL the binder polls before it moves memory (it answers 200 once the model is
        loaded). Default C(http://<host>:<port>/health) from the command's C(--host)/C(--port)
        (vLLM's default port 8000); with C(--uds) there is none and memory moves as soon as the
        workers are bound.
    type: str
  migrate:
    description:
      - Move each worker's memory to its NUMA node once the server is ready (C(migratepages),
        package C(numactl)). Only the pages the worker maps alone move - see the notes.
    type: bool
    default: true
  reconcile:
    description:
      - Install the reconciler (C(vllm-<name>-reconcile.service) and C(.timer), O(binding=host)
        only) - the binder once every O(reconcile_interval), pinning back threads and IRQs that
        drifted and writing node_exporter metrics to O(metrics_dir). It never restarts anything.
    type: bool
    default: true
  reconcile_interval:
    description: How often the reconciler runs, a systemd time span (C(90s), C(5min), C(1h)).
    type: str
    default: 5min
  metrics_dir:
    description:
      - node_exporter's textfile directory, where the reconciler writes C(npuops_<name>.prom).
        Empty writes no metrics. Created (mode 0755) when missing and the reconciler is installed;
        an existing directory is left as it is.
    type: path
    default: /var/lib/prometheus/node-exporter
  irq_state:
    description: IRQ state file of M(npuops.fleet.npu_irq_affinity), read by the reconciler.
    type: path
    default: /var/lib/npuops/irq-state.json
  vllm_version:
    description:
      - The instance's vLLM version (C(0.34.0)). Default read, never imported, from the environment
        the command names (C(/opt/venv/bin/vllm)), then the host's site-packages. It picks the
        flags (C(docs/vllm-versions.md)); unknown, only flags safe on every vLLM, with a warning.
    type: str
  allow_foreign_plan:
    description:
      - Accept a plan made for another host (its C(hostname) differs from this host's). Off, such
        a plan fails the task - the CPUs of one host mean nothing on another. Set it when the
        mismatch is intended, e.g. a sandbox root replaying a recorded host.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details: Computes the same C(changed) and writes nothing.
  diff_mode:
    support: full
    details: Returns C(diff), one entry per changed file.
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.host_root
notes:
  - "The wrapper exports C(ASCEND_RT_VISIBLE_DEVICES) (C(CUDA_VISIBLE_DEVICES)) from the instance's
    devices; it is the one place the variable is written. A value in O(env), or in the plan's
    instance env (plans of earlier releases carry it), is accepted when it names exactly those
    devices (same ids, same order) and exported once. Any other value fails the task naming
    its source, for example C(env: ASCEND_RT_VISIBLE_DEVICES=3 contradicts the instance's devices)."
  - "The plan JSON (C(<dest>/<name>.plan.json), schema 2) holds the instance's part of the plan
    that the binder and M(npuops.fleet.vllm_binding_facts) read; its fields are documented in
    C(docs/plan-json.md)."
  - On GPU hosts the wrapper exports C(CUDA_VISIBLE_DEVICES) and the plan's NCCL variables
    (C(NCCL_IB_HCA) for the paired NICs) instead, and C(--additional-config) is left untouched.
  - "Tools (C(taskset), the vLLM program) are called by name from PATH. Every argument is
    C(shlex.quote)d, environment values single-quoted: quotes, substitutions, newlines and globs
    reach vLLM verbatim and run nothing. The script passes C(bash -n) and C(shellcheck)."
  - "The binder C(<dest>/<name>-bind) is the collection's C(plugins/module_utils/standalone/)
    package itself, written as one Python zipapp behind a C(#!<python>) line (byte for byte the
    same on every run). Standard library only, Python 3.7+; it reads C(/proc) directly."
  - "Units (O(binding=host)): C(vllm-<name>.service) runs the wrapper and wants
    C(vllm-<name>-bind.service) (the binder, bound to it: never in the service's start path) and
    C(vllm-<name>-reconcile.timer) (the binder C(--once) every O(reconcile_interval)). A run that
    finds the instance stopped or its workers not spawned ends well (C(SuccessExitStatus=2 3))
    and says so in the metrics (C(npuops_instance_up)); it never fails the unit."
  - "A crash loop ends: 5 starts in 30 minutes (C(StartLimitBurst=), C(RestartSec=10)), then
    C(failed) until C(systemctl reset-failed); every start counts, the role's restarts too."
  - "The binder finds the workers under the service's main process by their place in the tree
    (the children of its EngineCores, by their ranks, or spawn order where the plan's C(worker_start)
    says so), else by the C(npu-smi) (C(nvidia-smi)) process table, within O(bind_timeout); every
    other process of the tree goes to the frontend CPUs. With C(--device-ids) in the command the instance's devices are taken in
    that order (rank r of DP engine d on the C(d*ws+r)-th). Exit codes: 0 bound, 1 error, 2 a
    device shows no worker, 3 the instance does not run; see C(docs/drift.md)."
  - "vLLM 0.34 binds NUMA by itself (C(numactl)) when started on every CPU; with O(binding=host)
    a vLLM that has C(--numa-bind) (0.20+) gets C(--no-numa-bind); see C(docs/vllm-versions.md)."
  - "Memory moves once the server answers O(ready_url), with each worker's first binding only:
    C(migratepages) run with C(CAP_SYS_NICE) dropped and the worker's uid, so the kernel moves only
    the pages the worker maps alone - not vLLM's shared-memory rings or mapped model files, which
    root's C(migratepages) would move to whichever worker is bound last."
  - "See C(docs/drift.md) for the reconciler, its metrics and M(npuops.fleet.vllm_binding_facts)."
seealso:
  - module: npuops.fleet.npu_cpu_plan
"""

EXAMPLES = r"""
- name: Gather the topology
  npuops.fleet.npu_topology_facts:

- name: Plan the CPU pools of the instances
  npuops.fleet.npu_cpu_plan:
    topology: "{{ ansible_facts['npu_topology'] }}"
    instances:
      - {name: qwen3-8b, npus: [0, 1]}
      - {name: qwen3-8b-b, npus: [2, 3]}
  register: npu_plan

- name: Launch files for a TP2 instance on NPUs 0 and 1
  npuops.fleet.vllm_launch_wrapper:
    name: qwen3-8b
    plan: "{{ npu_plan.plan }}"
    npus: [0, 1]
    command: [vllm, serve, /models/Qwen3-8B, --tensor-parallel-size, "2", --port, "8000"]
    env:
      HCCL_OP_EXPANSION_MODE: AIV
  register: launch

- name: Start it (the unit pulls in its binder; the timer runs the reconciler)
  ansible.builtin.systemd_service:
    name: "{{ item }}"
    state: "{{ 'started' if item != launch.bind_unit else omit }}"
    enabled: true
    daemon_reload: "{{ launch.unit_changed }}"
  loop: "{{ launch.units }}"

- name: Launch files for Qwen3-8B on NPUs 2 and 3, arguments with quotes and JSON
  npuops.fleet.vllm_launch_wrapper:
    name: qwen3-8b-b
    plan: "{{ npu_plan.plan }}"
    npus: [2, 3]
    command:
      - vllm
      - serve
      - /models/Qwen3-8B
      - --tensor-parallel-size
      - "2"
      - --port
      - "8000"
      - --additional-config
      - '{"torchair_graph_config": {"enabled": true}}'
      - --served-model-name
      - "qwen's $(model)"
    env:
      HCCL_OP_EXPANSION_MODE: AIV
  register: launch_b

# On the recorded Atlas 800 A2 (tests/snapshots/a2-910b3x8: NPU2 and NPU3 on NUMA node 4,
# CPUs 96-119), the last task writes this wrapper (/usr/local/lib/npuops/qwen3-8b-b-launch; its
# exec line is one line, wrapped here). The taskset covers the workers' main CPUs and the
# instance's frontend (120-143); the binder then pins each thread to its own role CPUs:
#
#   #!/usr/bin/env bash
#   # vLLM instance qwen3-8b-b, generated by npuops.fleet vllm_launch_wrapper; do not edit.
#   # devices: 2,3  main CPUs: 98-105,110-117  binding: host
#   # vLLM: version unknown
#   # shellcheck disable=SC1003,SC2016
#   set -euo pipefail
#
#   export ASCEND_RT_VISIBLE_DEVICES=2,3
#   export HCCL_OP_EXPANSION_MODE='AIV'
#
#   exec taskset -c 98-105,110-117,120-143 vllm serve /models/Qwen3-8B --tensor-parallel-size 2 \
#     --port 8000 \
#     --additional-config '{"torchair_graph_config":{"enabled":true},"enable_cpu_binding":false}' \
#     --served-model-name 'qwen'"'"'s $(model)'
#
# and these units (/etc/systemd/system/); for the first instance (qwen3-8b, NPUs 0 and 1):
#
#   vllm-qwen3-8b.service:          ExecStart=/usr/local/lib/npuops/qwen3-8b-launch
#                                   Wants=network-online.target vllm-qwen3-8b-bind.service vllm-qwen3-8b-reconcile.timer
#                                   AllowedCPUs=<its pools and frontend>  CPUAffinity=<the same>
#   vllm-qwen3-8b-bind.service:     BindsTo=/After=vllm-qwen3-8b.service, WantedBy=vllm-qwen3-8b.service
#                                   ExecStart=/usr/local/lib/npuops/qwen3-8b-bind --plan ... --instance qwen3-8b
#                                     --unit vllm-qwen3-8b.service --irq-state /var/lib/npuops/irq-state.json
#                                     --timeout 900 --follow 600 --ready-url http://127.0.0.1:8000/health
#   vllm-qwen3-8b-reconcile.timer:  OnActiveSec=5min OnUnitActiveSec=5min -> vllm-qwen3-8b-reconcile.service
#                                   (the binder with --once --no-migrate --metrics-dir /var/lib/prometheus/node-exporter)
"""

RETURN = r"""
files:
  description: Host paths written or kept, with whether each changed.
  returned: always
  type: list
  elements: dict
  sample: [{path: /usr/local/lib/npuops/qwen3-8b-launch, changed: true}]
wrapper:
  description: Path of the launch wrapper.
  returned: always
  type: str
  sample: /usr/local/lib/npuops/qwen3-8b-launch
unit:
  description: Path of the systemd unit, or null when O(systemd=false).
  returned: always
  type: str
  sample: /etc/systemd/system/vllm-qwen3-8b.service
unit_name:
  description: Name of the systemd unit.
  returned: always
  type: str
  sample: vllm-qwen3-8b.service
plan_file:
  description: Path of the instance's plan JSON (what the binder and M(npuops.fleet.vllm_binding_facts) read).
  returned: always
  type: str
  sample: /usr/local/lib/npuops/qwen3-8b.plan.json
bind_unit:
  description: Name of the instance's bind unit (its binder), or null without O(systemd) or without host binding.
  returned: always
  type: str
  sample: vllm-qwen3-8b-bind.service
unit_changed:
  description: The unit file changed; run C(systemctl daemon-reload).
  returned: always
  type: bool
main_cpus:
  description: The instance's devices' main CPUs.
  returned: always
  type: str
  sample: 2-21,146-165
frontend_cpus:
  description: The instance's frontend CPUs (API server, EngineCore), empty when the plan has none.
  returned: always
  type: str
  sample: 120-131
vllm:
  description: The instance's vLLM (C(version), C(source); null when unknown) and C(numa_bind), the NUMA binding it gets.
  returned: always
  type: dict
  sample: {version: 0.34.0, source: /opt/venv/lib/python3.12/site-packages/vllm/_version.py, numa_bind: off (--no-numa-bind)}
units:
  description: The systemd units to enable, in order (the service, its bind unit, the reconcile timer).
  returned: always
  type: list
  elements: str
  sample: [vllm-qwen3-8b.service, vllm-qwen3-8b-bind.service, vllm-qwen3-8b-reconcile.timer]
"""

import re
import socket
import sys

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist, cpuset, nodemap
from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.host import command, hostio, locks, paths
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import host_path
from ansible_collections.npuops.fleet.plugins.module_utils.parse import cgroup, npu_smi, pci, rocm_smi
from ansible_collections.npuops.fleet.plugins.module_utils.model import instance_files, rules as host_rules, vendors
from ansible_collections.npuops.fleet.plugins.module_utils.model import (
    cpu_intruders,
    vllm_flags,
    vllm_version,
    worker_start,
)
from ansible_collections.npuops.fleet.plugins.module_utils.model.instances import module_option as instance_option
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch as wrapper
from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app, units
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import (
    binder,
    cli,
    irqs,
    metrics,
    procs,
    rules,
    smi,
    targets,
)
from ansible_collections.npuops.fleet.plugins.module_utils import errors

# every module the binder zipapp holds (its closure), imported so that AnsiballZ ships it
BINDER_MODULES = (
    binder,
    cli,
    irqs,
    metrics,
    procs,
    rules,
    smi,
    targets,
    errors,
    cpulist,
    cpuset,
    nodemap,
    command,
    locks,
    paths,
    vendors,
    vllm_flags,
    npu_smi,
    pci,
    rocm_smi,
    cpu_intruders,
    worker_start,
)


# a week: the binder's own deadline (the bind unit is Type=simple, no start timeout covers it)
MAX_BIND_TIMEOUT = 7 * 24 * 3600


def binder_script():
    """The binder: the tested ``standalone`` package and the module_utils files it imports, as
    one zipapp behind this host's interpreter (``binder_app``). Importing them (BINDER_MODULES)
    is what puts their files into the module's payload."""
    sources = binder_app.closure(binder_app.reader(BINDER_MODULES))
    python = sys.executable if re.match(r"^/[A-Za-z0-9_./+-]+\Z", sys.executable or "") else "/usr/bin/env python3"
    return binder_app.render(sources, python)


def build_files(p):
    name = wrapper.check_name(p["name"])
    base = wrapper.check_dir(p["dest"], "dest").rstrip("/")
    unit_dir = wrapper.check_dir(p["unit_dir"], "unit_dir").rstrip("/")
    view = wrapper.instance_view(p["plan"], name, p["npus"], p["command"])
    io, errors = hostio.LiveHostIO(p["host_root"]), []
    vllm = vllm_version.resolve(io, p["command"], p["vllm_version"], errors)
    names = instance_files.unit_names(name)
    paths = instance_files.file_paths(base, name)
    paths.update((kind, "%s/%s" % (unit_dir, unit)) for kind, unit in names.items())
    files = [
        (paths["wrapper"], wrapper.render_wrapper(view, p["command"], p["env"], p["binding"], vllm), 0o755),
        (paths["plan"], wrapper.render_plan_json(p["plan"], view, p["binding"], vllm), 0o644),
    ]
    host = p["binding"] == "host"
    if host:
        files.append((paths["binder"], binder_script(), 0o755))
    if p["systemd"]:
        files.append(
            (
                paths["service"],
                units.service_unit(view, paths["wrapper"], p["binding"], reconcile=p["reconcile"]),
                0o644,
            )
        )
    if p["systemd"] and host:
        ready = p["ready_url"] or units.ready_url(p["command"])
        files.append(
            (
                paths["bind"],
                units.bind_unit(
                    view, paths["binder"], paths["plan"], p["bind_timeout"], ready, p["migrate"], p["irq_state"]
                ),
                0o644,
            )
        )
        if p["reconcile"]:
            service, timer = units.reconcile_units(
                view, paths["binder"], paths["plan"], p["reconcile_interval"], p["irq_state"], p["metrics_dir"] or None
            )
            files += [(paths["reconcile"], service, 0o644), (paths["timer"], timer, 0o644)]
    _argv, warnings = wrapper.launch_argv(view, p["command"], p["binding"], vllm)
    warnings.extend("vLLM version: %s: %s" % (e["source"], e["msg"]) for e in errors)
    view["vllm"] = wrapper.vllm_summary(view, p["command"], p["binding"], vllm)
    if p["systemd"] and host:
        # AllowedCPUs= holds the tree only on cgroup v2 with the cpuset controller
        note = cgroup.confinement_warning(
            cgroup.cgroup_mode(io.read_text("/proc/self/mounts"), io.read_text("/sys/fs/cgroup/cgroup.controllers"))
        )
        if note:
            warnings.append("instance %s: %s" % (name, note))
    return view, paths, files, warnings


def install(module):
    p = module.params
    if not 1 <= p["bind_timeout"] <= MAX_BIND_TIMEOUT:
        raise WrapperError("bind_timeout: must be from 1 to %d seconds" % MAX_BIND_TIMEOUT)
    if p["ready_url"] and not re.match(r"^https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9._~/-]*)?\Z", p["ready_url"]):
        raise WrapperError("ready_url: %r is not a plain http(s) URL" % (p["ready_url"],))
    foreign = host_rules.foreign_host("plan", p["plan"].get("hostname"), socket.gethostname())
    if foreign and not p["allow_foreign_plan"]:
        raise WrapperError(foreign)
    view, paths, files, warnings = build_files(p)
    names = instance_files.unit_names(p["name"])
    enabled = instance_files.enabled_units(p["name"], p["systemd"], p["binding"] == "host", p["reconcile"])
    # Refuse unsafe paths before anything is written.
    for path, _content, _mode in files:
        host_path(p["host_root"], path)
    results = [
        fileops.ensure_file(p["host_root"], path, content, mode=mode, check_mode=module.check_mode, create_parents=True)
        for path, content, mode in files
    ]
    if any(path == paths.get("reconcile") for path, dummy, dummy2 in files) and p["metrics_dir"]:
        # the reconciler writes its textfile here: a host without node_exporter yet has none
        results.append(fileops.ensure_dir(p["host_root"], p["metrics_dir"], check_mode=module.check_mode))
    return dict(
        changed=any(r["changed"] for r in results),
        files=[{"path": r["path"], "changed": r["changed"]} for r in results],
        wrapper=paths["wrapper"],
        unit=paths["service"] if p["systemd"] else None,
        unit_name=names["service"],
        plan_file=paths["plan"],
        bind_unit=names["bind"] if names["bind"] in enabled else None,
        unit_changed=any(
            r["changed"]
            for r in results
            if r["path"].startswith(wrapper.check_dir(p["unit_dir"], "unit_dir").rstrip("/") + "/")
        ),
        units=enabled,
        main_cpus=cpulist.format(view["main"]),
        frontend_cpus=cpulist.format(view["frontend"]),
        vllm=view["vllm"],
        warnings=warnings,
        diff=[r["diff"] for r in results if r["changed"]],
    )


def main():
    run(
        dict(
            # the per-instance options: the one instance schema (model/instances.py)
            name=instance_option("name"),
            plan=dict(type="dict", required=True),
            npus=instance_option("npus", required=False),
            command=instance_option("command", required=True),
            env=instance_option("env", default={}),
            dest=instance_option("dest", type="path", default=instance_files.DEFAULT_DEST),
            binding=instance_option("binding", default="host"),
            systemd=instance_option("systemd", default=True),
            unit_dir=instance_option("unit_dir", type="path", default=instance_files.DEFAULT_UNIT_DIR),
            bind_timeout=dict(type="int", default=900),
            ready_url=dict(type="str"),
            migrate=instance_option("migrate", default=True),
            reconcile=dict(type="bool", default=True),
            reconcile_interval=dict(type="str", default="5min"),
            metrics_dir=dict(type="path", default="/var/lib/prometheus/node-exporter"),
            irq_state=dict(type="path", default=instance_files.DEFAULT_IRQ_STATE),
            vllm_version=instance_option("vllm_version"),
            allow_foreign_plan=dict(type="bool", default=False),
            host_root=dict(type="path", default="/"),
        ),
        install,
    )


if __name__ == "__main__":
    main()
