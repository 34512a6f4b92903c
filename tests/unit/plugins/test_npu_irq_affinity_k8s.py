# -*- coding: utf-8 -*-
"""npu_irq_affinity with reserved_cpus (Kubernetes nodes) on the recorded DGX A100 sandbox: NIC
IRQs land on the kubelet's reserved CPUs of their node, irqbalance is banned from every other CPU."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from ansible_collections.npuops.fleet.plugins.modules import npu_irq_affinity as mod
from npuops_testing import SNAPSHOTS


class FakeModule(object):
    def __init__(self, params, check_mode=False):
        self.params, self.check_mode = params, check_mode


def test_dgx_nic_irqs_onto_reserved_and_irqbalance_banned_elsewhere(tmp_path):
    snap = os.path.join(SNAPSHOTS, "dgx-a100")
    if not os.path.isfile(os.path.join(snap, "snapshot.yml")):
        pytest.fail("tests/snapshots/dgx-a100 is missing")
    facts = topology.gather(hostio.SnapshotHostIO(snap))
    plan = make_plan(facts)
    reserved = kubelet_profile(facts, plan)["reserved_cpus"]
    root = tmp_path / "root"
    snapshot.copy_host_tree(snap, str(root))
    (root / "etc/default").mkdir(parents=True, exist_ok=True)
    (root / "etc/default/irqbalance").write_text("#IRQBALANCE_ARGS=\n")
    params = dict(
        plan=plan,
        topology=facts,
        npus=None,
        irqbalance="ban",
        irq_state=None,
        allow_foreign_plan=True,
        host_root=str(root),
        reserved_cpus=reserved,
    )
    result = mod.pin_irqs(FakeModule(params))
    assert result["irqs"], result["warnings"]
    reserved_set = set(cpulist.parse(reserved))
    node_of = dict((c, int(n)) for n, text in facts["cpu"]["numa_nodes"].items() for c in cpulist.parse(text))
    nic_node = dict((n["name"], n["numa_node"]) for n in facts["nics"])
    for row in result["irqs"]:
        cpus = cpulist.parse(row["after"])
        assert set(cpus) <= reserved_set, row
        assert node_of[cpus[0]] == nic_node[row["device"].split("/")[1]], row
    text = (root / "etc/default/irqbalance").read_text()
    banned = [line for line in text.splitlines() if line.startswith("IRQBALANCE_BANNED_CPULIST=")]
    assert banned == ["IRQBALANCE_BANNED_CPULIST=%s" % kubelet_profile(facts, plan)["banned_cpus"]]
    assert mod.pin_irqs(FakeModule(params))["changed"] is False
