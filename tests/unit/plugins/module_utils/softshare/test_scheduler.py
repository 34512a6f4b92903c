# -*- coding: utf-8 -*-
"""Soft-share placement (plugins/module_utils/softshare/scheduler.py): job validation, node
filter, score, chip choice, place. Each table row says where the rule comes from:
``shipped`` = MindCluster 26.x code (device plugin / ascend-for-volcano), ``rfc`` = the RFC text."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SoftShareError
from ansible_collections.npuops.fleet.plugins.module_utils.softshare import scheduler


MEM = 65536


def host(chips=8, hbm=MEM, healths=None, device_type="A2", labels=None):
    healths = healths or ["OK"] * chips
    npus = [
        {"npu_id": i, "chip_id": 0, "logic_id": i, "phy_id": i, "health": healths[i], "hbm_total_mb": hbm}
        for i in range(chips)
    ]
    entry = {"npu_topology": {"device_type": device_type, "npus": npus}}
    if labels is not None:
        entry["node_labels"] = labels
    return entry


def alloc(chip, core, hbm=1024, policy="elastic", host_name="h1", job="other"):
    return {"host": host_name, "chip": chip, "aicore_quota": core, "hbm_quota": hbm, "policy": policy, "job": job}


def job(core=40, hbm=1024, policy="elastic", replicas=1, **extra):
    out = {"name": "svc", "aicore_quota": core, "hbm_quota": hbm, "policy": policy, "replicas": replicas}
    out.update(extra)
    return out


def node(entry, allocations=(), name="svc"):
    return scheduler.node_state("h1", entry, list(allocations), name)


VALIDATION_CASES = [
    # (source, rules, job, error fragment or None)
    ("shipped: aicoreQuota 1 ok", "shipped", job(core=1), None),
    ("shipped: aicoreQuota 100 ok", "shipped", job(core=100), None),
    ("shipped: aicoreQuota 0 rejected", "shipped", job(core=0), "not in range [1,100]"),
    ("shipped: aicoreQuota 101 rejected", "shipped", job(core=101), "not in range [1,100]"),
    ("shipped: hbmQuota 1 MB ok", "shipped", job(hbm=1), None),
    ("shipped: hbmQuota 0 rejected", "shipped", job(hbm=0), "less than 1"),
    ("shipped: unknown policy rejected", "shipped", job(policy="greedy"), "policy 'greedy'"),
    ("shipped: quota not an integer", "shipped", job(core="ten"), "must be an integer"),
    ("shipped: missing hbm", "shipped", {"name": "x", "aicore_quota": 5, "policy": "elastic"}, "hbm_quota is missing"),
    ("shipped+rfc: one vNPU per replica", "shipped", job(vnpus_per_replica=2), "exactly one"),
    (
        "shipped+rfc: replicas share one policy",
        "shipped",
        job(tasks=[{"policy": "elastic"}, {"policy": "best-effort"}]),
        "different policies",
    ),
    ("shipped: request must equal aicoreQuota", "shipped", job(core=40, request=50), "must equal aicore_quota"),
    ("rfc: request wins over the label", "rfc", job(core=40, request=50), None),
    (
        "shipped: job labels accepted",
        "shipped",
        {
            "name": "l",
            "labels": {
                scheduler.JOB_LABEL_AICORE: "30",
                scheduler.JOB_LABEL_HBM: "4096",
                scheduler.JOB_LABEL_POLICY: "fixed-share",
            },
        },
        None,
    ),
    ("shipped: replicas >= 1", "shipped", job(replicas=0), "replicas must be from 1 to 4096, got 0"),
]


@pytest.mark.parametrize("source,rules,spec,error", VALIDATION_CASES, ids=[c[0] for c in VALIDATION_CASES])
def test_validate_job(source, rules, spec, error):
    if error is None:
        got = scheduler.validate_job(spec, rules)
        assert 1 <= got["aicore_quota"] <= 100 and got["policy"] in scheduler.POLICIES
    else:
        with pytest.raises(SoftShareError) as err:
            scheduler.validate_job(spec, rules)
        assert error in str(err.value) and str(err.value).startswith("job ")


def test_rfc_request_replaces_quota():
    assert scheduler.validate_job(job(core=40, request=50), "rfc")["aicore_quota"] == 50


FILTER_CASES = [
    # (source, rules, host entry, allocations, job, reason fragment or None = passes)
    ("shipped: idle chip passes", "shipped", host(), [], job(), None),
    (
        "shipped: enable label required",
        "shipped",
        host(labels={scheduler.LABEL_CHIP_MEMORY: "64G"}),
        [],
        job(),
        "enable=true is missing",
    ),
    (
        "shipped: enable=false refused",
        "shipped",
        host(labels={scheduler.LABEL_ENABLE: "false", scheduler.LABEL_CHIP_MEMORY: "64G"}),
        [],
        job(),
        "enable=true is missing",
    ),
    ("shipped: chip-memory label required", "shipped", host(hbm=None), [], job(), "npu-chip-memory is missing"),
    ("shipped: same policy, AI core exactly 100 passes", "shipped", host(chips=1), [alloc(0, 60)], job(core=40), None),
    (
        "shipped: same policy, AI core over 100 refused",
        "shipped",
        host(chips=1),
        [alloc(0, 70)],
        job(core=40),
        "not enough spare",
    ),
    (
        "shipped: HBM limit separate from AI core",
        "shipped",
        host(chips=1),
        [alloc(0, 10, hbm=60000)],
        job(core=10, hbm=6000),
        "not enough spare",
    ),
    (
        "rfc: same policy, AI core over 100 refused",
        "rfc",
        host(chips=1),
        [alloc(0, 70, hbm=1)],
        job(core=40),
        "no idle chip",
    ),
    (
        "shipped: other policy chip unusable",
        "shipped",
        host(chips=1),
        [alloc(0, 10, policy="best-effort")],
        job(core=10),
        "not enough spare",
    ),
    ("shipped: hbmQuota over chip memory", "shipped", host(chips=2), [], job(hbm=70000), "not enough spare"),
    ("rfc: hbmQuota over chip memory", "rfc", host(chips=2), [], job(hbm=70000), "exceeds the chip memory"),
    (
        "shipped: broken chips are not usable",
        "shipped",
        host(chips=2, healths=["Critical"] * 2),
        [],
        job(),
        "no healthy chip",
    ),
    (
        "shipped: a fully used chip leaves the available list",
        "shipped",
        host(chips=1),
        [alloc(0, 100)],
        job(core=1),
        "no healthy chip",
    ),
    (
        "shipped: aggregate must hold every replica",
        "shipped",
        host(chips=1),
        [],
        job(core=60, replicas=2),
        "all 2 replicas",
    ),
    ("rfc: no aggregate check", "rfc", host(chips=1), [], job(core=60, replicas=2), None),
    (
        "shipped: two limits, 50% core + 50% HBM still takes 10%",
        "shipped",
        host(chips=1),
        [alloc(0, 50, hbm=32768)],
        job(core=10, hbm=1024),
        None,
    ),
    (
        "rfc: combined share <= 100 % refuses it",
        "rfc",
        host(chips=1),
        [alloc(0, 50, hbm=32768)],
        job(core=10, hbm=1024),
        "no idle chip",
    ),
    (
        "rfc: 60% core + 10% HBM used (30% free) takes 30%",
        "rfc",
        host(chips=1),
        [alloc(0, 60, hbm=6554)],
        job(core=30, hbm=1024),
        None,
    ),
    ("shipped: 80% used chip takes 5%", "shipped", host(chips=1), [alloc(0, 80, hbm=0)], job(core=5, hbm=1), None),
    (
        "rfc: threshold 0.25 - a chip with 20% free is closed",
        "rfc",
        host(chips=1),
        [alloc(0, 80, hbm=0)],
        job(core=5, hbm=1),
        "no idle chip",
    ),
]


@pytest.mark.parametrize("source,rules,entry,allocations,spec,reason", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(source, rules, entry, allocations, spec, reason):
    got = scheduler.filter_node(node(entry, allocations), scheduler.validate_job(spec, rules), rules)
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got


SCORE_CASES = [
    # (source, rules, allocations, job, expected score)
    ("shipped+rfc: nothing used -> 0", "shipped", [], job(), 0),
    ("rfc: nothing used -> 0", "rfc", [], job(), 0),
    ("shipped: exact fit 200 x16", "shipped", [alloc(0, 60)], job(core=40), 3200),
    ("rfc: exact fit 200", "rfc", [alloc(0, 60)], job(core=40), 200),
    ("shipped: larger fit 200 - free after placement, x16", "shipped", [alloc(0, 30)], job(core=40), (200 - 30) * 16),
    ("rfc: larger fit 200 - free after placement", "rfc", [alloc(0, 30)], job(core=40), 170),
    ("shipped: best chip wins", "shipped", [alloc(0, 30), alloc(1, 50)], job(core=40), 190 * 16),
    (
        "shipped: no fit -> used chip count x16",
        "shipped",
        [alloc(0, 90), alloc(1, 90), alloc(2, 90)],
        job(core=40),
        3 * 16,
    ),
    (
        "shipped: policy not checked in scoring (code quirk)",
        "shipped",
        [alloc(0, 30, policy="best-effort")],
        job(core=40),
        170 * 16,
    ),
    ("rfc: other policy counts as used only", "rfc", [alloc(0, 30, policy="best-effort")], job(core=40), 1),
    ("shipped: used chip count not capped", "shipped", [alloc(i, 90) for i in range(16)], job(core=40), 16 * 16),
    ("rfc: used chip count capped at 15", "rfc", [alloc(i, 90) for i in range(16)], job(core=40), 15),
]


@pytest.mark.parametrize("source,rules,allocations,spec,expected", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(source, rules, allocations, spec, expected):
    state = node(host(chips=16), allocations)
    assert scheduler.score_node(state, scheduler.validate_job(spec, rules), rules) == expected


CHIP_CASES = [
    # (source, host entry, allocations, job, chip)
    ("shipped: best-fit same-policy chip", host(), [alloc(0, 20), alloc(1, 50)], job(core=30), 1),
    ("shipped: other policy skipped -> lowest idle", host(), [alloc(0, 20, policy="best-effort")], job(core=30), 1),
    ("shipped: lowest idle chip", host(), [], job(), 0),
    ("shipped: broken chip skipped", host(healths=["Critical", "OK", "OK"], chips=3), [], job(), 1),
    ("shipped: full same-policy chip skipped", host(chips=2), [alloc(0, 80)], job(core=30), 1),
    ("shipped: nothing fits", host(chips=1), [alloc(0, 80)], job(core=30), None),
]


@pytest.mark.parametrize("source,entry,allocations,spec,chip", CHIP_CASES, ids=[c[0] for c in CHIP_CASES])
def test_choose_chip(source, entry, allocations, spec, chip):
    state = node(entry, allocations)
    assert scheduler.choose_chip(state, scheduler.validate_job(spec), "shipped") == chip


def test_place_packs_replicas_then_opens_idle_chips():
    fleet = {"b": host(chips=2), "a": host(chips=2)}
    got = scheduler.place(fleet, [], job(core=40, replicas=3))
    assert got["placed"] is True
    assert [(r["host"], r["chip"], r["score"]) for r in got["replicas"]] == [
        ("a", 0, 0),
        ("a", 0, 180 * 16),
        ("a", 1, 16),
    ]


def test_place_prefers_host_with_exact_fit():
    fleet = {"a": host(), "b": host()}
    got = scheduler.place(fleet, [alloc(5, 60, host_name="b")], job(core=40))
    assert (got["replicas"][0]["host"], got["replicas"][0]["chip"]) == ("b", 5)


def test_place_reports_reasons_per_host():
    fleet = {"a": host(hbm=32768), "b": host(labels={scheduler.LABEL_ENABLE: "false"})}
    got = scheduler.place(fleet, [], job(hbm=40000))
    assert got["placed"] is False
    reasons = got["replicas"][0]["reasons"]
    assert set(reasons) == {"a", "b"} and "enable=true" in reasons["b"]


def test_place_a3_uses_physical_die_ids():
    npus = [
        {"npu_id": i // 2, "chip_id": i % 2, "logic_id": i, "phy_id": 15 - i, "health": "OK", "hbm_total_mb": MEM}
        for i in range(16)
    ]
    fleet = {"a3": {"npu_topology": {"device_type": "A3", "npus": npus}}}
    got = scheduler.place(fleet, [], job(core=100, replicas=2))
    assert [r["chip"] for r in got["replicas"]] == [0, 1]


def test_place_rules_differ():
    fleet = {"a": host(chips=1)}
    allocations = [alloc(0, 50, hbm=32768, host_name="a")]
    assert scheduler.place(fleet, allocations, job(core=10), "shipped")["placed"] is True
    assert scheduler.place(fleet, allocations, job(core=10), "rfc")["placed"] is False


@pytest.mark.parametrize(
    "allocations,error",
    [
        ([{"host": "zz", "chip": 0, "aicore_quota": 1, "hbm_quota": 1, "policy": "elastic"}], "not in the fleet"),
        ([{"host": "a", "chip": 0, "aicore_quota": 1, "hbm_quota": 1, "policy": "nope"}], "policy 'nope'"),
        ([{"host": "a", "chip": 0, "aicore_quota": 1, "policy": "elastic"}], "hbm_quota is missing"),
        ("text", "must be a list"),
    ],
)
def test_place_rejects_bad_allocations(allocations, error):
    with pytest.raises(SoftShareError) as err:
        scheduler.place({"a": host()}, allocations, job())
    assert error in str(err.value)


def test_place_accepts_allocations_by_host():
    by_host = {"a": [{"chip": 0, "aicore_quota": 60, "hbm_quota": 1, "policy": "elastic"}]}
    got = scheduler.place({"a": host()}, by_host, job(core=40))
    assert got["replicas"][0]["chip"] == 0


def test_place_rejects_unknown_rules():
    with pytest.raises(SoftShareError):
        scheduler.place({"a": host()}, [], job(), rules="volcano")
