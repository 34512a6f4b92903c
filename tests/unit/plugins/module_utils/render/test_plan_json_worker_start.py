# -*- coding: utf-8 -*-
"""The plan JSON's worker_start follows the instance's own vLLM (the version the wrapper read
from the environment its command names), so the binder places still-untitled workers by spawn
order where that vLLM starts them in rank order, even when the host's own vLLM is unknown."""

import json

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.render import launch

VIEW = {"name": "svc", "vendor": "nvidia", "devices": [0, 1], "main": [1, 2], "pool": [1, 2, 3]}


@pytest.mark.parametrize("version, order", [("0.32.0", "rank"), ("0.34.0", "concurrent")])
def test_the_instance_s_vllm_decides(version, order):
    plan = {"worker_start": {"engine": "vllm", "version": None, "order": "unknown"}}
    doc = json.loads(launch.render_plan_json(plan, VIEW, "host", {"version": version, "source": "/venv/x"}))
    assert doc["worker_start"]["order"] == order and doc["worker_start"]["source"] == "/venv/x"


def test_unknown_instance_vllm_keeps_the_host_s_decision():
    plan = {"worker_start": {"engine": "vllm", "version": "0.34.0", "order": "concurrent"}}
    doc = json.loads(launch.render_plan_json(plan, VIEW, "host", None))
    assert doc["worker_start"] == plan["worker_start"]
    ascend = dict(VIEW, vendor="ascend")
    doc = json.loads(launch.render_plan_json(plan, ascend, "host", {"version": "0.32.0"}))
    assert doc["worker_start"] == plan["worker_start"]  # vllm-ascend decides there, not vLLM
