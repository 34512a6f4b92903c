# -*- coding: utf-8 -*-
"""npu_irq_affinity through a real ansible-playbook, on a sandbox root."""

import json
import os

import pytest

from npuops_testing.runner import run_module
from npuops_testing.sandbox import irq_sandbox

pytestmark = pytest.mark.slow

BUS = {"0": "0000:c1:00.0", "1": "0000:01:00.0"}
INTERRUPTS = """           CPU0       CPU1       CPU2       CPU3
 100:        120          0          0          3  ITS-MSI 12582912 Edge      sq_send_trigger_irq
 101:          0          0          0          0  ITS-MSI 12582913 Edge      dfx_irq
 102:       4000          0          0          0  ITS-MSI 12582914 Edge      cq_update_irq
 200:          9          0          0          0  ITS-MSI 524288 Edge      sq_send_trigger_irq
 201:          9          0          0          0  ITS-MSI 524289 Edge      cq_update_irq
"""
MSI = {BUS["0"]: [100, 101, 102], BUS["1"]: [200, 201]}
PLAN = {
    "mode": "topo_affinity",
    "device_type": "A2",
    "skipped": False,
    "npus": {
        "0": {"pool": "2-3", "numa_nodes": [1], "irq": "2-3", "main": "3"},
        "1": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "1"},
    },
}
TOPOLOGY = {
    "npus": [{"logic_id": 0, "bus_id": BUS["0"]}, {"logic_id": 1, "bus_id": BUS["1"]}],
    "irqbalance": {"installed": True, "active": True},
}
DEFAULT_IRQBALANCE = '#IRQBALANCE_ONESHOT=\nIRQBALANCE_ARGS="--journal"\n'


def make_root(tmp_path):
    root = irq_sandbox(tmp_path / "root", INTERRUPTS, MSI)
    (root / "etc" / "default").mkdir(parents=True)
    (root / "etc" / "default" / "irqbalance").write_text(DEFAULT_IRQBALANCE)
    return root


def affinity(root, number):
    return (root / "proc" / "irq" / str(number) / "smp_affinity_list").read_text().strip()


def args(root, **extra):
    base = {"plan": PLAN, "topology": TOPOLOGY, "host_root": str(root)}
    base.update(extra)
    return base


def test_written_per_plan_then_unchanged(tmp_path):
    root = make_root(tmp_path)
    first = run_module("npu_irq_affinity", args(root), diff=True)
    assert not first.get("failed"), first
    assert first["changed"] is True
    assert first["changed_irqs"] == [
        "100 (NPU0 sq): 0-3 -> 2",
        "102 (NPU0 cq): 0-3 -> 3",
        "200 (NPU1 sq): 0-3 -> 0",
        "201 (NPU1 cq): 0-3 -> 1",
    ]
    assert [affinity(root, n) for n in (100, 101, 102, 200, 201)] == ["2", "0-3", "3", "0", "1"]
    irq_diff, config_diff, state_diff = first["diff"]
    # the IRQ state the reconcilers pin back from
    state = json.loads((root / "var/lib/npuops/irq-state.json").read_text())
    assert [(r["irq"], r["device"], r["cpus"]) for r in state["irqs"]] == [
        (100, 0, "2"),
        (102, 0, "3"),
        (200, 1, "0"),
        (201, 1, "1"),
    ]
    assert first["irq_state"] == "/var/lib/npuops/irq-state.json" and state_diff["after"]
    assert "IRQ 100 (NPU0 sq): 0-3\n" in irq_diff["before"]
    assert "IRQ 100 (NPU0 sq): 2\n" in irq_diff["after"]
    config = (root / "etc" / "default" / "irqbalance").read_text()
    assert 'IRQBALANCE_ARGS="--journal --banirq=100 --banirq=102 --banirq=200 --banirq=201"' in config
    assert config.startswith("#IRQBALANCE_ONESHOT=\n")
    assert config_diff["after"] == config
    assert first["irqbalance_config"] == "/etc/default/irqbalance"
    assert first["irqbalance_restart_needed"] is True

    second = run_module("npu_irq_affinity", args(root))
    assert second["changed"] is False and second["changed_irqs"] == []
    assert second["irqbalance_restart_needed"] is False


def test_check_mode_writes_nothing(tmp_path):
    root = make_root(tmp_path)
    result = run_module("npu_irq_affinity", args(root), check=True, diff=True)
    assert result["changed"] is True and len(result["changed_irqs"]) == 4
    assert [affinity(root, n) for n in (100, 102, 200, 201)] == ["0-3"] * 4
    assert (root / "etc" / "default" / "irqbalance").read_text() == DEFAULT_IRQBALANCE


