# -*- coding: utf-8 -*-
"""Role k8s_node on recorded A2 and DGX hosts with kubeadm's kubelet files in their sandbox
roots: check mode writes nothing, a run merges the profile into the kubelet config and pins
the IRQs onto its reserved CPUs, a second run changes nothing; a policy change that needs the
kubelet's state reset is refused without a kubeconfig, with nothing written."""

import os

import pytest

from npuops_testing import fixture_text
from npuops_testing.fleet import make_fleet, need, play, recap, written
from npuops_testing.runner import run_playbook

pytestmark = pytest.mark.slow
KUBELET_FILES = {
    "var/lib/kubelet/config.yaml": "kubernetes/kubeadm_var-lib-kubelet_config.yaml",
    "usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": "kubernetes/10-kubeadm.conf"}


def add_kubelet(tmp_path, host, state=None):
    root = tmp_path / "demo" / host / "root"
    for rel, fixture in KUBELET_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(fixture_text(fixture))
    if state:
        (root / "var/lib/kubelet/cpu_manager_state").write_text(state)
    return root


def role_play(tmp_path):
    return play(tmp_path, [{"name": "Kubernetes node", "ansible.builtin.import_role": {
        "name": "npuops.fleet.k8s_node"}}])


def test_profile_merged_irqs_on_reserved_idempotent(tmp_path):
    need("a2-910b3x8", "dgx-a100")
    inv = make_fleet(tmp_path, {"a2": ("a2-910b3x8", {"npuops_k8s_kubelet_version": "v1.35.0"}),
                                "dgx": ("dgx-a100", {"npuops_k8s_kubelet_version": "v1.35.0"})})
    roots = dict((h, add_kubelet(tmp_path, h)) for h in ("a2", "dgx"))
    before = dict((h, (r / "var/lib/kubelet/config.yaml").read_text()) for h, r in roots.items())
    pb = role_play(tmp_path)
    check = run_playbook(pb, inv, ["--check"])
    assert check.returncode == 0, check.stdout
    assert recap(check.stdout)["a2"]["changed"] > 0
    for host, root in roots.items():
        assert (root / "var/lib/kubelet/config.yaml").read_text() == before[host]
    assert written(tmp_path, "a2", "a2-910b3x8") <= {"/var/lib/kubelet/config.yaml",
                                                     "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"}

    first = run_playbook(pb, inv)
    assert first.returncode == 0, first.stdout
    a2_text = (roots["a2"] / "var/lib/kubelet/config.yaml").read_text()
    assert a2_text.startswith(before["a2"])  # kubeadm's lines kept, the profile appended
    assert 'reservedSystemCPUs: "0-1,12-13,48-49,60-61,96-97,108-109,144-145,156-157"' in a2_text
    assert 'topologyManagerPolicy: "restricted"' in a2_text
    dgx_text = (roots["dgx"] / "var/lib/kubelet/config.yaml").read_text()
    assert 'reservedSystemCPUs: "16,48,80,112,144,176,208,240"' in dgx_text
    assert "full-pcpus-only" in dgx_text

    again = run_playbook(pb, inv)
    assert again.returncode == 0, again.stdout
    assert recap(again.stdout)["a2"]["changed"] == 0, again.stdout
    assert recap(again.stdout)["dgx"]["changed"] == 0, again.stdout


def test_policy_change_without_kubeconfig_is_refused_and_nothing_written(tmp_path):
    need("a2-910b3x8")
    inv = make_fleet(tmp_path, {"a2": ("a2-910b3x8", {})})
    root = add_kubelet(tmp_path, "a2", '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}')
    before = (root / "var/lib/kubelet/config.yaml").read_text()
    result = run_playbook(role_play(tmp_path), inv)
    assert result.returncode != 0
    assert recap(result.stdout)["a2"]["failed"] == 1
    assert "cpuManagerPolicy none -> static" in result.stdout
    assert "Nothing was changed. Give npuops_k8s_kubeconfig" in result.stdout
    assert (root / "var/lib/kubelet/config.yaml").read_text() == before
    assert os.path.exists(str(root / "var/lib/kubelet/cpu_manager_state"))
