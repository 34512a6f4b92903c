# -*- coding: utf-8 -*-
"""Soft-share device-plugin configuration (plugins/module_utils/softshare/plugin_config.py):
the DaemonSet against the shipped manifest, configuration checks, node labels; and the
controller's YAML writer of those manifests (plugins/plugin_utils/manifests.py, PyYAML).
Each table row says where the rule comes from:
``shipped`` = MindCluster 26.x code (device plugin / ascend-for-volcano), ``rfc`` = the RFC text."""

import pytest
import yaml  # controller-side test: PyYAML parses what the controller renders
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SoftShareError
from ansible_collections.npuops.fleet.plugins.module_utils.softshare import plugin_config, scheduler
from ansible_collections.npuops.fleet.plugins.plugin_utils import manifests
from npuops_testing import fixture_text


def _args(docs):
    ds = [d for d in docs if d["kind"] == "DaemonSet"][0]
    return ds, ds["spec"]["template"]["spec"]["containers"][0]["args"][0].split()


@pytest.mark.parametrize("device_type,single_die", [("A2", False), ("A3", True)])
def test_daemonset_flags(device_type, single_die):
    docs = list(yaml.safe_load_all(manifests.render_daemonset("/share_device/", device_type, "26.0.0")))
    ds, args = _args(docs)
    assert args[0] == "device-plugin"
    for flag in ("-volcanoType=true", "-shareDevCount=100", "-softShareDevConfigDir=/share_device/"):
        assert flag in args
    assert ("-useSingleDieMode=true" in args) is single_die
    assert not any(a.startswith("-useAscendDocker") for a in args)
    assert ds["spec"]["template"]["spec"]["nodeSelector"][scheduler.LABEL_ENABLE] == "true"


def test_daemonset_keeps_everything_of_the_shipped_manifest():
    shipped = list(yaml.safe_load_all(fixture_text("ascend/ascend-device-plugin_ascendplugin-volcano.yaml.txt")))
    ours = list(yaml.safe_load_all(manifests.render_daemonset("/share_device", "A2", "26.0.0")))
    assert [d["kind"] for d in ours] == [d["kind"] for d in shipped]
    assert ours[1]["rules"] == shipped[1]["rules"]
    s_pod, o_pod = (_args(d)[0]["spec"]["template"]["spec"] for d in (shipped, ours))
    o_volumes = {v["name"]: v["hostPath"] for v in o_pod["volumes"]}
    for volume in s_pod["volumes"]:
        assert o_volumes[volume["name"]] == volume["hostPath"]
    assert o_volumes["enpu"]["path"] == "/etc/enpu/"
    assert o_volumes["share-device"] == {"path": "/share_device", "type": "DirectoryOrCreate"}
    assert o_volumes["vnpucfg"]["type"] == "File"
    s_args, o_args = _args(shipped)[1], _args(ours)[1]
    assert set(s_args) <= set(o_args)
    assert o_pod["tolerations"] == s_pod["tolerations"]
    mounts = {m["name"]: m["mountPath"] for m in o_pod["containers"][0]["volumeMounts"]}
    assert mounts["enpu"] == "/etc/enpu/" and mounts["share-device"] == "/share_device"
    for key in ("hostPID", "priorityClassName", "affinity"):
        assert o_pod[key] == s_pod[key]
    assert o_pod["initContainers"][0]["command"] == s_pod["initContainers"][0]["command"]


