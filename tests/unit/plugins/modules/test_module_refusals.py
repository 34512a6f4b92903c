# -*- coding: utf-8 -*-
"""Refusals of vllm_launch_wrapper and npu_topology_facts, in-process
(npuops_testing.module_harness): each bad input is ``failed`` with a message naming it, never
a traceback, and nothing is written. These were parametrised ansible-playbook runs; the
integration files (tests/integration/modules/test_vllm_launch_wrapper.py,
test_npu_topology_facts.py) keep one case each for the path through AnsiballZ."""

import json
import os

import pytest

from npuops_testing.module_harness import call_module

PLAN = {
    "policy": "strict",
    "mode": "topo_affinity",
    "device_type": "A2",
    "skipped": False,
    "numa_nodes": {"0": "0-1"},
    "npus": {
        "0": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "0", "acl": "1", "release": "0"},
        "1": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "1", "acl": "0", "release": "1"},
    },
    "instances": {"svc": {"npus": [0, 1], "env": {}}},
}
HOSTILE = ["$(touch /tmp/npuops-pwned-mod)", "it's", "a\nb", "`id`", "*", "-x"]


def wrapper_args(tmp_path, **extra):
    base = {
        "name": "svc",
        "plan": PLAN,
        "command": ["vllm", "serve", "/models/m"] + HOSTILE,
        "env": {"HCCL_X": "1"},
        "host_root": str(tmp_path),
    }
    base.update(extra)
    return base


WRAPPER_BAD = [
    ({"name": "../evil"}, "name"),
    ({"name": "a b"}, "name"),
    ({"dest": "/usr/../etc"}, "'..'"),
    ({"npus": [5]}, "NPU 5 is not in the plan"),
    ({"command": ["vllm", "--additional-config", "{bad"]}, "not valid JSON"),
    ({"env": {"BAD NAME": "x"}}, "not a valid environment variable name"),
]


@pytest.mark.parametrize("extra, needle", WRAPPER_BAD, ids=[json.dumps(e) for e, dummy in WRAPPER_BAD])
def test_wrapper_bad_inputs_fail_cleanly(tmp_path, extra, needle):
    result = call_module("vllm_launch_wrapper", wrapper_args(tmp_path, **extra))
    assert result.get("failed") and needle in result["msg"], result
    assert "exception" not in result and "Traceback" not in result["msg"]
    assert os.listdir(str(tmp_path)) == []


def test_wrapper_symlinked_dest_refused_nothing_written(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "usr" / "local" / "lib").mkdir(parents=True)
    os.symlink(str(elsewhere), str(tmp_path / "usr" / "local" / "lib" / "npuops"))
    result = call_module("vllm_launch_wrapper", wrapper_args(tmp_path))
    assert result.get("failed") and "symlink" in result["msg"], result
    assert os.listdir(str(elsewhere)) == []
    assert not (tmp_path / "etc").exists()


FACTS_BAD = [
    (None, {"snapshot": "/nonexistent/snap"}, "snapshot directory /nonexistent/snap does not exist"),
    ("schema: 1\ncommands: {a: [}\n", {}, "snapshot.yml line 2"),
    ("schema: 7\n", {}, "unsupported schema 7"),
    (None, {"timeout": 0}, "timeout must be a positive"),
]


@pytest.mark.parametrize("setup, args, words", FACTS_BAD, ids=[w for dummy, dummy2, w in FACTS_BAD])
def test_facts_failures_are_clear_messages(tmp_path, setup, args, words):
    if setup is not None:
        (tmp_path / "snapshot.yml").write_text(setup)
        args = dict(args, snapshot=str(tmp_path))
    res = call_module("npu_topology_facts", args)
    assert res["failed"] is True and words in res["msg"], res
    assert "exception" not in res and "Traceback" not in json.dumps(res)
