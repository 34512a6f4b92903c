# -*- coding: utf-8 -*-
"""`make demo` twice over the embedded demo fleet: the second run changes nothing on any host
(PLAY RECAP parsed)."""

import os
import subprocess

import pytest

# scripts/ is on pytest.ini's pythonpath
import demo_sandbox
import demo_summary

from npuops_testing import REPO, SNAPSHOTS
from npuops_testing.runner import ansible_env

INVENTORY = os.path.join(REPO, "inventories", "demo", "hosts.yml")


@pytest.mark.slow
def test_make_demo_twice_changes_nothing_the_second_time(tmp_path):
    hosts = demo_sandbox.inventory_hosts(INVENTORY)
    if not all(os.path.isfile(os.path.join(SNAPSHOTS, s, "snapshot.yml")) for dummy, s in hosts):
        pytest.skip("tests/snapshots not complete yet")
    env = ansible_env(NPUOPS_DEMO_DIR=str(tmp_path / "demo"), DEMO_FORKS="4")
    script = os.path.join(REPO, "scripts", "demo.sh")
    runs = []
    for dummy in range(2):
        proc = subprocess.run(["bash", script], env=env, cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False)
        assert proc.returncode == 0, proc.stdout
        with open(str(tmp_path / "demo" / "site.log")) as handle:
            runs.append((proc.stdout, demo_summary.parse_recap(handle.read())))
    (out1, first), (out2, second) = runs
    names = {h for h, dummy in hosts}
    assert set(first) == names and set(second) == names
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in first.values())
    assert sum(r["changed"] for r in first.values()) > 0
    assert {h: r["changed"] for h, r in second.items()} == {h: 0 for h in names}
    for host in names:
        assert "| %s |" % host in out2
    assert "a2-910b3x8 " in out2 and "topo_affinity" in out2 and "gpu_numa" in out2