def test_not_writable_fails_with_message_and_writes_nothing(tmp_path):
    root = make_root(tmp_path)
    os.chmod(str(root / "proc" / "irq" / "201" / "smp_affinity_list"), 0o444)
    result = run_module("npu_irq_affinity", args(root))
    assert result.get("failed")
    assert "/proc/irq is not writable" in result["msg"] and "nothing was written" in result["msg"]
    assert [affinity(root, n) for n in (100, 102, 200, 201)] == ["0-3"] * 4
    assert (root / "etc" / "default" / "irqbalance").read_text() == DEFAULT_IRQBALANCE


def test_stop_mode_and_ascend950_skip(tmp_path):
    root = make_root(tmp_path)
    stop = run_module("npu_irq_affinity", args(root, irqbalance="stop", npus=[1]))
    assert stop["irqbalance_stop_needed"] is True and stop["irqbalance_config"] is None
    assert [affinity(root, n) for n in (100, 200, 201)] == ["0-3", "0", "1"]
    assert (root / "etc" / "default" / "irqbalance").read_text() == DEFAULT_IRQBALANCE

    a5 = dict(PLAN, mode="ascend950", device_type="A5")
    skipped = run_module("npu_irq_affinity", args(root, plan=a5))
    assert skipped["changed"] is False and "Ascend 950" in skipped["skipped"]


def with_instances(**instances):
    return dict(PLAN, instances=dict((name, {"npus": npus}) for name, npus in instances.items()))


def banned(root):
    text = (root / "etc" / "default" / "irqbalance").read_text()
    return [line for line in text.splitlines() if line.startswith(("IRQBALANCE_ARGS=", "# npuops"))]


def state_rows(root):
    state = json.loads((root / "var/lib/npuops/irq-state.json").read_text())
    return [(r["irq"], r["device"]) for r in state["irqs"]]


def test_devices_instances_pins_what_instances_use_and_takes_the_rest_back(tmp_path):
    root = make_root(tmp_path)
    both = run_module("npu_irq_affinity", args(root, plan=with_instances(a=[0], b=[1]), devices="instances"))
    assert both["changed"] is True and len(both["changed_irqs"]) == 4, both
    assert state_rows(root) == [(100, 0), (102, 0), (200, 1), (201, 1)]

    # instance b is gone: NPU1's bans and state rows are taken back, NPU0's stay
    one = run_module("npu_irq_affinity", args(root, plan=with_instances(a=[0]), devices="instances"), diff=True)
    assert one["changed"] is True and one["changed_irqs"] == [], one
    assert [r["device"] for r in one["irqs"]] == ["NPU0", "NPU0"]
    assert banned(root) == [
        "# npuops.fleet banned IRQs: 100 102",
        'IRQBALANCE_ARGS="--journal --banirq=100 --banirq=102"',
    ]
    assert state_rows(root) == [(100, 0), (102, 0)]
    assert (
        run_module("npu_irq_affinity", args(root, plan=with_instances(a=[0]), devices="instances"))["changed"] is False
    )

    # no instance: nothing pinned, one line says why and how to opt in, the rest taken back
    bare = args(root, plan=PLAN, devices="instances")
    check = run_module("npu_irq_affinity", bare, check=True, diff=True)
    assert check["changed"] is True and state_rows(root) == [(100, 0), (102, 0)]
    none = run_module("npu_irq_affinity", bare, diff=True)
    assert none["changed"] is True and none["irqs"] == [] and none["changed_irqs"] == []
    # a task with a skipped reason would be counted skipped, not changed
    assert none["skipped"] is None
    note = none["warnings"][0]
    assert len(none["warnings"]) == 1 and note.startswith("No IRQ pinned: no vLLM instance")
    assert "npuops_irq_devices: all" in note and len(note) < 160
    assert banned(root) == ["# npuops.fleet banned IRQs: ", 'IRQBALANCE_ARGS="--journal"']
    assert state_rows(root) == []
    again = run_module("npu_irq_affinity", bare)
    assert again["changed"] is False and again["irqbalance_restart_needed"] is False
    assert again["skipped"] == note

    # all: every planned device, as before
    every = run_module("npu_irq_affinity", args(root, plan=PLAN, devices="all"))
    assert every["changed"] is True and len(every["irqs"]) == 4


def test_devices_instances_on_a_fresh_host_without_instances_writes_nothing(tmp_path):
    root = make_root(tmp_path)
    result = run_module("npu_irq_affinity", args(root, devices="instances"))
    assert result["changed"] is False and result["irqs"] == [], result
    assert [affinity(root, n) for n in (100, 102, 200, 201)] == ["0-3"] * 4
    assert (root / "etc" / "default" / "irqbalance").read_text() == DEFAULT_IRQBALANCE
    assert not (root / "var/lib/npuops/irq-state.json").exists()
