# -*- coding: utf-8 -*-
"""kubelet_state_reset in-process: the removed drain options are deprecated the Ansible way
(a deprecation, not silently ignored), the state files never move while systemctl says the
kubelet runs (a systemctl stand-in first on PATH), apply -> rollback -> commit through the
module."""

import os

from npuops_testing.kube_standins import FakeSystemd
from npuops_testing.module_harness import call_module

CPU_STATE = '{"policyName":"none","defaultCpuSet":"","checksum":1}'


def host(tmp_path):
    root = tmp_path / "root"
    kdir = root / "var/lib/kubelet"
    kdir.mkdir(parents=True)
    (kdir / "config.yaml").write_text("kind: KubeletConfiguration\n")
    (kdir / "cpu_manager_state").write_text(CPU_STATE)
    return root, kdir


def args(root, **kw):
    out = {
        "host_root": str(root),
        "config_path": "/var/lib/kubelet/config.yaml",
        "config_content": "kind: KubeletConfiguration\ncpuManagerPolicy: static\n",
    }
    out.update(kw)
    return out


def with_systemd(monkeypatch, tmp_path, active):
    systemd = FakeSystemd(tmp_path / "systemd", active=active)
    monkeypatch.setenv("PATH", systemd.env()["PATH"])
    return systemd


def test_removed_options_are_deprecated_not_silently_ignored(tmp_path, monkeypatch):
    root, kdir = host(tmp_path)
    with_systemd(monkeypatch, tmp_path, "inactive")
    result = call_module(
        "kubelet_state_reset",
        args(root, node_name="n1", kubeconfig="/etc/kubernetes/admin.conf", drain_timeout=600),
        check=True,
    )
    assert not result.get("failed"), result
    deprecations = result.get("deprecations", [])
    text = sorted(str((d.get("event") or d).get("msg")) for d in deprecations)
    assert text == [
        "Param '%s' is deprecated. See the module docs for more information" % name
        for name in ("drain_timeout", "kubeconfig", "node_name")
    ], result
    assert all(d["version"] == "1.0.0" and "npuops.fleet" in str(d) for d in deprecations)


def test_state_files_never_move_while_the_kubelet_runs(tmp_path, monkeypatch):
    """The old way of calling the module (node_name + kubeconfig, kubelet running) ends in a
    refusal with nothing changed, not in state files pulled from under a running kubelet."""
    root, kdir = host(tmp_path)
    systemd = with_systemd(monkeypatch, tmp_path, "active")
    result = call_module("kubelet_state_reset", args(root, node_name="n1", kubeconfig="/k"))
    assert result["failed"] is True
    assert "kubelet is active: stop it before its state files move" in result["msg"]
    assert sorted(os.listdir(str(kdir))) == ["config.yaml", "cpu_manager_state"]
    assert systemd.calls() == ["is-active kubelet"]


def test_apply_rollback_commit(tmp_path, monkeypatch):
    root, kdir = host(tmp_path)
    with_systemd(monkeypatch, tmp_path, "inactive")
    first = call_module("kubelet_state_reset", args(root))
    assert first["changed"] is True and len(first["steps"]) == 3, first
    back = call_module("kubelet_state_reset", args(root, step="rollback"))
    assert back["changed"] is True
    assert (kdir / "cpu_manager_state").read_text() == CPU_STATE
    assert (kdir / "config.yaml").read_text() == "kind: KubeletConfiguration\n"
    again = call_module("kubelet_state_reset", args(root, step="rollback"))
    assert again["changed"] is False
    call_module("kubelet_state_reset", args(root))
    done = call_module("kubelet_state_reset", args(root, step="commit"))
    assert done["changed"] is True
    assert sorted(os.listdir(str(kdir))) == ["config.yaml"]
