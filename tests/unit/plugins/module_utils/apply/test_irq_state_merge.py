# -*- coding: utf-8 -*-
"""npu_irq_affinity with ``npus:`` (one instance's devices) merges into the IRQ state file
(several instances on one host): a second instance's call used to replace the file, erasing the first instance's
IRQs from its reconciler. Real files in a sandbox root, through the module's body."""

import json

from ansible_collections.npuops.fleet.plugins.module_utils.render import irqbalance
from ansible_collections.npuops.fleet.plugins.modules import npu_irq_affinity
from npuops_testing.sandbox import irq_sandbox

NPU0_BUS, NPU1_BUS = "0000:c1:00.0", "0000:01:00.0"
INTERRUPTS = """           CPU0       CPU1       CPU2       CPU3
 100:        120          0          0          3  ITS-MSI 12582912 Edge      sq_send_trigger_irq
 102:       4000          0          0          0  ITS-MSI 12582914 Edge      cq_update_irq
 200:          9          0          0          0  ITS-MSI 524288 Edge      sq_send_trigger_irq
 201:          9          0          0          0  ITS-MSI 524289 Edge      cq_update_irq
"""
MSI = {NPU0_BUS: [100, 102], NPU1_BUS: [200, 201]}
PLAN = {
    "mode": "topo_affinity",
    "device_type": "A2",
    "skipped": False,
    "numa_nodes": {"0": "0-1", "1": "2-3"},
    "npus": {
        "0": {"pool": "2-3", "numa_nodes": [1], "irq": "2-3", "main": "3"},
        "1": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "1"},
    },
}
TOPOLOGY = {
    "npus": [{"logic_id": 0, "bus_id": NPU0_BUS}, {"logic_id": 1, "bus_id": NPU1_BUS}],
    "irqbalance": {"installed": False},
}
STATE = "/var/lib/npuops/irq-state.json"


class FakeModule(object):
    def __init__(self, **params):
        self.params = dict(
            plan=PLAN,
            topology=TOPOLOGY,
            npus=None,
            irqbalance="ban",
            irq_state=STATE,
            allow_foreign_plan=True,
            host_root="/",
        )
        self.params.update(params)
        self.check_mode = False


def _recorded(root):
    with open(str(root) + STATE) as handle:
        return dict((r["irq"], r["label"]) for r in json.load(handle)["irqs"])


def _cpus(root):
    with open(str(root) + STATE) as handle:
        return dict((r["irq"], r["cpus"]) for r in json.load(handle)["irqs"])


def test_each_instances_call_keeps_the_others_irqs(tmp_path):
    root = irq_sandbox(tmp_path / "root", INTERRUPTS, MSI)
    npu_irq_affinity.pin_irqs(FakeModule(host_root=str(root), npus=[0]))
    assert _recorded(root) == {100: "NPU0", 102: "NPU0"}
    first_cpus = _cpus(root)
    second = npu_irq_affinity.pin_irqs(FakeModule(host_root=str(root), npus=[1]))
    assert second["changed"] and not second["warnings"]
    assert _recorded(root) == {100: "NPU0", 102: "NPU0", 200: "NPU1", 201: "NPU1"}
    assert dict((k, v) for k, v in _cpus(root).items() if k < 200) == first_cpus
    # a rerun of the first instance with another plan replaces its own rows only
    moved = dict(PLAN, npus=dict(PLAN["npus"], **{"0": dict(PLAN["npus"]["0"], irq="3")}))
    npu_irq_affinity.pin_irqs(FakeModule(host_root=str(root), npus=[0], plan=moved))
    assert _recorded(root) == {100: "NPU0", 102: "NPU0", 200: "NPU1", 201: "NPU1"}
    assert _cpus(root)[100] == _cpus(root)[102] == "3"
    again = npu_irq_affinity.pin_irqs(FakeModule(host_root=str(root), npus=[0], plan=moved))
    assert again["changed"] is False
    # the whole plan (no npus) is the whole file
    npu_irq_affinity.pin_irqs(FakeModule(host_root=str(root)))
    assert _recorded(root) == {100: "NPU0", 102: "NPU0", 200: "NPU1", 201: "NPU1"}
    assert _cpus(root)[100] != "3"


def test_a_file_that_is_not_a_state_file_is_replaced_with_a_warning(tmp_path):
    root = irq_sandbox(tmp_path / "root", INTERRUPTS, MSI)
    (root / "var" / "lib" / "npuops").mkdir(parents=True)
    for text in ("{", "[1]", '{"irqs": [{"irq": "1"}]}', '{"irqs": 5}', "[" * 100000):
        (root / "var" / "lib" / "npuops" / "irq-state.json").write_text(text)
        result = npu_irq_affinity.pin_irqs(FakeModule(host_root=str(root), npus=[1]))
        assert any("not an IRQ state file" in w for w in result["warnings"]), text
        assert _recorded(root) == {200: "NPU1", 201: "NPU1"}


def test_merge_state_keeps_rows_of_other_devices_only():
    doc = {"schema": 1, "irqs": [{"irq": 7, "device": 1, "label": "NPU1", "role": "sq", "cpus": "1"}]}
    current = json.dumps(
        {
            "schema": 1,
            "irqs": [
                {"irq": 5, "device": 0, "label": "NPU0", "role": "sq", "cpus": "0"},
                {"irq": 7, "device": 3, "label": "NPU3", "role": "sq", "cpus": "3"},
                {"irq": 9, "device": 1, "label": "NPU1", "role": "cq", "cpus": "1"},
            ],
        }
    )
    merged, problem = irqbalance.merge_state(doc, current, [1])
    assert problem is None and [r["irq"] for r in merged["irqs"]] == [5, 7]
    assert merged["irqs"][1]["label"] == "NPU1"
    assert irqbalance.merge_state(doc, current, None) == (doc, None)
    assert irqbalance.merge_state(doc, None, [1]) == (doc, None)
