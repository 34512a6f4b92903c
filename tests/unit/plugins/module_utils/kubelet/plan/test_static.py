# -*- coding: utf-8 -*-
"""kubelet/plan/whatif.py against policy_static_test.go and topology_hints_test.go, ported as data
(tests/fixtures/kubelet/policy_static.yml): k of N per Go test function; a case the what-if cannot
express is in the data with its reason and counted as not agreeing, never skipped."""

import os

import pytest
import yaml

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import whatif as w
from npuops_testing import REPO

FIXTURES = os.path.join(REPO, "tests", "fixtures", "kubelet")
with open(os.path.join(FIXTURES, "policy_static.yml")) as _handle:
    DATA = yaml.safe_load(_handle)
with open(os.path.join(FIXTURES, "cpu_assignment.yml")) as _handle:
    TOPOS = yaml.safe_load(_handle)

EXPECTED_K_OF_N = {
    # 11 option-insensitive cases run twice, 7 default, 5 full-pcpus-only, 2 align-by-socket:
    # 9 runs on the 288-CPU quad-socket topology, 4 Burstable/fractional runs, 1 reuse and 1
    # align-by-socket case are not expressible
    "TestStaticPolicyAdd": (21, 36),
    "TestStaticPolicyAddWithResvList": (3, 3),
    "TestTopologyAwareAllocateCPUs": (5, 5),
    "TestGetTopologyHints": (6, 11),  # 5 regenerate-from-own-allocation cases
    "TestGetPodTopologyHints": (6, 11),
    "TestGetPodTopologyHintsWithPolicyOptions": (1, 3),  # 2 align-by-socket cases
}


def topo_of(name):
    spec = dict(TOPOS["topologies"].get(name) or TOPOS["more_topologies"][name])
    offset = spec.pop("smt_offset", None)
    if offset:
        spec["smt_siblings"] = ["%d,%d" % (i, i + offset) for i in range(offset)]
    return w.Topo.from_spec(spec["numa_nodes"], spec.get("smt_siblings"), spec.get("packages"), spec.get("sockets"))


def _runs(case):
    return {"both": (False, True), "none": (False,), "full": (True,)}[case["options"]]


def static_add(case, full):
    """The what-if of a Guaranteed pod under the fake Topology Manager (its any-node hint:
    the `none` policy, no alignment) or with the case's hint."""
    topo = topo_of(case["topo"])
    if "reserved" in case:
        reserved = set(cpulist.parse(case["reserved"]))
    else:
        reserved, dummy = w.take_by_topology(topo, topo.cpus, case["num_reserved"])
    assigned = topo.cpus - set(cpulist.parse(case["default"]))
    if case.get("hint") is None:
        got = w.whatif(topo, reserved, case["cpus"], None, policy="none", full_pcpus_only=full, assigned=assigned)
        if not got["admitted"]:
            return ("error", got["reason"].replace("SMTAlignmentError: ", "SMT Alignment Error: "))
        return ("cpus", got["cpus"])
    cpus, err = w.allocate(topo, topo.cpus - reserved - assigned, case["cpus"], frozenset(case["hint"]))
    return ("error", err) if err else ("cpus", cpulist.format(sorted(cpus)))


def static_agrees(case, full):
    if "not_expressible" in case:
        return False
    kind, value = static_add(case, full)
    if "error" in case:
        return (kind, value) == ("error", case["error"])
    return (kind, value) == ("cpus", cpulist.format(cpulist.parse(case["expected"])))


def allocated(case):
    topo = topo_of(case["topo"])
    mask = frozenset(case["hint"]) if case["hint"] is not None else None
    cpus, err = w.allocate(topo, set(cpulist.parse(case["default"])), case["cpus"], mask)
    return err or cpulist.format(sorted(cpus))


def hints_of(topo, case):
    got = w.cpu_hints(topo, set(cpulist.parse(case["default"])), case["cpus"])
    return sorted([sorted(m), p] for m, p in got)


def hints_agree(topo, case):
    if "not_expressible" in case:
        return False
    return hints_of(topo, case) == sorted([sorted(m), p] for m, p in case["expected"])


def machine():
    spec = dict(DATA["hints_machine"])
    offset = spec.pop("smt_offset")
    return w.Topo.from_spec(spec["numa_nodes"], ["%d,%d" % (i, i + offset) for i in range(offset)])


def tally():
    out = {}

    def add(name, ok):
        k, n = out.get(name, (0, 0))
        out[name] = (k + (1 if ok else 0), n + 1)

    for case in DATA["static_add"]:
        for full in _runs(case):
            add(case["function"], static_agrees(case, full))
    for case in DATA["allocate"]:
        add("TestTopologyAwareAllocateCPUs", allocated(case) == cpulist.format(cpulist.parse(case["expected"])))
    for name in ("TestGetTopologyHints", "TestGetPodTopologyHints"):
        for case in DATA["hints"]:
            add(name, hints_agree(machine(), case))
    big = topo_of("topoDualSocketMultiNumaPerSocketHT")
    for case in DATA["hints_options"]:
        add("TestGetPodTopologyHintsWithPolicyOptions", hints_agree(big, case))
    return out


def test_k_of_n_per_go_test_function():
    assert tally() == EXPECTED_K_OF_N


EXPRESSIBLE = [(c, full) for c in DATA["static_add"] if "not_expressible" not in c for full in _runs(c)]


@pytest.mark.parametrize(
    "case,full", EXPRESSIBLE, ids=["%s%s" % (c["id"], " +full-pcpus-only" if f else "") for c, f in EXPRESSIBLE]
)
def test_static_add_case(case, full):
    assert static_agrees(case, full), static_add(case, full)


@pytest.mark.parametrize("case", DATA["allocate"], ids=[c["id"] for c in DATA["allocate"]])
def test_topology_aware_allocate_case(case):
    assert allocated(case) == cpulist.format(cpulist.parse(case["expected"]))


def test_not_expressible_cases_say_why():
    cases = DATA["static_add"] + DATA["hints"] + DATA["hints_options"]
    reasons = [c["not_expressible"] for c in cases if "not_expressible" in c]
    assert len(reasons) == 17 and all(len(r) > 20 for r in reasons)
