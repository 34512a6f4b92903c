# -*- coding: utf-8 -*-
"""--device-ids reaches the binder through the plan JSON alone: the wrapper writes the
instance's devices in vLLM's rank order (``npuops_instance.devices``), and the binder - which
maps local rank r of DP engine d to ``devices[d*ws + r]`` - pins each ranked worker of a running
stand-in tree to the device --device-ids gave it, not to its slot in the visible list."""

import json
import os
import subprocess

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.render import launch as wrapper
from npuops_testing.binder import BINDER_APP, allowed, gpu_plan, stand_in_tree, wait_final

HAVE_TWO_CPUS = hasattr(os, "sched_getaffinity") and {0, 1} <= os.sched_getaffinity(0)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_TWO_CPUS, reason="needs CPUs 0 and 1 allowed")
def test_binder_follows_device_ids(tmp_path):
    plan = gpu_plan("nvidia")
    del plan["npuops_instance"]
    plan["instances"] = {"svc": {"gpus": [0, 1], "frontend": "0-1"}}
    # visible list 0,1; --device-ids 1,0: rank 0 on GPU1 (CPU 1), rank 1 on GPU0 (CPU 0)
    view = wrapper.instance_view(plan, "svc", command=["vllm", "serve", "--device-ids", "1,0"])
    doc = json.loads(wrapper.render_plan_json(plan, view, "host"))
    assert doc["npuops_instance"]["devices"] == [1, 0]
    assert "visible" not in doc["npuops_instance"]  # the wrapper exports it; no reader of the file
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(doc))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    with stand_in_tree(tmp_path, workers=2) as tree:
        wait_final(tree)  # Worker_TP0, Worker_TP1: ranked titles
        proc = subprocess.run(
            [
                BINDER_APP,
                "--json",
                "--plan",
                str(path),
                "--once",
                "--timeout",
                "20",
                "--interval",
                "0.2",
                "--no-migrate",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=60,
            check=False,
            env=dict(os.environ, PATH=str(bindir), MAINPID=str(tree.main)),
        )
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        ranks = dict((w.pid, rank) for rank, w in enumerate(tree.workers))
        assert sorted((ranks[w["pid"]], w["device"]) for w in result["workers"]) == [(0, 1), (1, 0)]
        rank0, rank1 = tree.workers
        assert allowed(rank0.pid, rank0.threads["worker_thread"]) == "1"
        assert allowed(rank1.pid, rank1.threads["worker_thread"]) == "0"
