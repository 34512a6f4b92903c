# -*- coding: utf-8 -*-
"""kubelet_cpu_profile's body on sandbox roots holding the kubeadm files (real formats): drop-in
or merge, check mode inert, second run unchanged, reset_needed from the kubelet's state."""
import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.parse import kubelet as parse
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from ansible_collections.npuops.fleet.plugins.modules import kubelet_cpu_profile as mod
from npuops_testing import SNAPSHOTS, fixture_text

OPTIONS = dict(mode="auto", config_dir=None, dropin_name="50-npuops.conf", config_file=None,
               housekeeping_cpus=None, pod_devices=None, memory_manager=False,
               kube_reserved_memory=None, system_reserved_memory=None, eviction_hard_memory=None,
               memory_reserved_node=None, strict_cpu_reservation=None, kubelet_version="v1.35.0")
_FACTS = {}


class FakeModule(object):
    def __init__(self, params, check_mode=False):
        self.params, self.check_mode = params, check_mode


def a2():
    if "a2" not in _FACTS:
        facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8")))
        _FACTS["a2"] = (facts, make_plan(facts))
    return _FACTS["a2"]


def node(tmp_path, config_dir=False, cpu_state=None):
    root = tmp_path / "host"
    (root / "var/lib/kubelet").mkdir(parents=True)
    (root / "usr/lib/systemd/system/kubelet.service.d").mkdir(parents=True)
    (root / "var/lib/kubelet/config.yaml").write_text(
        fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml"))
    (root / "usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf").write_text(
        fixture_text("kubernetes/10-kubeadm.conf"))
    if config_dir:
        (root / "var/lib/kubelet/kubeadm-flags.env").write_text(
            'KUBELET_KUBEADM_ARGS="--config-dir=/etc/kubernetes/kubelet.conf.d '
            '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock"\n')
    if cpu_state:
        (root / "var/lib/kubelet/cpu_manager_state").write_text(cpu_state)
    return root


def call(root, check=False, **over):
    facts, plan = a2()
    params = dict(OPTIONS, plan=plan, topology=facts, host_root=str(root))
    params.update(over)
    return mod.prepare(FakeModule(params, check))


def test_merge_keeps_every_other_line_and_is_idempotent(tmp_path):
    root = node(tmp_path)
    before = (root / "var/lib/kubelet/config.yaml").read_text()
    dry = call(root, check=True)
    assert dry["changed"] and dry["mode"] == "merge"
    assert (root / "var/lib/kubelet/config.yaml").read_text() == before  # check mode inert
    first = call(root)
    text = (root / "var/lib/kubelet/config.yaml").read_text()
    assert first["changed"] and first["path"] == "/var/lib/kubelet/config.yaml"
    assert first["diff"]["before"] == before and first["diff"]["after"] == text
    for line in before.splitlines():  # every kubeadm line is still there
        assert line in text.splitlines()
    config = parse.parse_config(text)
    assert config["cpuManagerPolicy"] == "static" and config["cgroupDriver"] == "systemd"
    assert config["reservedSystemCPUs"] == "0-1,12-13,48-49,60-61,96-97,108-109,144-145,156-157"
    assert call(root)["changed"] is False
    assert (root / "var/lib/kubelet/config.yaml").read_text() == text


def test_dropin_where_the_kubelet_runs_with_config_dir(tmp_path):
    root = node(tmp_path, config_dir=True)
    before = (root / "var/lib/kubelet/config.yaml").read_text()
    result = call(root)
    assert result["mode"] == "dropin"
    assert result["path"] == "/etc/kubernetes/kubelet.conf.d/50-npuops.conf"
    assert result["kubelet"]["config_dir"] == "/etc/kubernetes/kubelet.conf.d"
    dropin = parse.parse_config((root / "etc/kubernetes/kubelet.conf.d/50-npuops.conf").read_text())
    assert dropin["kind"] == "KubeletConfiguration" and dropin["apiVersion"] == parse.API_VERSION
    assert dropin["topologyManagerPolicy"] == "restricted"
    assert (root / "var/lib/kubelet/config.yaml").read_text() == before
    assert call(root)["changed"] is False


def test_later_dropin_overriding_is_warned(tmp_path):
    root = node(tmp_path, config_dir=True)
    (root / "etc/kubernetes/kubelet.conf.d").mkdir(parents=True)
    (root / "etc/kubernetes/kubelet.conf.d/90-site.conf").write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "topologyManagerPolicy: best-effort\n")
    result = call(root)
    assert any("overrides topologyManagerPolicy" in w for w in result["warnings"])


def test_reset_needed_when_the_state_file_holds_policy_none(tmp_path):
    root = node(tmp_path, cpu_state='{"policyName":"none","defaultCpuSet":"","checksum":1353318690}')
    result = call(root, check=True)
    assert result["reset_needed"] is True
    assert "cpuManagerPolicy none -> static" in result["reset_reasons"][0]
    call(root)
    assert call(root)["reset_needed"] is True  # still, until the state file is gone


def test_no_reset_when_state_is_static_and_reserved_in_default_set(tmp_path):
    root = node(tmp_path, cpu_state='{"policyName":"static","defaultCpuSet":"0-191","checksum":1}')
    assert call(root)["reset_needed"] is False
    state = '{"policyName":"static","defaultCpuSet":"2-191","entries":{"p":{"c":"0-1"}},"checksum":1}'
    root2 = node(tmp_path / "b", cpu_state=state)
    result = call(root2)
    assert result["reset_needed"] is True and "defaultCpuSet" in result["reset_reasons"][0]


def test_missing_config_file_and_bad_dropin_name_fail_clearly(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    with pytest.raises(NpuopsError, match="does not exist"):
        call(root)
    with pytest.raises(NpuopsError, match="ending in .conf"):
        call(node(tmp_path), mode="dropin", dropin_name="../x.conf")
