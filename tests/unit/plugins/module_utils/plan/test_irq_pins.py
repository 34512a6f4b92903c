# -*- coding: utf-8 -*-
"""plan/irq_pins: the IRQs a plan pins. On every recorded host the report's count (from the
facts alone) and what npu_irq_affinity would write (apply/irq.plan_targets reading the host)
are the same IRQs, devices and roles."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import irq
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch, irq_pins
from npuops_testing import SNAPSHOTS

HOSTS = sorted(d for d in os.listdir(SNAPSHOTS) if os.path.isdir(os.path.join(SNAPSHOTS, d)))


@pytest.mark.parametrize("host", HOSTS)
def test_report_and_apply_pin_the_same_irqs(host):
    io = hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host))
    facts = topology.gather(io)
    # h100-cgroup's facts were read in a 1-CPU cgroup: plan over its online CPUs
    plan = dispatch.make_plan(facts, allowed_cpus=facts["cpu"]["online"])
    pinned, unknown = irq_pins.pinned_from_facts(plan, facts)
    targets, skipped, _warnings = irq.plan_targets(plan, facts, io=io)
    applied = sorted((t["irq"], t["device"], t["role"]) for t in targets)
    if unknown:  # apply looks those up on the host: it pins at least what the facts know
        assert set(pinned) <= set(applied)
    else:
        assert sorted(pinned) == applied
    assert (skipped is not None) is (not irq_pins.has_irq_step(plan) or plan["skipped"])


def test_roles_and_claims():
    assert irq_pins.npu_roles(10, [12, 13], [4, 5]) == [(10, "sq", 4), (12, "cq", 5), (13, "cq1", 5)]
    assert irq_pins.npu_roles(None, [12], [4]) == [(12, "cq", 4)]
    assert irq_pins.npu_known_irqs({"sq": 1, "cq": 2}) == (1, [2])
    assert irq_pins.npu_known_irqs({"sq": 1, "cq": 2, "cq_all": [2, 3]}) == (1, [2, 3])
    assert irq_pins.npu_known_irqs(None) == (None, [])
    plan = {"gpus": {"0": {"nic": "b"}, "1": {"nic": "a"}, "2": {"nic": "b"}, "10": {"nic": "c"}}}
    assert irq_pins.nic_claims(plan, ["2", "10", "1", "0"]) == [("b", "0"), ("a", "1"), ("c", "10")]


def test_no_irq_step_on_ascend_950_and_skipped_plans():
    assert not irq_pins.has_irq_step({"mode": "ascend950"})
    assert not irq_pins.has_irq_step({"device_type": "A5", "mode": "topo_affinity"})
    facts = {"npus": [{"logic_id": 0, "irqs": {"sq": 1, "cq": 2}}]}
    plan = {"npus": {"0": {"irq": "0-1"}}, "mode": "topo_affinity"}
    assert irq_pins.pinned_from_facts(plan, facts) == ([(1, "NPU0", "sq"), (2, "NPU0", "cq")], [])
    assert irq_pins.pinned_from_facts(dict(plan, skipped=True), facts) == ([], [])
    assert irq_pins.pinned_from_facts(dict(plan, mode="ascend950"), facts) == ([], [])


def test_malformed_input_pins_nothing_and_never_raises():
    for plan, facts in [
        ({"npus": "x"}, {}),
        ({"npus": {"a": {}, "0": "x"}}, {"npus": "x"}),
        ({"gpus": {"0": {"nic": "m"}}, "vendor": "amd"}, {"nics": [{"name": "m", "irqs": "x"}]}),
    ]:
        pinned, unknown = irq_pins.pinned_from_facts(plan, facts)
        assert pinned == []


def test_scope_instances_keeps_the_devices_instances_use():
    plan = {
        "mode": "topo_affinity",
        "npus": {"0": {"irq": "0-1"}, "1": {"irq": "2-3"}, "2": {"irq": "4-5"}},
        "instances": {"b": {"npus": [2]}, "a": {"npus": [0, 7]}},
    }
    assert irq_pins.scoped_devices(plan, "all") == ["0", "1", "2"]
    # NPU1 serves no instance; NPU7 is not in the plan
    assert irq_pins.scoped_devices(plan, "instances") == ["0", "2"]
    assert irq_pins.scoped_devices(dict(plan, instances={}), "instances") == []
    assert irq_pins.scoped_devices({"mode": "topo_affinity", "npus": plan["npus"]}, "instances") == []
    with pytest.raises(Exception, match="devices: 'some' is not one of instances, all"):
        irq_pins.scoped_devices(plan, "some")
    facts = {"npus": [{"logic_id": i, "irqs": {"sq": 10 * i + 1, "cq": 10 * i + 2}} for i in range(3)]}
    pinned, unknown = irq_pins.pinned_from_facts(plan, facts, scope="instances")
    assert [irq for irq, _label, _role in pinned] == [1, 2, 21, 22] and unknown == []
    assert len(irq_pins.pinned_from_facts(plan, facts)[0]) == 6


def test_scope_instances_gpu_pins_the_nics_of_used_gpus_only():
    plan = {
        "mode": "gpu_numa",
        "vendor": "nvidia",
        "instances": {"a": {"npus": [1]}},
        "gpus": {"0": {"nic": "mlx5_0", "pool": "0-3"}, "1": {"nic": "mlx5_1", "pool": "4-7"}},
    }
    facts = {"nics": [{"name": "mlx5_0", "irqs": [50, 51]}, {"name": "mlx5_1", "irqs": [60, 61]}]}
    pinned, _unknown = irq_pins.pinned_from_facts(plan, facts, scope="instances")
    assert pinned == [(60, "GPU1/mlx5_1", "comp0"), (61, "GPU1/mlx5_1", "comp1")]


@pytest.mark.parametrize("host", ["a2-910b3x8", "dgx-a100"])
def test_plan_targets_scope_on_recorded_hosts(host):
    if not os.path.isdir(os.path.join(SNAPSHOTS, host)):
        pytest.skip("snapshot %s not recorded" % host)
    io = hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host))
    facts = topology.gather(io)
    bare = dispatch.make_plan(facts)
    none, skipped, warnings = irq.plan_targets(bare, facts, io=io, scope="instances")
    assert none == [] and skipped == irq_pins.NO_INSTANCE_NOTE and warnings == []
    every, skipped, _w = irq.plan_targets(bare, facts, io=io, scope="all")
    assert every and skipped is None
    plan = dispatch.make_plan(facts, instances=[{"name": "a", "npus": [0, 1]}])
    used, skipped, _w = irq.plan_targets(plan, facts, io=io, scope="instances")
    assert used and skipped is None
    assert set(int(t["device"][3:].split("/")[0]) for t in used) <= {0, 1}
    assert set(t["irq"] for t in used) < set(t["irq"] for t in every)
