# -*- coding: utf-8 -*-
"""kubelet/parse/files.py beyond the fixture table: the kubelet's own checkpoint cases (ported as
data in tests/fixtures/kubelet/), merging drop-ins, flags, and bad input that must fail clearly."""

import os

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as kubelet
from npuops_testing import REPO

FIXTURES_KUBELET = os.path.join(REPO, "tests", "fixtures", "kubelet")
with open(os.path.join(FIXTURES_KUBELET, "cpu_manager_checkpoint.yml")) as _handle:
    CPU_CASES = yaml.safe_load(_handle)["cases"]


def _outcome(content):
    try:
        return kubelet.parse_cpu_manager_state(content)
    except ParseError:
        return "error"


@pytest.mark.parametrize(
    "case", [c for c in CPU_CASES if not c.get("checksum")], ids=[c["id"] for c in CPU_CASES if not c.get("checksum")]
)
def test_kubelet_checkpoint_case(case):
    got = _outcome(case["content"])
    if case.get("error"):
        assert got == "error"
    else:
        assert got != "error"
        for key, value in case["expected"].items():
            assert got[key] == value, key


def test_kubelet_checkpoint_cases_agreement():
    """k of N: every case agrees but those that turn on the (unverified) checksum."""
    agree = [c["id"] for c in CPU_CASES if (_outcome(c["content"]) == "error") == bool(c.get("error"))]
    checksum_only = [c["id"] for c in CPU_CASES if c.get("checksum")]
    assert len(CPU_CASES) == 13
    assert sorted(set(c["id"] for c in CPU_CASES) - set(agree)) == sorted(checksum_only)


def test_merge_dropins_in_name_order_maps_merged_lists_replaced():
    base = {
        "kind": "KubeletConfiguration",
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
        "clusterDNS": ["10.96.0.10"],
        "cpuManagerPolicy": "none",
    }
    merged = kubelet.merge_configs(
        base,
        [
            ("90-late.conf", {"cpuManagerPolicy": "static"}),
            (
                "50-npuops.conf",
                {"cpuManagerPolicy": "none", "evictionHard": {"memory.available": "500Mi"}, "clusterDNS": ["10.0.0.1"]},
            ),
        ],
    )
    assert merged["cpuManagerPolicy"] == "static"
    assert merged["evictionHard"] == {"memory.available": "500Mi", "nodefs.available": "10%"}
    assert merged["clusterDNS"] == ["10.0.0.1"]
    assert base["evictionHard"]["memory.available"] == "100Mi"  # inputs untouched


def test_flags_config_dir_and_comments():
    text = (
        '# KUBELET_KUBEADM_ARGS="--config-dir=/nope"\n'
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock '
        '--config-dir=/etc/kubernetes/kubelet.conf.d/ --pod-infra-container-image=x"\n'
    )
    assert kubelet.parse_flags(text) == {"config": None, "config_dir": "/etc/kubernetes/kubelet.conf.d"}
    assert kubelet.parse_flags("ExecStart=/usr/bin/kubelet --config /etc/k.yaml\n")["config"] == "/etc/k.yaml"
    with pytest.raises(ParseError, match="absolute"):
        kubelet.parse_flags("ARGS=--config-dir=relative/dir\n")


@pytest.mark.parametrize(
    "text, match",
    [
        ("kind: KubeProxyConfiguration\n", "kind is"),
        ("- a\n- b\n", "mapping"),
        ("a: &x 1\n", "line"),
    ],
)
def test_config_errors(text, match):
    with pytest.raises(ParseError, match=match):
        kubelet.parse_config(text, "config.yaml")


def test_config_json_and_empty():
    assert (
        kubelet.parse_config('{\n"kind": "KubeletConfiguration", "cpuManagerPolicy": "static"\n}')["cpuManagerPolicy"]
        == "static"
    )
    assert kubelet.parse_config("---\n") == {}


@pytest.mark.parametrize(
    "func, text, match",
    [
        (kubelet.parse_device_checkpoint, '{"Data": {"PodDeviceEntries": {}}}', "must be a list"),
        (kubelet.parse_device_checkpoint, '{"Data": {"PodDeviceEntries": [{"PodUID": 1}]}}', "strings"),
        (
            kubelet.parse_device_checkpoint,
            '{"Data": {"PodDeviceEntries": [{"PodUID": "p", "ResourceName": "r", "DeviceIDs": {"x": []}}]}}',
            "NUMA node",
        ),
        (
            kubelet.parse_memory_manager_state,
            '{"policyName": "Static", "machineState": {"0": {"memoryMap": {"memory": {"total": -1}}}}}',
            "non-negative",
        ),
        (kubelet.parse_cpu_manager_state, "[]", "object"),
        (kubelet.parse_cpu_manager_state, '{"defaultCpuSet": "0-3"}', "policyName"),
        (kubelet.parse_cpu_manager_state, '{"policyName": "static", "defaultCpuSet": 5}', "string"),
    ],
)
def test_state_errors(func, text, match):
    with pytest.raises(ParseError, match=match):
        func(text)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_or_fails_clearly(text):
    for func in (
        kubelet.parse_config,
        kubelet.parse_cpu_manager_state,
        kubelet.parse_device_checkpoint,
        kubelet.parse_memory_manager_state,
        kubelet.parse_flags,
    ):
        try:
            func(text)
        except ParseError:
            pass
