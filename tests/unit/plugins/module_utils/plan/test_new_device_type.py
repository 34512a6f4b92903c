# -*- coding: utf-8 -*-
"""A new Ascend chip is one row of parse/device_type.TABLE plus its fixtures.

A made-up chip is added to the table - and nothing else is changed - then its host flows from
the facts (a recorded snapshot whose npu-smi names and PCI ids are the new chip's) through both
policies, the IRQ step and the soft-share rules. A row that copies an existing type's facts
gives that type's plans; a field that differs changes what it governs.
"""

import os
import shutil

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import irq
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import SoftShareError
from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import SnapshotHostIO
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules, topology
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.module_utils.softshare import plugin_config

SNAPSHOTS = os.path.join(
    os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    ),
    "tests",
    "snapshots",
)


def _like(name, new_name, **changes):
    """A row with ``name``'s facts, renamed, with ``changes``."""
    base = device_type.row(name)
    fields = dict((key, getattr(base, key)) for key in base.__slots__[1:])
    fields.update(changes)
    return device_type.DeviceType(new_name, **fields)


def _add_rows(monkeypatch, *rows):
    """What adding rows to TABLE does (the derived lookups follow the table)."""
    table = device_type.TABLE[:-1] + tuple(rows) + device_type.TABLE[-1:]
    monkeypatch.setattr(device_type, "TABLE", table)
    monkeypatch.setattr(device_type, "BY_NAME", dict((r.name, r) for r in table))
    monkeypatch.setattr(device_type, "TYPES", tuple(r.name for r in table))


def _host(tmp_path, snapshot, replace):
    """Facts of ``snapshot`` with every text in ``replace`` swapped in its files."""
    root = str(tmp_path / snapshot)
    shutil.copytree(os.path.join(SNAPSHOTS, snapshot), root)
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path) as handle:
                text = handle.read()
            new = text
            for old, repl in replace:
                new = new.replace(old, repl)
            if new != text:
                with open(path, "w") as handle:
                    handle.write(new)
    return topology.gather(SnapshotHostIO(root))


def _facts(snapshot):
    return topology.gather(SnapshotHostIO(os.path.join(SNAPSHOTS, snapshot)))


def _same_but_type(plan, other):
    """``plan`` equals ``other`` but for the device type named in it."""
    assert plan["device_type"] != other["device_type"]
    left = dict(plan, device_type=None, warnings=[w.replace(plan["device_type"], "?") for w in plan["warnings"]])
    right = dict(other, device_type=None, warnings=[w.replace(other["device_type"], "?") for w in other["warnings"]])
    assert left == right


X9 = dict(new_name="X9", label="Ascend X9", pci_ids=("d8f2",), names=r"X9", precedence=35)


def test_a_split_chip_like_a2_plans_like_a2(tmp_path, monkeypatch):
    _add_rows(monkeypatch, _like("A2", **X9))
    facts = _host(tmp_path, "a2-910b3x8", [("910B3", "X9B3"), ("0xd802", "0xd8f2")])
    assert facts["device_type"] == "X9"
    assert "PCI device 19e5:d8f2 -> X9" in facts["device_type_evidence"]
    assert "chip name 'X9B3' -> X9" in facts["device_type_evidence"]
    assert facts["softshare"] == rules.softshare_capacity(facts["npus"], "A2")
    a2 = _facts("a2-910b3x8")
    for policy in ("strict", "vllm_ascend"):
        plan = dispatch.make_plan(facts, policy=policy, vllm_ascend_version="0.30.0rc1")
        _same_but_type(plan, dispatch.make_plan(a2, policy=policy, vllm_ascend_version="0.30.0rc1"))
    # the option takes the new name too (the module's choices are the table's names)
    plan = dispatch.make_plan(a2, device_type="X9")
    assert plan["device_type"] == "X9" and plan["mode"] == "topo_affinity"
    targets, skipped, _warnings = irq.plan_targets(dispatch.make_plan(facts), facts)
    assert skipped is None and targets
    assert plugin_config.validate_plugin_config("/var/lib/softshare", "X9", "26.0.0")["device_type"] == "X9"


