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
  - Writes, atomically and only when the content differs, for one vLLM instance
    C(<dest>/<name>-launch) (bash wrapper, 0755), C(<dest>/<name>.plan.json) (the plan),
    C(<dest>/<name>-bind) (the post-start binder, 0755, O(binding=host) only) and
    C(<unit_dir>/vllm-<name>.service) (O(systemd=true)).
  - "The wrapper exports C(ASCEND_RT_VISIBLE_DEVICES) (C(CUDA_VISIBLE_DEVICES) on GPU hosts), the
    plan's launch env and O(env), then with O(binding=host) runs
    C(exec taskset -c <main CPUs> <command>) with every argument shell-quoted, after merging
    C({\"enable_cpu_binding\": false}) into the command's C(--additional-config) JSON on Ascend."
  - The unit's C(ExecStartPost) runs the binder, which waits for the workers and pins their
    threads (ACL and release threads to their CPUs) and memory (C(migratepages)).
  - Nothing is written when any path is unsafe (a symlink or C(..)) or any input is invalid.
    Run C(systemctl daemon-reload) when RV(unit_changed) is true (the role's handler does).
options:
  name:
    description: Instance name, used in file and unit names. Characters C([A-Za-z0-9_.@-]).
    type: str
    required: true
  plan:
    description: The plan from M(npuops.fleet.npu_cpu_plan).
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
    description: The vLLM command as an argument list (argv); the program is found on PATH.
    type: list
    elements: str
    required: true
  env:
    description:
      - Extra environment for vLLM; overrides the plan's launch env.
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
      - V(host) pins CPUs from the host (taskset in the wrapper, the binder after start) and
        turns vllm-ascend's in-process binding off.
      - V(vllm) leaves vllm-ascend's own binding on and only prepares the host (no taskset,
        no binder, no C(CPUAffinity=)).
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
extends_documentation_fragment:
  - npuops.fleet.attributes
  - npuops.fleet.host_root
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import binder
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch as wrapper
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError

STANDALONE = "ansible_collections.npuops.fleet.plugins.module_utils.standalone"


def binder_script():
    """The binder's own source (the tested file) with this host's interpreter as shebang."""
    source = pkgutil.get_data(STANDALONE, "binder.py")
    python = sys.executable if re.match(r"^/[A-Za-z0-9_./+-]+\Z", sys.executable or "") \
        else "/usr/bin/env python3"
    return "#!%s\n%s" % (python, source.decode("utf-8"))


def build_files(p):
    name = wrapper.check_name(p["name"])
    for option in ("dest", "unit_dir"):
        fileops.check_components(p[option])
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


def main():
    module = AnsibleModule(
        argument_spec=dict(
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
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["bind_timeout"] < 1:
            raise wrapper.WrapperError("bind_timeout: must be at least 1 second")
        view, paths, files, warnings = build_files(p)
        # Refuse unsafe paths before anything is written.
        for path, _content, _mode in files:
            fileops.host_path(p["host_root"], path)
        results = [fileops.ensure_file(p["host_root"], path, content, mode=mode,
                                       check_mode=module.check_mode, create_parents=True)
                   for path, content, mode in files]
    except (NpuopsError, ValueError) as err:
        module.fail_json(msg=str(err))
    for warning in warnings:
        module.warn(warning)
    changed = any(r["changed"] for r in results)
    result = dict(
        changed=changed,
        files=[{"path": r["path"], "changed": r["changed"]} for r in results],
        wrapper=paths["wrapper"],
        unit=paths["unit"] if p["systemd"] else None,
        unit_name="vllm-%s.service" % p["name"],
        unit_changed=any(r["changed"] for r in results if r["path"] == paths["unit"]),
        main_cpus=cpulist.format(view["main"]),
    )
    if module._diff:
        result["diff"] = [r["diff"] for r in results if r["changed"]]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
