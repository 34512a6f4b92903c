# -*- coding: utf-8 -*-
"""playbooks/site.yml: the whole-cluster flow, its stage tags, and its shape (few tasks per
host, independent of the NPU count) on recorded snapshots with sandbox roots."""

import filecmp
import json
import os
import re
import shutil

import pytest

from helpers import REPO, SNAPSHOTS, run_playbook

SITE = os.path.join(REPO, "playbooks", "site.yml")
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+"
                   r"skipped=(\d+)")
A2 = [0, 1, 2, 3]


def need(*snaps):
    for snap in snaps:
        if not os.path.isfile(os.path.join(SNAPSHOTS, snap, "snapshot.yml")):
            pytest.skip("snapshot %s not in tests/snapshots yet" % snap)


def recap(stdout):
    out = {}
    for line in stdout.split("PLAY RECAP", 1)[-1].splitlines():
        match = RECAP.match(line.strip())
        if match:
            ok, changed, unreach, failed, skipped = (int(x) for x in match.groups()[1:])
            out[match.group(1)] = {"ok": ok, "changed": changed, "unreachable": unreach,
                                   "failed": failed, "skipped": skipped}
    return out


def make_fleet(tmp_path, hosts):
    """hosts: {name: (snapshot, extra vars)} -> inventory path; sandbox roots under tmp_path."""
    inv = {"all": {"hosts": {}}}
    for name, (snap, extra) in hosts.items():
        root = tmp_path / "demo" / name / "root"
        src = os.path.join(SNAPSHOTS, snap, "fs")
        if not root.exists():
            if os.path.isdir(src):
                shutil.copytree(src, str(root), symlinks=True)
            else:
                root.mkdir(parents=True)
            (root / "etc").mkdir(exist_ok=True)
        hvars = {"ansible_connection": "local",
                 "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "npuops_snapshot": os.path.join(SNAPSHOTS, snap),
                 "npuops_host_root": str(root),
                 "npuops_vllm_instances": []}
        hvars.update(extra)
        inv["all"]["hosts"][name] = hvars
    path = tmp_path / "hosts.yml"
    path.write_text(json.dumps(inv))
    return str(path)


def written(tmp_path, host, snap):
    root = str(tmp_path / "demo" / host / "root")
    found = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            real = os.path.join(dirpath, name)
            rel = os.path.relpath(real, root)
            orig = os.path.join(SNAPSHOTS, snap, "fs", rel)
            if not os.path.isfile(orig) or not filecmp.cmp(real, orig, shallow=False):
                found.add("/" + rel)
    return found


def instances(npus_list):
    return [{"name": "svc%d" % i, "npus": npus,
             "command": ["vllm", "serve", "/models/m", "--tensor-parallel-size", str(len(npus))]}
            for i, npus in enumerate(npus_list)]


def test_site_yml_stages_are_tagged():
    import yaml
    with open(SITE) as handle:
        plays = yaml.safe_load(handle)
    tags = set()
    for play in plays:
        for task in play["tasks"]:
            tags.update(task.get("tags", []))
            assert task["name"][0].isupper()
    assert {"facts", "softshare", "plan", "irq", "launch"} <= tags


@pytest.mark.slow
def test_site_full_run_is_idempotent_and_task_count_is_independent_of_npu_count(tmp_path):
    need("a2-910b3x8", "a3-16die", "x86-none")
    inv = make_fleet(tmp_path, {
        "a2": ("a2-910b3x8", {"npuops_vllm_instances": instances([A2, [4, 5, 6, 7]])}),
        "a3": ("a3-16die", {"npuops_vllm_instances": instances([list(range(16)), ])}),
        "none": ("x86-none", {}),
    })
    first = run_playbook(SITE, inv)
    assert first.returncode == 0, first.stdout
    rec = recap(first.stdout)
    assert set(rec) == {"a2", "a3", "none"}
    assert rec["a2"]["changed"] > 0 and rec["a3"]["changed"] > 0
    # The same tasks run on an 8-NPU and a 16-NPU host: NPUs are module data, not tasks.
    assert rec["a2"]["ok"] + rec["a2"]["skipped"] == rec["a3"]["ok"] + rec["a3"]["skipped"]
    assert rec["a2"]["ok"] + rec["a2"]["skipped"] <= 20
    files = written(tmp_path, "a2", "a2-910b3x8")
    assert any("svc0" in f for f in files) and any("svc1" in f for f in files), files
    assert any(f.startswith("/proc/irq/") for f in files), files
    # No accelerator: nothing to pin, nothing to launch.
    assert not any(f.startswith("/proc/irq/") for f in written(tmp_path, "none", "x86-none"))
    second = run_playbook(SITE, inv)
    assert second.returncode == 0, second.stdout
    assert all(r["changed"] == 0 for r in recap(second.stdout).values()), second.stdout


@pytest.mark.slow
def test_site_stages_run_alone_and_check_mode_writes_nothing(tmp_path):
    need("a2-910b3x8")
    inv = make_fleet(tmp_path, {"a2": ("a2-910b3x8", {"npuops_vllm_instances": instances([A2])})})
    # --tags plan alone: the topology is gathered first (guarded task), nothing is written.
    plan = run_playbook(SITE, inv, ["--tags", "plan"])
    assert plan.returncode == 0, plan.stdout
    assert recap(plan.stdout)["a2"]["changed"] == 0
    assert written(tmp_path, "a2", "a2-910b3x8") == set()
    # --check --diff over the whole flow: changes reported, nothing created.
    check = run_playbook(SITE, inv, ["--check", "--diff"])
    assert check.returncode == 0, check.stdout
    assert recap(check.stdout)["a2"]["changed"] > 0
    assert written(tmp_path, "a2", "a2-910b3x8") == set()
    # --tags launch alone plans by itself and writes only the launch files (no IRQ affinity).
    launch = run_playbook(SITE, inv, ["--tags", "launch"])
    assert launch.returncode == 0, launch.stdout
    files = written(tmp_path, "a2", "a2-910b3x8")
    assert files and any("svc0" in f for f in files), launch.stdout
    assert not any(f.startswith("/proc/irq/") for f in files), files
