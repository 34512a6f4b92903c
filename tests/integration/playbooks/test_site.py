# -*- coding: utf-8 -*-
"""playbooks/site.yml: the whole-cluster flow, its stages run alone, and its shape (few tasks per
host, independent of the NPU count) on recorded snapshots with sandbox roots."""

import os

import pytest

from npuops_testing import REPO
from npuops_testing.fleet import make_fleet, need, recap, written
from npuops_testing.runner import run_playbook

SITE = os.path.join(REPO, "playbooks", "site.yml")
A2 = [0, 1, 2, 3]


def instances(npus_list):
    return [
        {
            "name": "svc%d" % i,
            "npus": npus,
            "command": ["vllm", "serve", "/models/m", "--tensor-parallel-size", str(len(npus))],
        }
        for i, npus in enumerate(npus_list)
    ]


@pytest.mark.slow
def test_site_full_run_is_idempotent_and_task_count_is_independent_of_npu_count(tmp_path):
    need("a2-910b3x8", "a3-16die", "x86-none")
    inv = make_fleet(
        tmp_path,
        {
            "a2": ("a2-910b3x8", {"npuops_vllm_instances": instances([A2, [4, 5, 6, 7]])}),
            "a3": (
                "a3-16die",
                {
                    "npuops_vllm_instances": instances(
                        [
                            list(range(16)),
                        ]
                    )
                },
            ),
            "none": ("x86-none", {}),
        },
    )
    first = run_playbook(SITE, inv)
    assert first.returncode == 0, first.stdout
    rec = recap(first.stdout)
    assert set(rec) == {"a2", "a3", "none"}
    assert rec["a2"]["changed"] > 0 and rec["a3"]["changed"] > 0
    # The same tasks run on an 8-NPU and a 16-NPU host: NPUs are module data, not tasks.
    assert rec["a2"]["ok"] + rec["a2"]["skipped"] == rec["a3"]["ok"] + rec["a3"]["skipped"]
    # 20 for the stages, plus the validate role's 3 + 1 (its own switches' argument spec, the
    # union of the site roles' specs checked by a task of its own so that a failure is one line,
    # the whole-config check; after the facts, the check against the host) and the argument
    # specs of cpu_binding's plan and irq entry points, which site.yml skipped before
    # (tasks_from: plan.yml matched no entry point), plus the Kubernetes stage's tasks, skipped
    # on a host without npuops_k8s_node, plus the CPU partition's 3 (its entry point's argument
    # spec, the guarded plan, the partition or its take-back)
    assert rec["a2"]["ok"] + rec["a2"]["skipped"] <= 31
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
