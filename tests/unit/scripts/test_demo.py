# -*- coding: utf-8 -*-
"""The embedded demo fleet: inventory shape, sandbox builder (scripts/demo_sandbox.py) and
PLAY RECAP parser (scripts/demo_summary.py). `make demo` itself runs in
tests/integration/playbooks/test_demo.py."""

import os

import pytest

# scripts/ is on pytest.ini's pythonpath
import demo_sandbox
import demo_summary

from npuops_testing import REPO, SNAPSHOTS

INVENTORY = os.path.join(REPO, "inventories", "demo", "hosts.yml")
FAMILIES = {"ascend_a2", "ascend_a3", "ascend_a5", "atlas300", "gpu_nodes", "cpu_only"}


def test_inventory_has_a_host_per_snapshot_family_and_group_vars():
    hosts = demo_sandbox.inventory_hosts(INVENTORY)
    assert len(hosts) >= 13 and len({h for h, dummy in hosts}) == len(hosts)
    snaps = {s for dummy, s in hosts}
    assert {
        "a2-910b3x8",
        "a2-designdoc",
        "a3-16die",
        "a5-950",
        "atlas300-310p",
        "a910a-9000",
        "dgx-a100",
        "h100-numaoff",
        "h100-cgroup",
        "pcie-8gpu",
        "x86-none",
        "a2i-910b4x8",
    } <= snaps
    group_vars = os.path.join(REPO, "inventories", "demo", "group_vars")
    assert FAMILIES <= {n[:-4] for n in os.listdir(group_vars) if n.endswith(".yml")}


def test_every_demo_snapshot_exists():
    present = set(os.listdir(SNAPSHOTS)) if os.path.isdir(SNAPSHOTS) else set()
    if not present:
        pytest.fail("tests/snapshots is empty")
    missing = sorted(s for dummy, s in demo_sandbox.inventory_hosts(INVENTORY) if s not in present)
    assert not missing


def test_sandbox_builder_copies_once_and_keeps_what_was_written(tmp_path):
    snaps = tmp_path / "snaps"
    (snaps / "s1" / "fs" / "proc" / "irq" / "5").mkdir(parents=True)
    (snaps / "s1" / "snapshot.yml").write_text("schema: 1\n")
    (snaps / "s1" / "fs" / "proc" / "irq" / "5" / "smp_affinity_list").write_text("0-7\n")
    (snaps / "s2").mkdir()
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  children:\n    g:\n      hosts:\n        h1: {}\n"
        "        h2:\n          npuops_demo_snapshot: s1\n        h3:\n"
        "          npuops_demo_snapshot: s3\n"
    )
    demo = tmp_path / "demo"
    args = ["--inventory", str(inv), "--demo", str(demo), "--snapshots", str(snaps)]
    assert demo_sandbox.main(args + ["--hosts", "h2"]) == 0
    irq = demo / "h2" / "root" / "proc" / "irq" / "5" / "smp_affinity_list"
    assert irq.read_text() == "0-7\n" and (demo / "h2" / "root" / "etc").is_dir()
    irq.write_text("2-3\n")
    assert demo_sandbox.main(args + ["--hosts", "h2"]) == 0
    assert irq.read_text() == "2-3\n"  # kept: a second demo run starts from the first one
    assert demo_sandbox.main(args) == 1  # h1 and h3 have no snapshot
    assert demo_summary.written_files(str(demo / "h2" / "root"), str(snaps / "s1" / "fs")) == [
        "/proc/irq/5/smp_affinity_list"
    ]


def test_recap_parser():
    text = (
        "PLAY RECAP ****\nh1 : ok=7 changed=2 unreachable=0 failed=0 skipped=1 "
        "rescued=0 ignored=0\nh-2                : ok=3    changed=0    unreachable=0    "
        "failed=1    skipped=0    rescued=0    ignored=0\n"
    )
    assert demo_summary.parse_recap(text) == {
        "h1": {"ok": 7, "changed": 2, "unreachable": 0, "failed": 0},
        "h-2": {"ok": 3, "changed": 0, "unreachable": 0, "failed": 1},
    }
