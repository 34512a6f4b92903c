# -*- coding: utf-8 -*-
"""The kubelet's own test tables, ported as data (rules, not code), against
kubelet/model/options, kubelet/plan/checks and kubelet/plan/state.

Sources (kubernetes/kubernetes):
- pkg/kubelet/cm/cpumanager/policy_options_test.go (the stored version with strict-cpu-reservation,
  distribute-cpus-across-numa and prefer-align-cpus-by-uncorecache beta, full-pcpus-only GA: v1.34):
  TestPolicyDefaultsAvailable, TestPolicyOptionsAvailable, TestPolicyOptionsAlwaysAvailableOnceGA,
  TestValidateStaticPolicyOptions, TestPolicyOptionsCompatibility;
- pkg/kubelet/cm/cpumanager/policy_static_test.go TestStaticPolicyStart (topoDualSocketHT:
  CPUs 0-11, cores (n, n+6); 1 reserved CPU is 0, 2 are 0,6);
- pkg/kubelet/cm/memorymanager/memory_manager_test.go TestValidateReservedMemory (nodes 0, 1);
- pkg/kubelet/apis/config/validation/validation_test.go (reservedSystemCPUs with a reserved cgroup);
- pkg/kubelet/cm/topologymanager/topology_manager_test.go TestNewManager ("more than 8 NUMA nodes").
"""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import options as ko
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import checks as kc
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.state import reset_reasons

V134 = (1, 34)
CPU = ko.CPU_OPTIONS

# TestPolicyDefaultsAvailable + TestPolicyOptionsAvailable + TestPolicyOptionsAlwaysAvailableOnceGA:
# (option, {gate: on}, available)
AVAILABLE = [
    ("this-option-does-not-exist", {}, False),
    ("full-pcpus-only", {}, True),
    ("this-option-does-not-exist", {"CPUManagerPolicyBetaOptions": False}, False),
    ("this-option-does-not-exist", {"CPUManagerPolicyBetaOptions": True}, False),
    ("align-by-socket", {"CPUManagerPolicyAlphaOptions": True}, True),
    ("align-by-socket", {"CPUManagerPolicyBetaOptions": True}, False),
    ("distribute-cpus-across-numa", {"CPUManagerPolicyBetaOptions": True}, True),
    ("distribute-cpus-across-numa", {"CPUManagerPolicyBetaOptions": False}, False),
    ("distribute-cpus-across-cores", {"CPUManagerPolicyAlphaOptions": True}, True),
    ("distribute-cpus-across-cores", {"CPUManagerPolicyBetaOptions": True}, False),
    ("strict-cpu-reservation", {"CPUManagerPolicyBetaOptions": False}, False),
    ("strict-cpu-reservation", {"CPUManagerPolicyBetaOptions": True}, True),
    ("prefer-align-cpus-by-uncorecache", {"CPUManagerPolicyBetaOptions": False}, False),
    ("prefer-align-cpus-by-uncorecache", {"CPUManagerPolicyBetaOptions": True}, True),
    ("full-pcpus-only", {"CPUManagerPolicyAlphaOptions": False, "CPUManagerPolicyBetaOptions": False}, True),
]


@pytest.mark.parametrize("option, gates, available", AVAILABLE)
def test_policy_options_available(option, gates, available):
    assert (ko.missing_gates(CPU, option, V134, gates) == []) is available


