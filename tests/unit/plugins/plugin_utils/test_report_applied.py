# -*- coding: utf-8 -*-
"""The audit's findings take what site.yml applies into account (report/applied.py), on the
recorded A2 host of the README (8 x 910B3, irqbalance active): a fix never asks for what is set."""

import copy

import pytest

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
from npuops_testing.report_fleet import real_fleet


@pytest.fixture(scope="module")
def a2():
    fleet = real_fleet()
    if "a2-910b3x8" not in fleet:
        pytest.fail("tests/snapshots/a2-910b3x8 is missing")
    return fleet["a2-910b3x8"]


def _irqs_of(entry, npus):
    out = []
    for npu in entry["facts"]["npus"]:
        if npu["logic_id"] in npus:  # what npu_irq_affinity pins and bans: every cq vector
            out += [npu["irqs"]["sq"]] + list(npu["irqs"].get("cq_all") or [npu["irqs"]["cq"]])
    return out


def report(entry, config=None, banned=()):
    entry = copy.deepcopy(entry)
    entry["facts"]["irqbalance"]["active"] = True
    entry["facts"]["irqbalance"]["banned_irqs"] = list(banned)
    if config is not None:
        entry["config"] = config
    return analysis.build_report({"a2": entry})


def kinds(rep):
    return dict((p["kind"], p) for p in rep["problems"])


CONFIG = {
    "irqbalance": "ban",
    "irq_enabled": True,
    "binding": "host",
    "npus": [],
    "instances": [{"name": "qwen-a", "npus": [0, 1, 2, 3], "binding": None}],
}


def test_without_the_configuration_the_generic_findings_stay(a2):
    found = kinds(report(a2))
    assert found["irqbalance_running"]["fix"].startswith("set npuops_irqbalance: ban")
    assert "vllm_cross_numa" in found


def test_after_site_the_irqbalance_finding_names_the_npus_in_no_instance(a2):
    found = kinds(report(a2, CONFIG, banned=_irqs_of(a2, [0, 1, 2, 3])))
    irq = found["irqbalance_running"]
    assert irq["severity"] == "info"
    assert "set npuops_irqbalance" not in irq["fix"]
    assert "NPU4, NPU5, NPU6, NPU7 serve no instance" in irq["fix"]
    assert "(NPU0)" not in irq["evidence"] and "(NPU4)" in irq["evidence"]


def test_bans_missing_although_ban_is_set_says_to_run_site_not_to_set_it(a2):
    irq = kinds(report(a2, CONFIG, banned=()))["irqbalance_running"]
    assert irq["severity"] == "warning"
    assert irq["fix"].startswith("npuops_irqbalance is already ban")
    assert "(NPU0)" in irq["evidence"] and "(NPU4)" not in irq["evidence"]


def test_ignore_asks_for_ban_and_says_what_is_set_now(a2):
    config = dict(CONFIG, irqbalance="ignore")
    irq = kinds(report(a2, config, banned=()))["irqbalance_running"]
    assert irq["fix"].startswith("set npuops_irqbalance: ban (now ignore)")


def test_vllm_prediction_is_not_in_effect_for_host_binding(a2):
    rep = report(a2, CONFIG, banned=_irqs_of(a2, [0, 1, 2, 3]))
    found = kinds(rep)
    assert "vllm_cross_numa" not in found
    note = found["vllm_not_in_effect"]
    assert note["severity"] == "info"
    assert "not in effect: qwen-a runs with host binding" in note["evidence"]
    assert rep["summary"]["problems"]["warning"] == 0


def test_vllm_prediction_is_in_effect_for_binding_vllm(a2):
    config = dict(CONFIG, instances=[{"name": "qwen-a", "npus": [0, 1, 2, 3], "binding": "vllm"}])
    found = kinds(report(a2, config, banned=_irqs_of(a2, [0, 1, 2, 3])))
    cross = found["vllm_cross_numa"]
    assert cross["evidence"].startswith("NPU1 home node")  # NPU1, NPU3 of the instance only
    assert "NPU5" not in cross["evidence"]
    assert cross["fix"].startswith("set binding: host on qwen-a")


def test_host_without_instances_irqs_left_to_irqbalance_is_info_with_the_opt_in(a2):
    bare = dict(CONFIG, instances=[])
    irq = kinds(report(a2, bare, banned=()))["irqbalance_running"]
    assert irq["severity"] == "info", irq
    assert "npuops_irq_devices: all" in irq["fix"] and "run site.yml" in irq["fix"]
    # all: site.yml pins every device there, so missing bans are a warning again
    every = kinds(report(a2, dict(bare, irq_devices="all"), banned=()))["irqbalance_running"]
    assert every["severity"] == "warning" and every["fix"].startswith("npuops_irqbalance is already ban")


def test_irq_devices_all_with_instances_still_leaves_unplanned_devices_alone(a2):
    config = dict(CONFIG, irq_devices="all")
    irq = kinds(report(a2, config, banned=_irqs_of(a2, [0, 1, 2, 3])))["irqbalance_running"]
    assert irq["severity"] == "info" and "NPU4, NPU5, NPU6, NPU7 serve no instance" in irq["fix"]
