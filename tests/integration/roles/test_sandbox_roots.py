# -*- coding: utf-8 -*-
"""Roles with a sandbox root that would mean the real machine: an empty
``npuops_host_root`` (an unset lookup, a typo) and ``<sandbox>/root/../../..`` fail the role at
its first module, before anything is written; a replay of a recorded host with an empty root
used to write this machine's /etc/systemd/system and /usr/local/lib/npuops."""

import os

import pytest

from npuops_testing.fleet import make_fleet, need, play
from npuops_testing.runner import run_playbook

SNAP = "a2-910b3x8"
INSTANCE = {
    "name": "npuops-root-test",
    "npus": [0, 1],
    "command": ["vllm", "serve", "/models/x", "--tensor-parallel-size", "2"],
}
REAL = ["/usr/local/lib/npuops/npuops-root-test-launch", "/etc/systemd/system/vllm-npuops-root-test.service"]


@pytest.mark.slow
def test_an_empty_or_dotted_root_fails_before_anything_is_written(tmp_path):
    need(SNAP)
    if any(os.path.exists(p) for p in REAL):
        pytest.skip("a file of the test instance exists on this machine already")
    inv = make_fleet(
        tmp_path,
        {
            "empty": (SNAP, {"npuops_vllm_instances": [INSTANCE], "npuops_host_root": ""}),
            "dotted": (SNAP, {"npuops_vllm_instances": [INSTANCE]}),
        },
    )
    # the second host's root climbs out of its sandbox
    dotted_root = str(tmp_path / "demo" / "dotted" / "root") + "/../../.."
    text = open(inv).read().replace(str(tmp_path / "demo" / "dotted" / "root") + '"', dotted_root + '"')
    open(inv, "w").write(text)
    proc = run_playbook(
        play(tmp_path, [{"name": "Launch", "ansible.builtin.import_role": {"name": "npuops.fleet.vllm_launch"}}]), inv
    )
    assert proc.returncode != 0
    assert "host_root: '' is not a root" in proc.stdout, proc.stdout
    assert "'..' components are not allowed" in proc.stdout, proc.stdout
    assert not [p for p in REAL if os.path.exists(p)]
    assert not os.path.exists(str(tmp_path / "usr"))
