# -*- coding: utf-8 -*-
"""plugin_utils/host_variables.py: the single-variable checks of the validate role - what
Ansible's argument spec lets through, and the values against the host's facts. Every message
starts with the npuops_* variable's name."""

import os

import pytest
import yaml

from ansible_collections.npuops.fleet.plugins.filter import host_config
from ansible_collections.npuops.fleet.plugins.plugin_utils import host_variables as hv
from npuops_testing import REPO
from npuops_testing import cpu_hosts

with open(os.path.join(REPO, "roles", "validate", "vars", "main.yml")) as _handle:
    SPEC = yaml.safe_load(_handle)["__npuops_validate_spec"]
A2 = cpu_hosts.a2()  # 192 CPUs (0-191), 8 NPUs
GPU = {
    "vendor": "nvidia",
    "cpu": {"online": "0-95", "allowed": "0-95"},
    "gpus": [{"index": i} for i in range(8)],
    "nics": [{"name": "mlx5_%d" % i} for i in range(4)],
}

# (values, topology, the problems)
CASES = [
    (
        {"npuops_cpu_reserved": [0, 1]},
        None,
        [
            "npuops_cpu_reserved: must be a string, got a list [0, 1]; a cpulist is one string such "
            "as '0-3,8' (quote it in YAML)"
        ],
    ),
    (
        {"npuops_cpu_allowed": {"a": 1}},
        None,
        [
            "npuops_cpu_allowed: must be a string, got a mapping {'a': 1}; a cpulist is one string "
            "such as '0-3,8' (quote it in YAML)"
        ],
    ),
    (
        {"npuops_k8s_kubelet_version": True},
        None,
        [
            "npuops_k8s_kubelet_version: must be a string, got a boolean True; YAML reads "
            "yes/no/on/off unquoted as booleans: quote it"
        ],
    ),
    (
        {"npuops_vllm_dest": ["/opt"]},
        None,
        ["npuops_vllm_dest: must be a string, got a list ['/opt']; quote it in YAML"],
    ),
    (
        {"npuops_cpu_reserved": "0-3,x"},
        None,
        ["npuops_cpu_reserved: invalid cpulist item 'x' in '0-3,x' (a cpulist such as '0-3,8')"],
    ),
    (
        {"npuops_k8s_housekeeping_cpus": "5-2"},
        None,
        ["npuops_k8s_housekeeping_cpus: descending range '5-2' in '5-2' (a cpulist such as '0-3,8')"],
    ),
    (
        {"npuops_cpu_reserved": "9000"},
        None,
        ["npuops_cpu_reserved: CPU id 9000 in '9000' is beyond the kernel's limit (8191) (a cpulist such as '0-3,8')"],
    ),
    (
        {"npuops_softshare_mode": 0o750},
        None,
        [
            "npuops_softshare_mode: must be a quoted octal mode such as '0750', got the number 488; "
            "YAML reads an unquoted 0750 as 488; write the mode in quotes, e.g. '0750'"
        ],
    ),
    (
        {"npuops_softshare_mode": 750},
        None,
        [
            "npuops_softshare_mode: must be a quoted octal mode such as '0750', got the number 750; "
            "YAML reads an unquoted 01356 as 750; write the mode in quotes, e.g. '01356' or '750'"
        ],
    ),
    (
        {"npuops_softshare_mode": 99999},
        None,
        [
            "npuops_softshare_mode: must be a quoted octal mode such as '0750', got the number 99999; "
            "write the mode in quotes"
        ],
    ),
    ({"npuops_facts_timeout": 0}, None, ["npuops_facts_timeout: must be 1 or more, got 0"]),
    ({"npuops_frontend_cpus": -2}, None, ["npuops_frontend_cpus: must be 0 or more, got -2"]),
    ({"npuops_cpu_partition": True}, None, []),  # the cpu_binding role partitions the host
    # against the facts
    (
        {"npuops_cpu_reserved": "0-1,400"},
        A2,
        ["npuops_cpu_reserved: CPU 400 is not on this host (its online CPUs are 0-191)"],
    ),
    (
        {"npuops_cpu_allowed": "180-200"},
        A2,
        ["npuops_cpu_allowed: CPUs 192-200 are not on this host (its online CPUs are 0-191)"],
    ),
    (
        {"npuops_cpu_reserved": 400},
        A2,
        ["npuops_cpu_reserved: CPU 400 is not on this host (its online CPUs are 0-191)"],
    ),
    (
        {"npuops_cpu_reserved": "0-191"},
        A2,
        ["npuops_cpu_reserved: 0-191 covers every CPU of the CPUs this host allows (0-191): nothing is left to plan"],
    ),
    (
        {"npuops_cpu_allowed": "0-7", "npuops_cpu_reserved": "0-9"},
        A2,
        ["npuops_cpu_reserved: 0-9 covers every CPU of npuops_cpu_allowed (0-7): nothing is left to plan"],
    ),
    ({"npuops_npus": [0, 1, 9]}, A2, ["npuops_npus: NPU 9 is not on this host (its NPUs are [0..7])"]),
    ({"npuops_npus": [8, 12]}, GPU, ["npuops_npus: GPUs 8, 12 are not on this host (its GPUs are [0..7])"]),
    (
        {"npuops_nics": ["mlx5_0", "mlx5_9"]},
        GPU,
        ["npuops_nics: mlx5_9 is not an RDMA device of this host (it has mlx5_0, mlx5_1, mlx5_2, mlx5_3)"],
    ),
    ({"npuops_k8s_pod_devices": 9}, A2, ["npuops_k8s_pod_devices: 9 is more than the 8 NPUs of this host"]),
    # every problem at once, in name order
    (
        {"npuops_cpu_reserved": [0], "npuops_facts_timeout": -1, "npuops_npus": [99]},
        A2,
        [
            "npuops_cpu_reserved: must be a string, got a list [0]; a cpulist is one string such as "
            "'0-3,8' (quote it in YAML)",
            "npuops_facts_timeout: must be 1 or more, got -1",
            "npuops_npus: NPU 99 is not on this host (its NPUs are [0..7])",
        ],
    ),
]

