# -*- coding: utf-8 -*-
"""kubelet/plan/merge.py against the kubelet's own Topology Manager test tables
(tests/fixtures/kubelet/topology_policy_merge.yml, ported as data): k of N per Go test function,
and the version row that changed between kubelets."""

import os

import pytest
import yaml

from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import merge as m
from npuops_testing import REPO

with open(os.path.join(REPO, "tests", "fixtures", "kubelet", "topology_policy_merge.yml")) as _handle:
    DATA = yaml.safe_load(_handle)

# k of N per Go test function: every case agrees (a case that cannot be expressed would stay in
# the data with a `not_expressible` reason and be counted apart here, never skipped)
EXPECTED_K_OF_N = {
    "TestPolicyBestEffortMerge": (28, 28),
    "TestPolicyBestEffortMergeClosestNUMA": (30, 30),
    "TestPolicyRestrictedMerge": (28, 28),
    "TestPolicyRestrictedMergeClosestNUMA": (30, 30),
    "TestPolicySingleNumaNodeMerge": (21, 21),
    "TestPolicyNoneMerge": (3, 3),
    "CanAdmitPodResult (4 functions)": (7, 7),
    "TestCompareHintsNarrowest": (25, 25),
    "TestMaxOfMinAffinityCounts": (7, 7),
    "TestPolicySingleNumaNodeFilterHints": (5, 5),
    "TestClosest": (5, 5),
    "TestCalculateAvgDistanceFor": (6, 6),
}


def _distances(numa):
    return dict((int(n), dict(enumerate(row))) for n, row in numa["distances"].items())


def _merge_cases():
    out = []
    for name, spec in sorted(DATA["merge_functions"].items()):
        for group in spec["groups"]:
            for case in DATA["groups"][group]:
                out.append((name, spec, group, case))
    return out


MERGE_CASES = _merge_cases()


def merged(spec, case, rule=None):
    numa = DATA["numa_infos"][spec["numa"]]
    mask, preferred, admit = m.merge_provider_maps(
        spec["policy"],
        case["providers"],
        numa["nodes"],
        distances=_distances(numa),
        closest_numa=spec.get("closest_numa", False),
        rule=rule,
    )
    return [sorted(mask) if mask is not None else None, preferred], admit


def expected_of(spec, case):
    nodes = DATA["numa_infos"][spec["numa"]]["nodes"]
    mask, preferred = case["expected"]
    return [list(nodes) if mask == "all" else mask, preferred]


def agrees(spec, case):
    got, admit = merged(spec, case)
    if spec.get("admit") is not None and admit != spec["admit"]:
        return False
    return got == expected_of(spec, case)


@pytest.mark.parametrize(
    "name,spec,group,case", MERGE_CASES, ids=["%s/%s/%s" % (n, g, c["id"]) for n, s, g, c in MERGE_CASES]
)
def test_merge_case(name, spec, group, case):
    assert merged(spec, case)[0] == expected_of(spec, case)


def _compare(case):
    merger = m.Merger([0, 1, 2, 3], [])
    merger.best_count = case["best"]

    def hint(raw):
        return None if raw is None else (frozenset(raw[0]), raw[1])

    current, candidate = hint(case["current"]), hint(case["candidate"])
    return "candidate" if merger.better(current, candidate) else "current"


def _closest(case):
    distances = dict((i, dict(enumerate(row))) for i, row in enumerate(case["distances"]))
    current, candidate = frozenset(case["current"]), frozenset(case["candidate"])
    return "current" if m.closest(distances, candidate, current) == current else "candidate"


def _filtered(case):
    lists = [[(frozenset(h[0]) if h[0] is not None else None, h[1]) for h in r] for r in case["resources"]]
    want = [[(frozenset(h[0]) if h[0] is not None else None, h[1]) for h in r] for r in case["expected"]]
    return m.filter_single_numa(lists) == want


def _can_admit(case):
    # a merge whose only hint is (None, preferred): what the policy admits
    return m.merge_hints(case["policy"], [[(None, case["preferred"])]], [0, 1])[2] == case["expected"]


def tally():
    out = {}
    for name, spec, dummy, case in MERGE_CASES:
        k, n = out.get(name, (0, 0))
        out[name] = (k + (1 if agrees(spec, case) else 0), n + 1)
    tables = (
        ("CanAdmitPodResult (4 functions)", DATA["can_admit"], _can_admit),
        ("TestCompareHintsNarrowest", DATA["compare"], lambda c: _compare(c) == c["expected"]),
        (
            "TestMaxOfMinAffinityCounts",
            DATA["max_of_min"],
            lambda c: m.max_of_min_counts([[(frozenset(h), True) for h in p] for p in c["hints"]]) == c["expected"],
        ),
        ("TestPolicySingleNumaNodeFilterHints", DATA["filter_single_numa"], _filtered),
        ("TestClosest", DATA["closest"], lambda c: _closest(c) == c["expected"]),
        (
            "TestCalculateAvgDistanceFor",
            DATA["average_distance"],
            lambda c: (
                m.average_distance(
                    dict((i, dict(enumerate(r))) for i, r in enumerate(c["distances"])), frozenset(c["mask"])
                )
                == c["expected"]
            ),
        ),
    )
    for name, cases, check in tables:
        out[name] = (sum(1 for c in cases if check(c)), len(cases))
    return out


def test_k_of_n_per_go_test_function():
    assert tally() == EXPECTED_K_OF_N


@pytest.mark.parametrize("case", DATA["compare"], ids=[c["id"] for c in DATA["compare"]])
def test_compare_case(case):
    assert _compare(case) == case["expected"]


@pytest.mark.parametrize("case", DATA["closest"], ids=[c["id"] for c in DATA["closest"]])
def test_closest_case(case):
    assert _closest(case) == case["expected"]


def test_the_pre_1_24_rule_disagrees_where_the_kubelet_changed():
    """The same tables under the all-preferred row (kubelets before 1.24): the cases PR #108052
    and #108154 changed come out differently - the version row is what decides them."""
    spec = DATA["merge_functions"]["TestPolicyBestEffortMerge"]
    differ = sorted(
        case["id"]
        for name, s, group, case in MERGE_CASES
        if name == "TestPolicyBestEffortMerge" and merged(s, case, rule="all-preferred")[0] != expected_of(s, case)
    )
    assert differ == [
        "Two providers, 1 hint each, 1 wider mask, both preferred 1/2",
        "Two providers, 1 hint each, 1 wider mask, both preferred 2/2",
        "Two providers, 2 hints each, same mask (some with different bits), same preferred",
        "bestNonPreferredAffinityCount (2)",
        "bestNonPreferredAffinityCount (3)",
        "bestNonPreferredAffinityCount (5)",
        "bestNonPreferredAffinityCount (6)",
    ]
    assert spec["policy"] == "best-effort"


def test_version_rows():
    assert m.rule_for("v1.23.17") == "all-preferred"
    assert m.rule_for("v1.24.0") == "equal-masks"
    assert m.rule_for("1.35") == "equal-masks"
    assert m.rule_for(None) == m.DEFAULT_RULE == "equal-masks"
    for first, name, what, source in m.MERGE_RULES:
        assert "policy.go" in source and what


def test_unknown_policy_is_refused_by_name():
    with pytest.raises(PlanError, match="unknown policy 'strict'"):
        m.merge_hints("strict", [], [0, 1])
