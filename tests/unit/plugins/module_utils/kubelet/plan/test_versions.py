# -*- coding: utf-8 -*-
"""The profile of the recorded A2, A3 and DGX hosts per kubelet version, each checked by that
version's start rules (kubelet/plan/checks), and the state decision on its own output: a
second run changes nothing, a node already strict is re-run without a reset."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import options as ko
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as parse
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.checks import start_errors
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.state import reset_reasons
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules, topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from npuops_testing import SNAPSHOTS

_CACHE = {}
HOSTS = ("a2-910b3x8", "a3-16die", "dgx-a100")
VERSIONS = ("v1.26.15", "v1.30.14", "v1.32.9", "v1.33.5", "v1.35.0")

# (host, version) -> what the profile writes: strict, prefer-closest, the gates it adds
# (alpha_gates off), as the version table says
EXPECTED = {
    ("a2-910b3x8", "v1.26.15"): (False, False),
    ("a2-910b3x8", "v1.30.14"): (False, True),
    ("a2-910b3x8", "v1.32.9"): (False, True),
    ("a2-910b3x8", "v1.33.5"): (True, True),
    ("a2-910b3x8", "v1.35.0"): (True, True),
    ("a3-16die", "v1.26.15"): (False, False),
    ("a3-16die", "v1.30.14"): (False, True),
    ("a3-16die", "v1.32.9"): (False, True),
    ("a3-16die", "v1.33.5"): (True, True),
    ("a3-16die", "v1.35.0"): (True, True),
    ("dgx-a100", "v1.26.15"): (False, False),
    ("dgx-a100", "v1.30.14"): (False, True),
    ("dgx-a100", "v1.32.9"): (False, True),
    ("dgx-a100", "v1.33.5"): (True, True),
    ("dgx-a100", "v1.35.0"): (True, True),
}


def recorded(snap):
    if snap not in _CACHE:
        path = os.path.join(SNAPSHOTS, snap)
        assert os.path.isfile(os.path.join(path, "snapshot.yml")), "snapshot %s missing" % snap
        facts = topology.gather(hostio.SnapshotHostIO(path))
        _CACHE[snap] = (facts, make_plan(facts))
    return _CACHE[snap]


def nodes_of(facts):
    node_cpus = rules.node_cpus(facts)
    return len(node_cpus), sorted(node_cpus)


def fresh_checkpoint(config, facts):
    """The cpu_manager_state the kubelet writes on a fresh start with ``config``."""
    online = set(cpulist.parse(facts["cpu"].get("allowed") or facts["cpu"]["online"]))
    reserved = set(cpulist.parse(config["reservedSystemCPUs"]))
    strict = config.get("cpuManagerPolicyOptions", {}).get("strict-cpu-reservation") == "true"
    default = online - reserved if strict else online
    return {"policy": "static", "default_cpus": cpulist.format(sorted(default)), "entries": {}, "pod_entries": {}}


@pytest.mark.parametrize("snap", HOSTS)
@pytest.mark.parametrize("version", VERSIONS)
def test_profile_passes_that_versions_start_rules_and_a_second_run_changes_nothing(snap, version):
    facts, plan = recorded(snap)
    count, machine = nodes_of(facts)
    prof = kubelet_profile(
        facts, plan, kubelet_version=version, memory_manager=True, memory={"kube_reserved_memory": "2Gi"}
    )
    cfg = prof["config"]
    assert start_errors(cfg, ko.parse_version(version), count, machine) == []
    strict, closest = EXPECTED[(snap, version)]
    assert ("strict-cpu-reservation" in cfg.get("cpuManagerPolicyOptions", {})) is strict
    if cfg["topologyManagerPolicy"] == "restricted":
        assert ("prefer-closest-numa-nodes" in cfg.get("topologyManagerPolicyOptions", {})) is closest
    assert "featureGates" not in cfg  # nothing gated is turned on unasked
    if not strict:
        assert any("strict-cpu-reservation" in w for w in prof["warnings"])
    # the kubelet started on it and wrote its checkpoint: the next run needs no reset
    online = cpulist.parse(facts["cpu"].get("allowed") or facts["cpu"]["online"])
    state = fresh_checkpoint(cfg, facts)
    memory_state = {
        "policy": "Static",
        "nodes": {
            str(cfg["reservedMemory"][0]["numaNode"]): {
                "memory": {"memory": {"systemReserved": 2 * 2**30 + 100 * 2**20}}
            }
        },
        "entries": {},
    }
    again = kubelet_profile(
        facts, plan, kubelet_version=version, memory_manager=True, current=cfg, memory={"kube_reserved_memory": "2Gi"}
    )
    assert again["config"] == cfg
    assert reset_reasons(again["config"], state, memory_state, online, ko.parse_version(version)) == []


@pytest.mark.parametrize("snap", HOSTS)
def test_version_1_32_strict_with_alpha_gates_adds_the_gate_and_passes(snap):
    facts, plan = recorded(snap)
    count, machine = nodes_of(facts)
    prof = kubelet_profile(facts, plan, kubelet_version="v1.32.9", alpha_gates=True)
    cfg = prof["config"]
    assert cfg["cpuManagerPolicyOptions"]["strict-cpu-reservation"] == "true"
    assert cfg["featureGates"] == {"CPUManagerPolicyAlphaOptions": True}
    assert start_errors(cfg, (1, 32), count, machine) == []
    # without the gate the 1.32 kubelet refuses the option (the defect this table fixes)
    bad = dict(cfg)
    bad.pop("featureGates")
    assert [k for k, m in start_errors(bad, (1, 32), count, machine)] == [
        "cpuManagerPolicyOptions.strict-cpu-reservation"
    ]
    # and the gate it added is read back as the node's: a second run is the same
    again = kubelet_profile(facts, plan, kubelet_version="v1.32.9", alpha_gates=True, current={})
    assert again["config"] == cfg


def test_prefer_closest_on_1_26_needs_two_alpha_gates():
    facts, plan = recorded("a2-910b3x8")
    count, machine = nodes_of(facts)
    prof = kubelet_profile(facts, plan, kubelet_version="1.26", alpha_gates=True)
    cfg = prof["config"]
    assert cfg["topologyManagerPolicyOptions"] == {"prefer-closest-numa-nodes": "true"}
    assert cfg["featureGates"] == {"TopologyManagerPolicyAlphaOptions": True, "TopologyManagerPolicyOptions": True}
    assert start_errors(cfg, (1, 26), count, machine) == []
    assert start_errors(dict(cfg, featureGates={}), (1, 26), count, machine) != []


@pytest.mark.parametrize("snap", HOSTS)
def test_strict_node_rerun_without_reset(snap):
    facts, plan = recorded(snap)
    online = cpulist.parse(facts["cpu"].get("allowed") or facts["cpu"]["online"])
    cfg = kubelet_profile(facts, plan, kubelet_version="v1.35.0")["config"]
    reserved = set(cpulist.parse(cfg["reservedSystemCPUs"]))
    # a strict node running a pod on some exclusive CPUs
    free = sorted(set(online) - reserved)
    pod = free[:4]
    state = {
        "policy": "static",
        "default_cpus": cpulist.format(free[4:]),
        "entries": {"uid-1": {"c": cpulist.format(pod)}},
        "pod_entries": {},
    }
    assert reset_reasons(cfg, state, None, online, (1, 35)) == []
    # the old rule (reserved within defaultCpuSet) asked for a reset on every run here
    non_strict = dict(cfg, cpuManagerPolicyOptions={})
    assert reset_reasons(non_strict, state, None, online, (1, 35))  # strict turned off: reset
    # strict turned on over a checkpoint written without it: reset
    old = {
        "policy": "static",
        "default_cpus": cpulist.format(sorted(set(online) - set(pod))),
        "entries": {"uid-1": {"c": cpulist.format(pod)}},
        "pod_entries": {},
    }
    assert "strict-cpu-reservation" in reset_reasons(cfg, old, None, online, (1, 35))[0]
    assert reset_reasons(non_strict, old, None, online, (1, 35)) == []


def test_newer_kubelet_judged_by_the_newest_row_and_unknown_is_conservative():
    facts, plan = recorded("a3-16die")
    prof = kubelet_profile(facts, plan, kubelet_version="v1.40.1")
    assert prof["kubelet_version"] == ko.show(ko.NEWEST)
    assert any("newer than the newest" in w for w in prof["warnings"])
    unknown = kubelet_profile(facts, plan)
    assert unknown["config"]["cpuManagerPolicyOptions"] == {"full-pcpus-only": "true"}
    for version in ko.KNOWN:
        count, machine = nodes_of(facts)
        assert start_errors(unknown["config"], version, count, machine) == []


def test_dropin_text_of_each_version_reads_back():
    from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.apply import config as kubelet_config

    facts, plan = recorded("a2-910b3x8")
    for version in VERSIONS:
        cfg = kubelet_profile(facts, plan, kubelet_version=version, alpha_gates=True)["config"]
        back = parse.parse_config(kubelet_config.render_dropin(cfg))
        back.pop("apiVersion"), back.pop("kind")
        assert back == cfg


def test_the_nodes_own_gates_are_read_and_never_overridden():
    facts, plan = recorded("a2-910b3x8")
    own = {"featureGates": {"CPUManagerPolicyAlphaOptions": True}}
    cfg = kubelet_profile(facts, plan, kubelet_version="v1.32.1", current=own)["config"]
    assert cfg["cpuManagerPolicyOptions"] == {"strict-cpu-reservation": "true"}
    assert "featureGates" not in cfg  # the node's own gate serves; nothing to add
    off = {"featureGates": {"CPUManagerPolicyAlphaOptions": False, "SomeOtherGate": True}}
    prof = kubelet_profile(facts, plan, kubelet_version="v1.32.1", current=off, alpha_gates=True)
    assert "cpuManagerPolicyOptions" not in prof["config"] and "featureGates" not in prof["config"]
    assert any("sets the feature gate CPUManagerPolicyAlphaOptions off" in w for w in prof["warnings"])
    # gates added keep the node's others (a merge into the config file replaces the key)
    prof = kubelet_profile(
        facts, plan, kubelet_version="v1.32.1", alpha_gates=True, current={"featureGates": {"SomeOtherGate": True}}
    )
    assert prof["config"]["featureGates"] == {"CPUManagerPolicyAlphaOptions": True, "SomeOtherGate": True}
    with pytest.raises(PlanError, match="strict-cpu-reservation: kubelet 1.31 does not know it"):
        kubelet_profile(facts, plan, kubelet_version="v1.31.0", strict_cpu_reservation=True)