CONFIG_CASES = [
    # (source, kwargs, error fragment) - all from the shipped plugin/docs unless noted
    ("shipped: shareDevCount must be 100", {"share_dev_count": 50}, "shareDevCount must be 100"),
    ("shipped: volcanoType required", {"volcano_type": False}, "volcanoType must be true"),
    ("shipped: dynamic vNPU excludes soft share", {"preset_virtual_device": False}, "presetVirtualDevice"),
    ("shipped: root absolute", {"root": "share_device"}, "must be absolute"),
    ("shipped: root without ..", {"root": "/a/../share"}, "'..'"),
    ("shipped: root not /", {"root": "/"}, "must not be /"),
    ("shipped: parent of root must exist", {"root_parent_exists": False}, "does not exist"),
    ("docs: soft share from 26.0.0", {"version": "6.0.0"}, "predates soft share"),
    ("docs: A2/A3 only", {"device_type": "310P"}, "A2 and A3"),
    ("shipped: single-die mode is A3 only", {"single_die_mode": True}, "A3 only"),
    ("docs: A3 needs single-die mode", {"device_type": "A3", "single_die_mode": False}, "useSingleDieMode=true"),
    (
        "shipped: -useAscendDocker is not a 26.x flag",
        {"extra_args": ["-useAscendDocker=true"]},
        "flag provided but not defined",
    ),
    ("shipped: 310P mixed insert incompatible", {"extra_args": ["-use310PMixedInsert=true"]}, "incompatible"),
    ("ours: managed flags not repeated", {"extra_args": ["-shareDevCount=100"]}, "set by npuops"),
    ("ours: extra args are single flags", {"extra_args": ["-a=1 -b=2"]}, "single -flag"),
    ("shipped: logLevel -1..3", {"log_level": 7}, "logLevel"),
]


@pytest.mark.parametrize("source,kwargs,error", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_validate_plugin_config(source, kwargs, error):
    args = {"root": "/share_device", "device_type": "A2", "version": "26.0.0"}
    args.update(kwargs)
    with pytest.raises(SoftShareError) as err:
        plugin_config.validate_plugin_config(**args)
    assert error in str(err.value)


def test_validate_plugin_config_lists_every_problem():
    with pytest.raises(SoftShareError) as err:
        plugin_config.validate_plugin_config("rel", "A2", "5.0", share_dev_count=1)
    text = str(err.value)
    assert "absolute" in text and "predates" in text and "shareDevCount" in text


def test_extra_args_are_appended():
    docs = list(
        yaml.safe_load_all(
            manifests.render_daemonset("/share_device", "A2", "v26.0.RC1", extra_args=["-listWatchPeriod=10"])
        )
    )
    assert _args(docs)[1][-1] == "-listWatchPeriod=10"


def test_node_labels():
    assert plugin_config.node_labels() == {scheduler.LABEL_ENABLE: "true", "workerselector": "dls-worker-node"}
    assert plugin_config.node_labels(enable=False)[scheduler.LABEL_ENABLE] == "false"
    patch = yaml.safe_load(manifests.render_node_labels("n1", plugin_config.node_labels()))
    assert patch == {"metadata": {"name": "n1", "labels": plugin_config.node_labels()}}


# integers as a manifest holds them (64-bit)
plain = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1), st.text(max_size=12))
tree = st.recursive(
    plain,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(tree)
def test_to_yaml_round_trips(value):
    assert yaml.safe_load(manifests.to_yaml(value)) == value


def test_manifest_layout_is_kubectls():
    """Keys in the order the objects are built, sequences indented under their key, no anchor
    for the one list two RBAC rules share, the plugin's long command line on one line."""
    text = manifests.render_daemonset("/share_device", "A3", "26.0.0", extra_args=["-x=" + "y" * 200])
    assert "&id" not in text and "*id" not in text
    lines = text.split("\n")
    assert lines[:3] == [
        "# Ascend device plugin, soft-share (chip1-softShareDev) variant for A3 hosts.",
        "# Rendered by npuops.fleet from the shipped ascendplugin-volcano.yaml.",
        "---",
    ]
    assert lines[3:8] == [
        "apiVersion: v1",
        "kind: ServiceAccount",
        "metadata:",
        "  name: ascend-device-plugin-sa",
        "  namespace: kube-system",
    ]
    rules = lines.index("rules:")
    assert lines[rules + 1 : rules + 3] == ["  - apiGroups:", "      - ''"]
    args = [line for line in lines if "device-plugin -volcanoType=true" in line]
    assert len(args) == 1 and args[0].endswith("-x=" + "y" * 200)
    assert manifests.render_node_labels("n1", {"b": "true", "a": "x"}) == (
        "metadata:\n  name: n1\n  labels:\n    b: 'true'\n    a: x\n"
    )
