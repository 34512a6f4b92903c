# -*- coding: utf-8 -*-
"""Each module's EXAMPLES runs as pasted, in a sandbox: the tasks are taken verbatim from the
module's docs and run through ansible-playbook with ``module_defaults`` that point every
npuops.fleet module at a sandbox root (``host_root``) and the facts module at a recorded A2
host (``snapshot``) - options a task gives itself still win. Only actions on real services
(``ansible.builtin.systemd_service``) are replaced by ``ansible.builtin.debug``: there is no
systemd to talk to here."""

import json
import os
import shutil

import pytest
import yaml

from npuops_testing import REPO, SNAPSHOTS, module_string
from npuops_testing.runner import run_playbook

SNAP = os.path.join(SNAPSHOTS, "a2-910b3x8")
MODULES = [
    "npu_topology_facts",
    "npu_cpu_plan",
    "npu_irq_affinity",
    "npu_share_dirs",
    "vllm_launch_wrapper",
    "vllm_binding_facts",
]
# tasks of an example that write outside any sandbox by design (a path the user chose)
OUTSIDE = ("save_snapshot", "/var/lib/npuops/snapshots")

pytestmark = pytest.mark.slow


def examples(module):
    return yaml.safe_load(module_string(os.path.join(REPO, "plugins", "modules", module + ".py"), "EXAMPLES"))


def _stub_services(task):
    if "ansible.builtin.systemd_service" in task:
        args = task.pop("ansible.builtin.systemd_service")
        task["ansible.builtin.debug"] = {"msg": "would manage unit %s" % args.get("name")}
    return task


@pytest.mark.parametrize("module", MODULES)
def test_examples_run_as_pasted(tmp_path, module):
    root = tmp_path / "root"
    shutil.copytree(os.path.join(SNAP, "fs"), str(root))
    (root / "share_device").mkdir(exist_ok=True)
    # the facts example replays "{{ playbook_dir }}/snapshots/a2-910b3x8"
    shutil.copytree(SNAP, str(tmp_path / "snapshots" / "a2-910b3x8"))
    tasks = [_stub_services(t) for t in examples(module) if not any(marker in json.dumps(t) for marker in OUTSIDE)]
    assert tasks
    defaults = dict(
        ("npuops.fleet." + m, {"host_root": str(root)})
        for m in MODULES
        if m not in ("npu_topology_facts", "npu_cpu_plan")
    )
    defaults["npuops.fleet.npu_topology_facts"] = {"snapshot": SNAP}
    defaults["npuops.fleet.vllm_launch_wrapper"]["allow_foreign_plan"] = True
    defaults["npuops.fleet.npu_irq_affinity"]["allow_foreign_plan"] = True
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "connection": "local",
            "module_defaults": defaults,
            "tasks": tasks,
        }
    ]
    path = tmp_path / "examples.yml"
    path.write_text(json.dumps(play))
    proc = run_playbook(str(path), "localhost,", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout
    assert "failed=0" in proc.stdout