# TestValidateStaticPolicyOptions (align-by-socket) and TestPolicyOptionsCompatibility: the
# options, the topology policy, refused. The machine check of the upstream row "num_sockets >
# num_numa" is not modelled (1 of 6 rows left out).
COMPATIBILITY = [
    ({"full-pcpus-only": "true"}, "single-numa-node", False),
    ({"align-by-socket": "true"}, "single-numa-node", True),
    ({"align-by-socket": "true"}, "none", False),
    ({"align-by-socket": "true"}, "best-effort", False),
    ({"align-by-socket": "true"}, "restricted", False),
    ({"full-pcpus-only": "true"}, "none", False),
    ({"distribute-cpus-across-cores": "true"}, "none", False),
    ({"prefer-align-cpus-by-uncorecache": "true", "strict-cpu-reservation": "true"}, "none", False),
    ({"prefer-align-cpus-by-uncorecache": "true", "full-pcpus-only": "true"}, "none", False),
    ({"prefer-align-cpus-by-uncorecache": "true", "align-by-socket": "true"}, "none", False),
    ({"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"}, "none", True),
    ({"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-cores": "true"}, "none", True),
    ({"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "true"}, "none", True),
]


@pytest.mark.parametrize("options, policy, refused", COMPATIBILITY)
def test_policy_options_compatibility(options, policy, refused):
    config = {
        "cpuManagerPolicy": "static",
        "reservedSystemCPUs": "0",
        "cpuManagerPolicyOptions": options,
        "topologyManagerPolicy": policy,
        "featureGates": {"CPUManagerPolicyAlphaOptions": True},
    }
    errors = kc.start_errors(config, V134, 2)
    assert bool(errors) is refused, errors
    if refused:
        assert "cannot be used together" in errors[0][1]


TOPO_DUAL_SOCKET_HT = list(range(12))
# TestStaticPolicyStart: (reserved, strict, assignments, defaultCpuSet, refused)
STATIC_START = [
    ("", False, {"fakePod": {"0": "0"}}, "1-11", False),  # non-corrupted state
    ("0", False, {}, "", False),  # empty cpuset: a fresh state
    ("0,6", False, {}, "0-1", True),  # reserved 0,6 not in defaultCpuSet
    ("0,6", True, {}, "0-1", True),  # strict: reserved 0 in defaultCpuSet
    ("", False, {"fakePod": {"0": "0-2"}}, "2-11", True),  # assigned 2 still in defaultCpuSet
    ("", True, {"fakePod": {"0": "0-2"}}, "2-11", True),  # the same under strict
    ("", False, {"fakePod": {"0": "0-2", "1": "3-4"}}, "5-12", True),  # CPU 12 not on the machine
    ("", False, {"fakePod": {"0": "0-2", "1": "3-4"}}, "5-10", True),  # CPU 11 not in the state
]


@pytest.mark.parametrize("reserved, strict, entries, default, refused", STATIC_START)
def test_static_policy_start(reserved, strict, entries, default, refused):
    config = {"cpuManagerPolicy": "static", "reservedSystemCPUs": reserved}
    if strict:
        config["cpuManagerPolicyOptions"] = {"strict-cpu-reservation": "true"}
    state = {"policy": "static", "default_cpus": default, "entries": entries}
    assert bool(reset_reasons(config, state, None, TOPO_DUAL_SOCKET_HT, (1, 35))) is refused


# TestValidateReservedMemory: (node allocatable reservation, reservedMemory, error text or "")
RESERVED_MEMORY = [
    ({}, [], ""),
    ({"memory": 0}, [{"numaNode": 0, "limits": {"memory": "0"}}], ""),
    ({}, [{"numaNode": 0, "limits": {"memory": "12"}}], "12 of memory"),
    ({"hugepages-2Mi": 5}, [], "0 of hugepages-2Mi"),
    ({"memory": 5}, [{"numaNode": 0, "limits": {"memory": "12"}}], "12 of memory"),
    (
        {"memory": 17},
        [{"numaNode": 0, "limits": {"memory": "12"}}, {"numaNode": 2, "limits": {"memory": "5"}}],
        "NUMA node 2 that does not exist",
    ),
    (
        {"memory": 17, "hugepages-2Mi": 77, "hugepages-1Gi": 13},
        [
            {"numaNode": 0, "limits": {"memory": "12", "hugepages-2Mi": "70", "hugepages-1Gi": "13"}},
            {"numaNode": 1, "limits": {"memory": "5", "hugepages-2Mi": "7"}},
        ],
        "",
    ),
    (
        {"memory": 17, "hugepages-2Mi": 14, "hugepages-1Gi": 13},
        [
            {"numaNode": 0, "limits": {"memory": "12", "hugepages-2Mi": "70", "hugepages-1Gi": "13"}},
            {"numaNode": 1, "limits": {"memory": "5", "hugepages-2Mi": "7"}},
        ],
        "77 of hugepages-2Mi",
    ),
]


@pytest.mark.parametrize("wanted, entries, error", RESERVED_MEMORY)
def test_validate_reserved_memory(wanted, entries, error):
    found = kc.reserved_memory_errors(wanted, entries, [0, 1], static=False)
    if not error:
        assert found == []
    else:
        assert len(found) == 1 and error in found[0]


def test_the_static_memory_policy_needs_memory_reserved():
    # memorymanager/policy_static_test.go TestStaticPolicyNew: no reserved memory is refused
    assert "needs some memory" in kc.reserved_memory_errors({}, [], [0, 1])[0]


@pytest.mark.parametrize("cgroup", ["systemReservedCgroup", "kubeReservedCgroup"])
def test_reserved_cpus_beside_a_reserved_cgroup(cgroup):
    config = {"reservedSystemCPUs": "0-3", cgroup: "/system.slice"}
    assert [k for k, m in kc.start_errors(config, (1, 26), 1)] == ["reservedSystemCPUs"]
    assert kc.start_errors({"reservedSystemCPUs": "0-3"}, (1, 26), 1) == []


def test_more_than_8_numa_nodes():
    for policy, version, options, refused in [
        ("best-effort", (1, 30), {}, True),
        ("none", (1, 30), {}, False),
        ("restricted", (1, 31), {"max-allowable-numa-nodes": "16"}, False),
        ("restricted", (1, 31), {"max-allowable-numa-nodes": "9"}, True),
        ("restricted", (1, 31), {"max-allowable-numa-nodes": "4"}, True),  # below 8
        ("restricted", (1, 30), {"max-allowable-numa-nodes": "16"}, True),
    ]:  # unknown option
        config = {"topologyManagerPolicy": policy, "topologyManagerPolicyOptions": options}
        assert bool(kc.start_errors(config, version, 16)) is refused, (policy, version, options)


# --- the version table's own rows ------------------------------------------------------


def test_every_row_cites_its_kubelet_file_and_steps_rise():
    for (field, option), row in ko.OPTIONS.items():
        assert row["source"].startswith("kubernetes/kubernetes pkg/kubelet/cm/")
        versions = [step[0] for step in row["steps"]]
        assert versions == sorted(versions) and len(set(versions)) == len(versions)
        assert [s[1] for s in row["steps"]] == sorted(
            [s[1] for s in row["steps"]], key=[ko.ALPHA, ko.BETA, ko.GA].index
        )
    for gate, steps in ko.GATES.items():
        assert [s[0] for s in steps] == sorted(s[0] for s in steps)


@pytest.mark.parametrize(
    "option, version, gates_off",
    [
        ("strict-cpu-reservation", (1, 31), None),
        ("strict-cpu-reservation", (1, 32), ["CPUManagerPolicyAlphaOptions"]),
        ("strict-cpu-reservation", (1, 33), []),
        ("strict-cpu-reservation", (1, 35), []),
        ("full-pcpus-only", (1, 26), []),
        ("distribute-cpus-across-numa", (1, 32), ["CPUManagerPolicyAlphaOptions"]),
        ("distribute-cpus-across-numa", (1, 33), []),
        ("distribute-cpus-across-cores", (1, 30), None),
        ("align-by-socket", (1, 35), ["CPUManagerPolicyAlphaOptions"]),
    ],
)
def test_cpu_option_rows(option, version, gates_off):
    assert ko.missing_gates(CPU, option, version, {}) == gates_off


@pytest.mark.parametrize(
    "option, version, gates_off",
    [
        ("prefer-closest-numa-nodes", (1, 26), ["TopologyManagerPolicyOptions", "TopologyManagerPolicyAlphaOptions"]),
        ("prefer-closest-numa-nodes", (1, 27), ["TopologyManagerPolicyOptions", "TopologyManagerPolicyAlphaOptions"]),
        ("prefer-closest-numa-nodes", (1, 28), []),
        ("prefer-closest-numa-nodes", (1, 32), []),
        ("max-allowable-numa-nodes", (1, 30), None),
        ("max-allowable-numa-nodes", (1, 31), []),
        ("max-allowable-numa-nodes", (1, 35), []),
    ],
)
def test_topology_option_rows(option, version, gates_off):
    assert ko.missing_gates(ko.TOPOLOGY_OPTIONS, option, version, {}) == gates_off


def test_conservative_set_and_versions():
    assert [o for (f, o) in ko.OPTIONS if ko.conservative(f, o)] == ["full-pcpus-only"]
    assert ko.parse_version("Kubernetes v1.33.2-eks-1") == (1, 33)
    assert ko.parse_version("garbage") is None
    assert ko.OLDEST == (1, 26) and ko.NEWEST >= (1, 35)


@pytest.mark.parametrize(
    "config, version, memory",
    [
        ({}, (1, 30), 100 * 2**20),  # defaulted
        ({"evictionHard": {"nodefs.available": "10%"}}, (1, 30), 0),  # set without memory
        (
            {"evictionHard": {"nodefs.available": "10%"}, "mergeDefaultEvictionSettings": True},
            (1, 33),
            100 * 2**20,
        ),  # merged in (1.33+)
        (
            {"evictionHard": {"nodefs.available": "10%"}, "mergeDefaultEvictionSettings": True},
            (1, 32),
            0,
        ),  # a field 1.32 lacks
        (
            {
                "evictionHard": {"memory.available": "1Gi"},
                "kubeReserved": {"memory": "1Gi"},
                "systemReserved": {"memory": "512Mi", "hugepages-2Mi": "4Mi"},
            },
            (1, 35),
            (2 << 30) + (512 << 20),
        ),
    ],
)
def test_reservation_counts_eviction_as_the_kubelet_defaults_it(config, version, memory):
    total, dummy = kc.reservation(config, version)
    assert total["memory"] == memory
    if "hugepages-2Mi" in str(config):
        assert total["hugepages-2Mi"] == 4 << 20


def test_reserved_cpus_text_is_checked():
    assert kc.start_errors({"reservedSystemCPUs": "0-x"}, (1, 30), 1)
    assert cpulist.format([0, 1]) == "0-1"
