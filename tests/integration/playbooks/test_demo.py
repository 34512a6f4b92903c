# -*- coding: utf-8 -*-
"""`make demo` twice over the embedded demo fleet: the second run changes nothing on any host
(PLAY RECAP parsed); the audit after site.yml sees the irqbalance bans site.yml wrote; the
drift loop's perturbation shows as drift in the report and is gone after the reconciler."""

import json
import os
import shutil
import subprocess

import pytest

# scripts/ is on pytest.ini's pythonpath
import demo_sandbox
import demo_summary

from npuops_testing import REPO, SNAPSHOTS, demo_docs
from npuops_testing.runner import ansible_env

INVENTORY = os.path.join(REPO, "inventories", "demo", "hosts.yml")


@pytest.mark.slow
def test_make_demo_twice_changes_nothing_the_second_time(tmp_path):
    hosts = demo_sandbox.inventory_hosts(INVENTORY)
    assert all(os.path.isfile(os.path.join(SNAPSHOTS, s, "snapshot.yml")) for dummy, s in hosts), (
        "a demo host's snapshot is missing from tests/snapshots"
    )
    env = ansible_env(NPUOPS_DEMO_DIR=str(tmp_path / "demo"), DEMO_FORKS="4")
    script = os.path.join(REPO, "scripts", "demo.sh")
    runs = []
    for dummy in range(2):
        proc = subprocess.run(
            ["bash", script],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
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
    demo = tmp_path / "demo"
    _assert_closed_loop(demo, out1, out2)


def _assert_closed_loop(demo, out1, out2):
    with open(str(demo / "report" / "fleet-report.json")) as handle:
        report = json.load(handle)
    hosts = dict((h["name"], h) for h in report["hosts"])
    # site.yml wrote the bans into each sandbox and the audit read them over the snapshot: no
    # irqbalance warning where every pinned IRQ is banned; only h100-cgroup (no strict plan
    # from its cut cpuset, so which IRQs to ban is unknown) keeps it. The standin's NPUs 2-7
    # serve no instance: site.yml leaves their IRQs to irqbalance (npuops_irq_devices:
    # instances), which the report says in an info note, not a warning.
    irq = [p for p in report["problems"] if p["kind"] == "irqbalance_running"]
    assert set(p["host"] for p in irq if p["severity"] != "info") == {"h100-cgroup"}
    assert set(p["host"] for p in irq if p["severity"] == "info") == {"standin"}
    assert hosts["a2-910b3x8"]["irqbalance_bans"]["state"] == "banned"
    if not {0, 1} <= set(os.sched_getaffinity(0)):
        return  # the drift loop needs CPUs 0 and 1
    for out in (out1, out2):
        assert "audit (report/): threads_off_plan NPU0" in out and "irq_moved NPU0: IRQ" in out
        assert "audit after the reconciler (report-after-reconcile/): no drift" in out
    kinds = [g["kind"] for g in report["drift"]]
    assert kinds == ["threads_off_plan", "irq_moved"] and report["summary"]["drift_hosts"] == 1
    # docs/demo.md and docs/audit.md state this report's counts (with the drift loop's standin)
    for page in demo_docs.PAGES:
        assert demo_docs.mismatches(page, report["summary"]) == []
    assert hosts["standin"]["binding"]["state"] == "drifted"
    assert hosts["a2-910b3x8"]["binding"]["state"] == "not_checked"  # a sandbox: nothing runs
    with open(str(demo / "report-after-reconcile" / "fleet-report.json")) as handle:
        after = json.load(handle)
    assert after["drift"] == [] and after["summary"]["binding_checked_hosts"] == 1
    with open(str(demo / "standin.log")) as handle:
        assert demo_summary.parse_recap(handle.read())["standin"]["changed"] == 0  # second run
    prom = demo / "standin" / "root" / "var" / "lib" / "prometheus" / "node-exporter" / "npuops_standin.prom"
    text = prom.read_text()
    assert 'npuops_binding_drift_threads{instance="standin",device="NPU0",role="acl"} 1' in text
    assert 'npuops_irq_drift{instance="standin",device="NPU0",irq="1024"} 1' in text
    promtool = shutil.which("promtool")
    if promtool:
        check = subprocess.run(
            [promtool, "check", "metrics"],
            input=text,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
        assert check.returncode == 0, check.stdout