GOOD = [
    (
        {
            "npuops_cpu_reserved": "0-1",
            "npuops_cpu_allowed": "",
            "npuops_npus": [0, 7],
            "npuops_frontend_cpus": 0,
            "npuops_cpu_partition": False,
            "npuops_k8s_node": True,
            "npuops_vllm_dest": "/opt/npuops",
            "npuops_k8s_pod_devices": 8,
            "npuops_softshare_mode": "0750",
        },
        A2,
    ),
    ({"npuops_cpu_reserved": 4, "npuops_nics": ["mlx5_3"], "npuops_npus": ["7"]}, GPU),
    ({"npuops_cpu_reserved": None, "npuops_not_in_the_spec": [1]}, A2),
]


@pytest.mark.parametrize("values,topology,expected", CASES, ids=[str(c[0])[:60] for c in CASES])
def test_each_mistake_is_named_with_its_variable(values, topology, expected):
    assert hv.problems(values, SPEC, topology) == expected
    assert host_config.variable_problems(values, SPEC, topology=topology) == expected


@pytest.mark.parametrize("values,topology", GOOD)
def test_good_values_pass(values, topology):
    assert hv.problems(values, SPEC, topology) == []
    assert hv.problems(values, SPEC) == []


def test_facts_without_cpu_data_check_the_rest():
    topo = {"vendor": "ascend", "cpu": {"online": None, "allowed": "garbage"}, "npus": [{"logic_id": 0}]}
    assert hv.problems({"npuops_cpu_reserved": "0-400", "npuops_npus": [0, 3]}, SPEC, topo) == [
        "npuops_npus: NPU 3 is not on this host (its NPUs are [0])"
    ]


def test_checks_that_need_facts_wait_for_them():
    assert hv.problems({"npuops_cpu_reserved": "400", "npuops_npus": [99]}, SPEC) == []


def test_every_cpulist_variable_of_the_spec_is_checked_as_one():
    """The rule table and the roles' specs agree: a str variable described as a cpulist (or
    as the CPUs of something) is in CPULISTS, and every CPULISTS name is a str variable."""
    roles = os.path.join(REPO, "roles")
    described = set()
    for role in os.listdir(roles):
        path = os.path.join(roles, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        with open(path) as handle:
            for entry in (yaml.safe_load(handle)["argument_specs"] or {}).values():
                for name, option in (entry.get("options") or {}).items():
                    text = option.get("description") or ""
                    text = " ".join(text) if isinstance(text, list) else text
                    if option.get("type") == "str" and ("cpulist" in text.lower() or name.endswith("_cpus")):
                        described.add(name)
    assert described == set(hv.CPULISTS)
    for name in list(hv.CPULISTS) + list(hv.LEAST) + list(hv.NOT_YET) + list(hv.MODES):
        assert name in SPEC, name
    modes = set(n for n, o in SPEC.items() if o.get("type") == "str" and n.endswith("_mode") and not o.get("choices"))
    assert modes == set(hv.MODES)


def test_the_filter_needs_the_spec_and_a_mapping():
    with pytest.raises(Exception, match="argument spec"):
        host_config.variable_problems({"npuops_cpu_reserved": "0"})
    with pytest.raises(Exception, match="mapping"):
        host_config.variable_problems(["npuops_cpu_reserved"], SPEC)
