# -*- coding: utf-8 -*-
"""Where npu-smi printed a table the parsers cannot read, the facts say so (an Ascend host,
an error naming the table) and the plan fails naming it: never ``vendor: none`` and a skipped
binding. A host without CPU facts gets a plan error naming what is missing, not options the
user never gave."""

import copy
import os
import shutil

import pytest

from npuops_testing import SNAPSHOTS
from npuops_testing.module_harness import facts_of
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema, topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis


def _unreadable_host(tmp_path):
    """The real a2-910b3x8 host whose npu-smi info and -m print tables of an unknown shape."""
    path = str(tmp_path / "host")
    shutil.copytree(os.path.join(SNAPSHOTS, "a2-910b3x8"), path)
    info = os.path.join(path, "cmd", "npu-smi-info.txt")
    with open(info) as handle:
        text = handle.read()
    with open(info, "w") as handle:
        handle.write(text.replace("| NPU", "| XPU"))
    with open(os.path.join(path, "cmd", "npu-smi-info--m.txt"), "w") as handle:
        handle.write("Logic  Card  Name\n0 0 Ascend910B3\n")
    return topology.gather(hostio.SnapshotHostIO(path))


def test_unreadable_npu_smi_is_an_ascend_host_with_an_error(tmp_path):
    facts = _unreadable_host(tmp_path)
    schema.check_topology(facts)
    assert facts["vendor"] == "ascend" and facts["npus"] == []
    sources = [e["source"] for e in facts["errors"]]
    assert "npu-smi info" in sources and "npu-smi info -m" in sources and "npu-smi" in sources
    with pytest.raises(PlanError) as err:
        dispatch.make_plan(facts, policy="strict")
    assert "Ascend host whose NPUs could not be read" in str(err.value)
    assert "no device table" in str(err.value)


def test_unreadable_npu_smi_is_an_audit_finding(tmp_path):
    facts = _unreadable_host(tmp_path)
    errors = {}
    for policy in ("strict", "vllm_ascend"):
        try:
            dispatch.make_plan(facts, policy=policy)
        except PlanError as err:
            errors[policy] = str(err)
    report = analysis.build_report({"a2": {"facts": facts, "plan_errors": errors}})
    kinds = [(p["kind"], p["evidence"]) for p in report["problems"] if p["host"] == "a2"]
    assert any(k == "facts_error" and "no NPU could be read" in m for k, m in kinds)
    assert any(k == "plan_failed" for k, m in kinds)


def test_a_host_without_npu_smi_output_is_still_none():
    facts = facts_of("x86-none")
    assert facts["vendor"] == "none"
    plan = dispatch.make_plan(facts, policy="strict")
    assert plan["skipped"] and "no NPU" in plan["reason"]


def _without_cpus(host):
    facts = copy.deepcopy(facts_of(host))
    for key in ("allowed", "online", "numa_nodes", "allowed_source"):
        facts["cpu"][key] = None
    return facts


@pytest.mark.parametrize("policy", ["strict", "vllm_ascend"])
def test_ascend_host_without_cpu_facts_names_what_is_missing(policy):
    with pytest.raises(PlanError) as err:
        dispatch.make_plan(_without_cpus("a2-910b3x8"), policy=policy)
    text = str(err.value)
    assert "neither cpu.allowed nor cpu.online" in text
    assert "reserved_cpus" not in text and "allowed_cpus" not in text


def test_reserved_cpus_taking_every_cpu_still_says_so():
    with pytest.raises(PlanError) as err:
        dispatch.make_plan(facts_of("a2-910b3x8"), policy="strict", reserved_cpus="0-191")
    assert "minus reserved_cpus is empty" in str(err.value)


def test_950_host_with_na_bus_ids_gets_a_binding():
    # the real 950DT table (NPU ID column, Bus-Id NA, NPUs 0,1,6,7): NPUs read, a strict plan
    # with a disjoint pool per NPU (it used to fail the parse: no NPU, no binding)
    facts = facts_of("a5-950dt-nabus")
    assert facts["vendor"] == "ascend" and facts["device_type"] == "A5"
    assert [(n["npu_id"], n["logic_id"], n["bus_id"]) for n in facts["npus"]] == [
        (0, 0, None),
        (1, 1, None),
        (6, 6, None),
        (7, 7, None),
    ]
    plan = dispatch.make_plan(facts, policy="strict")
    assert not plan.get("skipped") and sorted(plan["npus"], key=int) == ["0", "1", "6", "7"]
    seen = set()
    for entry in plan["npus"].values():
        cpus = set(cpulist.parse(entry["pool"]))
        assert cpus and not cpus & seen
        seen |= cpus
