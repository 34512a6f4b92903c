# -*- coding: utf-8 -*-
"""Fact caching: npu_topology_facts feeds the jsonfile cache once; a later playbook with
gather_facts: false plans from the cached facts without reading the host again."""

import json
import os

import pytest

from npuops_testing.fleet import make_fleet, need, play
from npuops_testing.runner import run_playbook

SNAP = "a2-910b3x8"


@pytest.mark.slow
def test_gather_once_plan_many_times_from_the_jsonfile_cache(tmp_path):
    need(SNAP, "dgx-a100")
    cache = tmp_path / "cache"
    env = {
        "ANSIBLE_CACHE_PLUGIN": "ansible.builtin.jsonfile",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache),
        "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "86400",
    }
    inv = make_fleet(tmp_path, {"a2": (SNAP, {}), "gpu": ("dgx-a100", {})})
    gather = play(
        tmp_path, [{"name": "Gather", "ansible.builtin.import_role": {"name": "npuops.fleet.npu_facts"}}], "gather.yml"
    )
    proc = run_playbook(gather, inv, env=env)
    assert proc.returncode == 0, proc.stdout
    assert sorted(os.listdir(str(cache))) and all(any(h in f for f in os.listdir(str(cache))) for h in ("a2", "gpu"))

    # The snapshot is gone now: any attempt to gather again would fail.
    gone = make_fleet(tmp_path / "gone", {"a2": (SNAP, {}), "gpu": ("dgx-a100", {})})
    hosts = json.loads(open(gone).read())
    for hvars in hosts["all"]["hosts"].values():
        hvars["npuops_snapshot"] = str(tmp_path / "no-such-snapshot")
    with open(gone, "w") as handle:
        json.dump(hosts, handle)
    for policy in ("strict", "vllm_ascend"):
        plan = play(
            tmp_path,
            [
                {
                    "name": "Plan",
                    "ansible.builtin.import_role": {"name": "npuops.fleet.cpu_binding", "tasks_from": "plan.yml"},
                    "vars": {"npuops_cpu_policy": policy},
                },
                {
                    "name": "Dump",
                    "ansible.builtin.copy": {
                        "content": "{{ {'topo': ansible_facts['npu_topology']['vendor'], "
                        "'mode': npuops_plan['mode'], 'policy': npuops_plan['policy']} | to_json }}",
                        "dest": str(tmp_path / ("%s-{{ inventory_hostname }}.json" % policy)),
                    },
                    "changed_when": False,
                },
            ],
            "plan-%s.yml" % policy,
        )
        proc = run_playbook(plan, gone, env=env)
        assert proc.returncode == 0, proc.stdout
        assert "Gather NPU/GPU topology facts when they are not known yet" in proc.stdout
        a2 = json.loads((tmp_path / ("%s-a2.json" % policy)).read_text())
        gpu = json.loads((tmp_path / ("%s-gpu.json" % policy)).read_text())
        assert a2["topo"] == "ascend" and a2["policy"] == policy
        assert gpu["topo"] == "nvidia"
