# -*- coding: utf-8 -*-
"""Hostile inputs through a real ansible-playbook, where the module process itself matters: a
tool whose child holds the pipe is bounded by the module's timeout (its process group killed),
and a refusal reaches the play as ``failed`` + ``msg``, never ``MODULE FAILURE``. Planted links,
hard links and wrong-typed options of every module: tests/unit/plugins/modules/
test_hostile_modules.py (in-process, same assertions)."""

import os
import time

import pytest

from npuops_testing.runner import run_module

pytestmark = pytest.mark.slow


def _message(result):
    assert result.get("failed"), result
    assert "MODULE FAILURE" not in result.get("msg", "") and "Traceback" not in str(result)
    return result["msg"]


def test_facts_timeout_bounds_a_tool_whose_child_holds_the_pipe(tmp_path):
    """Item 1: a fake npu-smi running 'sleep 60; echo x' (the child holds stdout)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    tool = fake / "npu-smi"
    tool.write_text("#!/bin/sh\nsleep 60; echo x\n")
    tool.chmod(0o755)
    start = time.monotonic()
    res = run_module("npu_topology_facts", {"timeout": 2}, env={"PATH": "%s:%s" % (fake, os.environ.get("PATH", ""))})
    elapsed = time.monotonic() - start
    assert not res.get("failed"), res
    errors = dict((e["source"], e["msg"]) for e in res["ansible_facts"]["npu_topology"]["errors"])
    assert "timed out" in errors["npu-smi info"]
    # ansible-playbook itself takes a few seconds; an unbounded wait would take 60
    assert elapsed < 40, elapsed


def test_launch_wrapper_refusal_through_a_playbook(tmp_path):
    """One refusal through the whole AnsiballZ path: a message, not MODULE FAILURE, and nothing
    written. The other hostile inputs of every module run in-process, in
    tests/unit/plugins/modules/test_hostile_modules.py."""
    args = {
        "name": "svc",
        "plan": {"npus": {"0": {"pool": "0-3", "main": "0-3"}}},
        "command": ["vllm", "serve"],
        "host_root": str(tmp_path),
        "env": {"SHELLOPTS": "x"},
    }
    assert "bash readonly variable" in _message(run_module("vllm_launch_wrapper", args))
    assert not os.listdir(str(tmp_path))