def test_each_field_of_a_split_chip_governs(tmp_path, monkeypatch):
    _add_rows(
        monkeypatch, _like("A2", vllm_mode="global_slice", vllm_profiled=False, softshare=False, dies_per_npu=2, **X9)
    )
    facts = _host(tmp_path, "a2-910b3x8", [("910B3", "X9B3"), ("0xd802", "0xd8f2")])
    assert facts["device_type"] == "X9"
    # two dies per NPU: without single-die mode a package is one chip
    assert rules.softshare_capacity(facts["npus"], "X9", single_die_mode=False) == rules.softshare_capacity(
        facts["npus"], "A3", single_die_mode=False
    )
    # vllm-ascend's mode for the type (A3's global slices), before the releases with profiles
    plan = dispatch.make_plan(facts, policy="vllm_ascend", vllm_ascend_version="0.26.0rc1")
    assert plan["mode"] == "global_slice"
    # not profiled: 0.27.1rc1 on fail at import
    plan = dispatch.make_plan(facts, policy="vllm_ascend", vllm_ascend_version="0.30.0rc1")
    assert plan["skipped"] and "No hardware profile is registered for device type: X9" in plan["reason"]
    with pytest.raises(SoftShareError, match="supported on Atlas A2 and A3 inference hosts only"):
        plugin_config.validate_plugin_config("/var/lib/softshare", "X9", "26.0.0")


X7 = dict(new_name="X7", label="Ascend X7", pci_ids=(), names=r"X7", precedence=5)


def test_a_cluster_chip_like_a5_plans_like_a5(tmp_path, monkeypatch):
    _add_rows(monkeypatch, _like("A5", **X7))
    facts = _host(tmp_path, "a5-950", [("Ascend950DT", "AscendX7DT")])
    assert facts["device_type"] == "X7"
    a5 = _facts("a5-950")
    for policy in ("strict", "vllm_ascend"):
        plan = dispatch.make_plan(facts, policy=policy, vllm_ascend_version="0.30.0rc1")
        _same_but_type(plan, dispatch.make_plan(a5, policy=policy, vllm_ascend_version="0.30.0rc1"))
    plan = dispatch.make_plan(facts)
    assert plan["mode"] == "ascend950"
    targets, skipped, _warnings = irq.plan_targets(plan, facts)
    assert targets == [] and skipped == "IRQ binding skipped on Ascend X7 (no IRQ roles in its plan)"


def _with_affinity(facts):
    """The 950 snapshots' topo matrix has no CPU Affinity column: NPU n on node 1 + n % 3
    (NUMA0 holds vllm-ascend's UVB pool)."""
    nodes = facts["cpu"]["numa_nodes"]
    for npu in facts["npus"]:
        npu["affinity"] = nodes[str(1 + npu["logic_id"] % 3)]
    return facts


def test_the_cluster_size_is_the_rows(tmp_path, monkeypatch):
    _add_rows(monkeypatch, _like("A5", cluster_cores=4, **X7))
    facts = _with_affinity(_host(tmp_path, "a5-950", [("Ascend950DT", "AscendX7DT")]))
    a5 = _with_affinity(_facts("a5-950"))
    tpc = facts["cpu"]["threads_per_core"]
    for policy in ("strict", "vllm_ascend"):
        plan = dispatch.make_plan(facts, policy=policy, vllm_ascend_version="0.30.0rc1")
        eights = dispatch.make_plan(a5, policy=policy, vllm_ascend_version="0.30.0rc1")
        assert plan["mode"] == eights["mode"] == "ascend950"
        assert not plan["skipped"] and sorted(plan["npus"]) == sorted(eights["npus"])
        for key, entry in plan["npus"].items():
            size = len(_cpus(entry["pool"]))
            assert size % (4 * tpc) == 0, (policy, key, entry["pool"])
            assert len(_cpus(eights["npus"][key]["pool"])) % (8 * tpc) == 0
            if policy == "vllm_ascend":
                # vllm-ascend gives each NPU one cluster: the row's size, not the 950's
                assert size == 4 * tpc
                assert len(_cpus(eights["npus"][key]["pool"])) == 8 * tpc
    strict = dispatch.make_plan(facts)
    # the UVB set is one whole cluster of the row's size
    assert len(_cpus(strict["uvb"])) == 4 * tpc


def _cpus(text):
    return cpulist.parse(text)
