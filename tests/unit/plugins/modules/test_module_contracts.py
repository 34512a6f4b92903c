# -*- coding: utf-8 -*-
"""The module contracts (changed, check mode, diff mode, the error shape, a second run changes
nothing) for every module, from the data in cases/module_contracts.yml, run in-process."""

import os
import re

import pytest
import yaml

from npuops_testing import fixture_text
from npuops_testing.module_harness import call_module, expand
from npuops_testing.sandbox import irq_sandbox

CASES = yaml.safe_load(open(os.path.join(os.path.dirname(__file__), "cases", "module_contracts.yml")))["cases"]
MODULES = sorted(
    n[:-3]
    for n in os.listdir(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "modules"))
    if n.endswith(".py")
)

BUS = {"0": "0000:c1:00.0", "1": "0000:01:00.0"}
INTERRUPTS = """           CPU0       CPU1       CPU2       CPU3
 100:        120          0          0          3  ITS-MSI 12582912 Edge      sq_send_trigger_irq
 102:       4000          0          0          0  ITS-MSI 12582914 Edge      cq_update_irq
 200:          9          0          0          0  ITS-MSI 524288 Edge      sq_send_trigger_irq
 201:          9          0          0          0  ITS-MSI 524289 Edge      cq_update_irq
"""
NAMED = {
    "@irq_plan": {
        "mode": "topo_affinity",
        "device_type": "A2",
        "skipped": False,
        "npus": {
            "0": {"pool": "2-3", "numa_nodes": [1], "irq": "2-3", "main": "3"},
            "1": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "1"},
        },
    },
    "@irq_topology": {
        "npus": [{"logic_id": 0, "bus_id": BUS["0"]}, {"logic_id": 1, "bus_id": BUS["1"]}],
        "irqbalance": {"installed": True, "active": True},
    },
    "@wrapper_plan": {
        "policy": "strict",
        "mode": "topo_affinity",
        "device_type": "A2",
        "skipped": False,
        "numa_nodes": {"0": "0-1"},
        "npus": {"0": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "0", "acl": "1", "release": "0"}},
        "instances": {"svc": {"npus": [0], "env": {}}},
    },
}


def _setup(kind, tmp_path):
    root = tmp_path / "root"
    if kind == "irq_host":
        irq_sandbox(root, INTERRUPTS, {BUS["0"]: [100, 102], BUS["1"]: [200, 201]})
        (root / "etc" / "default").mkdir(parents=True)
        (root / "etc" / "default" / "irqbalance").write_text('IRQBALANCE_ARGS="--journal"\n')
    elif kind == "partition_host":  # the runtime masks a partition writes, all CPUs set
        for rel in ("sys/devices/virtual/workqueue/cpumask", "proc/irq/default_smp_affinity"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("ffffffff,ffffffff,ffffffff,ffffffff,ffffffff,ffffffff\n")
    elif kind == "empty_host":
        (root / "etc").mkdir(parents=True)
    elif kind == "kubelet_host":  # kubeadm's kubelet config and unit drop-in (real formats)
        (root / "var/lib/kubelet").mkdir(parents=True)
        (root / "var/lib/kubelet/config.yaml").write_text(
            fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml")
        )
        unit_dir = root / "usr/lib/systemd/system/kubelet.service.d"
        unit_dir.mkdir(parents=True)
        (unit_dir / "10-kubeadm.conf").write_text(fixture_text("kubernetes/10-kubeadm.conf"))


def _tree(path):
    out = []
    for dirpath, dirnames, files in os.walk(str(path)):
        dirnames.sort()
        for name in sorted(dirnames + files):
            full = os.path.join(dirpath, name)
            with_content = open(full, "rb").read() if os.path.isfile(full) else None
            out.append((os.path.relpath(full, str(path)), with_content))
    return out


def _args(case, tmp_path):
    args = dict((k, NAMED.get(v, v) if isinstance(v, str) else v) for k, v in case["args"].items())
    return expand(args, tmp_path)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_module_contract(case, tmp_path):
    _setup(case.get("setup"), tmp_path)
    args = _args(case, tmp_path)
    before = _tree(tmp_path)
    result = call_module(case["module"], args, check=case.get("check", False), diff=case.get("diff", False))
    want = case["expected"]
    assert bool(result.get("failed")) is want.get("failed", False), result.get("msg")
    if "changed" in want:
        assert result["changed"] is want["changed"]
    if "msg" in want:
        assert re.search(want["msg"], result["msg"]), result["msg"]
        assert "Traceback" not in result["msg"]
    for key in want.get("keys", []):
        assert key in result, key
    for key in want.get("absent", []):
        assert key not in result, key
    if want.get("diff") is True:
        assert result.get("diff"), "diff mode shows no diff"
    elif want.get("diff") is False:
        assert "diff" not in result, "a diff outside diff mode"
    if want.get("written") is False:
        assert _tree(tmp_path) == before
    if want.get("root_untouched"):
        assert _tree(tmp_path) == before
    if want.get("again"):
        second = call_module(case["module"], args)
        assert not second.get("failed"), second.get("msg")
        assert second["changed"] is False, "a second run changed something"


def test_every_module_has_contract_cases():
    covered = set(c["module"] for c in CASES)
    assert sorted(covered) == MODULES
    for name in MODULES:
        kinds = [c for c in CASES if c["module"] == name]
        assert any(c["expected"].get("failed") for c in kinds), "%s: no error case" % name
        assert any(c.get("check") for c in kinds), "%s: no check-mode case" % name
