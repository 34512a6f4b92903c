#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: vllm_launch_wrapper
short_description: Install a vLLM launch wrapper, its plan, the post-start binder and a systemd unit
version_added: 0.1.0
description:
  - Installs everything one vLLM instance needs to run on its planned CPUs. Writes, atomically and
    only when the content or mode differs, C(<dest>/<name>-launch) (bash wrapper, 0755),
    C(<dest>/<name>.plan.json) (the plan plus an C(npuops_instance) block, 0644),
    C(<dest>/<name>-bind) (the post-start binder, 0755, O(binding=host) only) and
    C(<unit_dir>/vllm-<name>.service) (0644, O(systemd=true)).
  - "The wrapper exports C(ASCEND_RT_VISIBLE_DEVICES) (C(CUDA_VISIBLE_DEVICES) on GPU hosts), the
    plan's launch env and O(env), then with O(binding=host) runs
    C(exec taskset -c <main CPUs> <command>) with every argument shell-quoted, after merging
    C({\"enable_cpu_binding\": false}) into the command's C(--additional-config) JSON on Ascend."
  - The unit's C(ExecStartPost) runs the binder, which waits for the workers and pins their
    threads (ACL and release threads to their CPUs) and memory (C(migratepages)).
  - Nothing is written when any path is unsafe (a name or directory with C(..), a path through a
    symlink) or any input is invalid (an unknown NPU, an environment name that is not a shell
    identifier, invalid C(--additional-config) JSON, a NUL byte in an argument).
    Run C(systemctl daemon-reload) when RV(unit_changed) is true (the role's handler does).
options:
  name:
    description: Instance name, used in file and unit names. Characters C([A-Za-z0-9_.@-]).
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
      - The plan instance's env from M(npuops.fleet.npu_cpu_plan) carries the visibility
        variable for its devices; the task fails when O(npus) names other devices.
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
    type: dict
    default: {}
  dest:
    description: Directory of the wrapper, plan JSON and binder (created when missing).
    type: path
    default: /usr/local/lib/npuops
  binding:
    description:
      - "V(host) pins CPUs from the host and turns vllm-ascend's in-process binding off. The
        wrapper starts vLLM under C(taskset -c <union of the instance's main CPUs>), so every
        process and thread starts on the main CPUs. On Ascend it merges
        C({\"enable_cpu_binding\": false}) into the command's C(--additional-config) JSON (a JSON
        merge; C(--additional-config=JSON) and C(--additional-config JSON) are both handled, the
        user's other keys are kept, the option is appended when absent; invalid JSON fails the
        task). vllm-ascend's in-process binding would otherwise re-pin the workers to its own pools,
        which differ from ours (see C(docs/policies.md)). The unit runs the binder after start and
        sets C(CPUAffinity=) to the union of the instance's pools."
      - V(vllm) leaves vllm-ascend's own binding on and only prepares the host (no taskset,
        no binder, no C(CPUAffinity=)). vllm-ascend computes its pools from the process's
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
    description: Directory of the systemd unit.
    type: path
    default: /etc/systemd/system
  bind_timeout:
    description: Seconds the binder waits for every device to show its worker.
    type: int
    default: 900
attributes:
  check_mode:
    support: full
    details: Computes the same C(changed) and writes nothing.
  diff_mode:
    support: full
    details: Returns C(diff), one entry per changed file.
extends_documentation_fragment:
  - npuops.fleet.attributes
  - npuops.fleet.host_root
notes:
  - "The wrapper exports C(ASCEND_RT_VISIBLE_DEVICES) (C(CUDA_VISIBLE_DEVICES)) from the instance's
    devices. M(npuops.fleet.npu_cpu_plan) writes the same variable into each
    C(plan.instances[name].env); that value, or one in O(env), is accepted when it names exactly
    those devices (same ids, same order) and exported once. Any other value fails the task naming
    its source, for example
    C(plan instance svc env: ASCEND_RT_VISIBLE_DEVICES=0,1 contradicts the instance's devices)
    when O(npus) disagrees with the plan instance."
  - On GPU hosts the wrapper exports C(CUDA_VISIBLE_DEVICES) and the plan's NCCL variables
    (C(NCCL_IB_HCA) for the paired NICs) instead, and C(--additional-config) is left untouched.
  - "Tools (C(taskset), the vLLM program) are called by name from PATH. Every argument is quoted
    with C(shlex.quote) and environment values are always single-quoted: quotes, command
    substitutions, backticks, newlines, globs and leading dashes reach vLLM verbatim and run nothing (tested by
    running the wrapper with stand-in C(taskset) and C(vllm) and comparing the argv byte for
    byte). The script passes C(bash -n) and C(shellcheck); the one file-wide
    C(shellcheck disable=SC1003,SC2016) is there because single-quoted command substitutions and
    backslashes are intended literals."
  - The post-start binder C(<dest>/<name>-bind) is the collection's
    C(plugins/module_utils/standalone/binder.py) itself (the module reads its own copy through the
    package loader, so the installed script is exactly the tested code) behind a C(#!<python>)
    line. Standard library only, Python 3.7+; it reads C(/proc) directly.
  - "Binder usage: C(<name>-bind --plan PLAN.json [--instance NAME] [--timeout 900] [--interval 2]
    [--thread-wait 60] [--root-pid PID] [--pid PID --npu N ...] [--check] [--json])."
  - "Binder step 1: it waits, polling every C(--interval) seconds up to C(--timeout), until each
    of the instance's devices shows its worker - the C(npu-smi info) process table resolved to
    logic ids through C(npu-smi info -m) (A3 has two dies per card; in containers card ids differ
    from logic ids), or on GPU hosts C(nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory).
    A worker also opens a small context (about 126 MB) on another device of its instance (seen on
    a real A3 host), so each pid belongs to the device where it holds the most memory. Under
    systemd only descendants of C($MAINPID) are taken (C(--root-pid) overrides), so another
    service's process on the same NPU is left alone."
  - "Binder step 2: per worker, after waiting (bounded by C(--thread-wait)) for its C(acl_thread)
    and C(release_thread) threads to exist, every thread goes to the NPU's main CPUs (the
    per-thread equivalent of C(taskset -acp)), then the ACL and release threads to their CPUs.
    Threads are matched on C(/proc/<pid>/task/<tid>/comm), which Linux cuts to 15 characters."
  - "Binder step 3: C(migratepages <pid> <all NUMA nodes> <the pool's node>) when C(migratepages)
    is on PATH (package C(numactl)); otherwise a warning. Memory is moved only when the worker's
    affinity changed, so a re-run on a bound process changes nothing and logs
    C(binding unchanged)."
  - "The binder writes affinity only where it differs. Exit codes: 0 done, 1 bad plan or a failed
    bind, 2 a device showed no worker before the timeout (the others are still bound). The unit
    runs it as C(ExecStartPost=-...), so a failed binding is logged but never stops the inference
    service, and C(TimeoutStartSec) is the bind timeout plus 60 s. C(--pid PID --npu N) binds a
    known process without asking npu-smi; C(--check) reports what would change. Its log (stderr,
    vLLM-style) is shown in the examples."
seealso:
  - module: npuops.fleet.npu_cpu_plan
author:
  - npuops.fleet contributors (@npuops)
'''

EXAMPLES = r'''
- name: Launch files for a TP2 instance on NPUs 0 and 1
  npuops.fleet.vllm_launch_wrapper:
    name: qwen3-8b
    plan: "{{ npu_plan.plan }}"
    npus: [0, 1]
    command: [vllm, serve, /models/Qwen3-8B, --tensor-parallel-size, "2", --port, "8000"]
    env:
      HCCL_OP_EXPANSION_MODE: AIV
  notify: npuops reload systemd

- name: Launch files for Qwen3-8B on NPUs 0 and 2, arguments with quotes and JSON
  npuops.fleet.vllm_launch_wrapper:
    name: qwen3-8b
    plan: "{{ npu_plan.plan }}"
    npus: [0, 2]
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
  register: launch

# With an A2 plan where NPU0 and NPU2 share NUMA node 3 (pools 144-167 and 168-191), the second
# task writes this wrapper (/usr/local/lib/npuops/qwen3-8b-launch; its exec line is one line,
# wrapped here):
#
#   #!/usr/bin/env bash
#   # vLLM instance qwen3-8b, generated by npuops.fleet vllm_launch_wrapper; do not edit.
#   # devices: 0,2  main CPUs: 146-165,170-189  binding: host
#   # shellcheck disable=SC1003,SC2016
#   set -euo pipefail
#
#   export ASCEND_RT_VISIBLE_DEVICES=0,2
#   export HCCL_OP_EXPANSION_MODE='AIV'
#
#   exec taskset -c 146-165,170-189 vllm serve /models/Qwen3-8B --tensor-parallel-size 2 --port 8000 \
#     --additional-config '{"torchair_graph_config":{"enabled":true},"enable_cpu_binding":false}' \
#     --served-model-name 'qwen'"'"'s $(model)'
#
# and this unit (/etc/systemd/system/vllm-qwen3-8b.service):
#
#   # Generated by npuops.fleet vllm_launch_wrapper; do not edit.
#   [Unit]
#   Description=vLLM instance qwen3-8b (npuops.fleet)
#   Wants=network-online.target
#   After=network-online.target
#
#   [Service]
#   Type=simple
#   ExecStart=/usr/local/lib/npuops/qwen3-8b-launch
#   ExecStartPost=-/usr/local/lib/npuops/qwen3-8b-bind --plan /usr/local/lib/npuops/qwen3-8b.plan.json --instance qwen3-8b --timeout 900
#   TimeoutStartSec=960
#   CPUAffinity=144-191
#   Restart=on-failure
#   RestartSec=10
#   KillMode=control-group
#
#   [Install]
#   WantedBy=multi-user.target
#
# After start the binder logs (stderr, vLLM-style; the [bind] line is one line), for example:
#
#   INFO 11-30 06:33:50 [npuops-bind] The CPU allocation plan is as follows:
#   INFO 11-30 06:33:50 [npuops-bind] NPU0: main=[146 147 ... 165]  acl=[166]  release=[167]
#   INFO 11-30 06:33:52 [npuops-bind] [bind] NPU0 pid=3428811: 87 threads, 87 changed, 0 unchanged;
#     main=[146-165] acl_thread=[3428840] release_thread=[3428841]
#   INFO 11-30 06:33:52 [npuops-bind] [migrate] NPU:0 -> NUMA [3]
#   INFO 11-30 06:33:52 [npuops-bind] binding changed
'''

RETURN = r'''
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
unit_changed:
  description: The unit file changed; run C(systemctl daemon-reload).
  returned: always
  type: bool
main_cpus:
  description: CPUs the wrapper runs vLLM on (union of the instance's main CPUs).
  returned: always
  type: str
  sample: 2-21,146-165
'''

import pkgutil
import re
import sys

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import check_components, host_path
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch as wrapper
from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import (
    binder, irqs, metrics, procs, rules, smi, targets)

# every file of the binder package (imported here so that AnsiballZ ships them)
STANDALONE_MODULES = (binder, irqs, metrics, procs, rules, smi, targets)


def binder_script():
    """The binder: the tested ``standalone`` package itself, as one zipapp behind this host's
    interpreter. Importing its modules is what puts their files into the module's payload."""
    package = binder.__name__.rsplit(".", 1)[0]
    names = ["__init__"] + [module.__name__.rsplit(".", 1)[1] for module in STANDALONE_MODULES]
    sources = dict((name + ".py", pkgutil.get_data(package, name + ".py")) for name in names)
    python = sys.executable if re.match(r"^/[A-Za-z0-9_./+-]+\Z", sys.executable or "") \
        else "/usr/bin/env python3"
    return binder_app.render(sources, python)


def build_files(p):
    name = wrapper.check_name(p["name"])
    for option in ("dest", "unit_dir"):
        check_components(p[option])
    view = wrapper.instance_view(p["plan"], name, p["npus"])
    base = p["dest"].rstrip("/") or "/"
    paths = {"wrapper": "%s/%s-launch" % (base, name), "plan": "%s/%s.plan.json" % (base, name),
             "binder": "%s/%s-bind" % (base, name),
             "unit": "%s/vllm-%s.service" % (p["unit_dir"].rstrip("/"), name)}
    files = [(paths["wrapper"], wrapper.render_wrapper(view, p["command"], p["env"], p["binding"]),
              0o755),
             (paths["plan"], wrapper.render_plan_json(p["plan"], view, p["binding"]), 0o644)]
    if p["binding"] == "host":
        files.append((paths["binder"], binder_script(), 0o755))
    if p["systemd"]:
        files.append((paths["unit"], wrapper.render_unit(
            view, paths["wrapper"], paths["binder"], paths["plan"], p["binding"],
            p["bind_timeout"]), 0o644))
    _argv, warnings = wrapper.launch_argv(view, p["command"], p["binding"])
    return view, paths, files, warnings


def install(module):
    p = module.params
    if p["bind_timeout"] < 1:
        raise WrapperError("bind_timeout: must be at least 1 second")
    view, paths, files, warnings = build_files(p)
    # Refuse unsafe paths before anything is written.
    for path, _content, _mode in files:
        host_path(p["host_root"], path)
    results = [fileops.ensure_file(p["host_root"], path, content, mode=mode,
                                   check_mode=module.check_mode, create_parents=True)
               for path, content, mode in files]
    return dict(
        changed=any(r["changed"] for r in results),
        files=[{"path": r["path"], "changed": r["changed"]} for r in results],
        wrapper=paths["wrapper"],
        unit=paths["unit"] if p["systemd"] else None,
        unit_name="vllm-%s.service" % p["name"],
        unit_changed=any(r["changed"] for r in results if r["path"] == paths["unit"]),
        main_cpus=cpulist.format(view["main"]),
        warnings=warnings,
        diff=[r["diff"] for r in results if r["changed"]],
    )


def main():
    run(dict(
        name=dict(type="str", required=True),
        plan=dict(type="dict", required=True),
        npus=dict(type="list", elements="int"),
        command=dict(type="list", elements="str", required=True),
        env=dict(type="dict", default={}),
        dest=dict(type="path", default="/usr/local/lib/npuops"),
        binding=dict(type="str", choices=["host", "vllm"], default="host"),
        systemd=dict(type="bool", default=True),
        unit_dir=dict(type="path", default="/etc/systemd/system"),
        bind_timeout=dict(type="int", default=900),
        host_root=dict(type="path", default="/"),
    ), install)


if __name__ == "__main__":
    main()
