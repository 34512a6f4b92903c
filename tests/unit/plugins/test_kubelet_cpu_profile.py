# -*- coding: utf-8 -*-
"""kubelet_cpu_profile's body on sandbox roots holding the kubeadm files (real formats): drop-in
or merge, check mode inert, second run unchanged, reset_needed from the kubelet's state."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as parse
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan.dispatch import make_plan
from ansible_collections.npuops.fleet.plugins.modules import kubelet_cpu_profile as mod
from npuops_testing import SNAPSHOTS, fixture_text

OPTIONS = dict(
    mode="auto",
    config_dir=None,
    dropin_name="50-npuops.conf",
    config_file=None,
    housekeeping_cpus=None,
    pod_devices=None,
    memory_manager=False,
    kube_reserved_memory=None,
    system_reserved_memory=None,
    eviction_hard_memory=None,
    memory_reserved_node=None,
    strict_cpu_reservation=None,
    kubelet_version="v1.35.0",
    alpha_gates=False,
)
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
    (root / "var/lib/kubelet/config.yaml").write_text(fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml"))
    (root / "usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf").write_text(
        fixture_text("kubernetes/10-kubeadm.conf")
    )
    if config_dir:
        (root / "var/lib/kubelet/kubeadm-flags.env").write_text(
            'KUBELET_KUBEADM_ARGS="--config-dir=/etc/kubernetes/kubelet.conf.d '
            '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock"\n'
        )
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
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ntopologyManagerPolicy: best-effort\n"
    )
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
    assert call(root, strict_cpu_reservation=False)["reset_needed"] is False
    # strict turned on over this non-strict checkpoint: the 1.35 kubelet refuses it
    result = call(root)
    assert result["reset_needed"] is True
    assert "strict-cpu-reservation: reserved CPUs" in result["reset_reasons"][0]
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


A2_RESERVED = "0-1,12-13,48-49,60-61,96-97,108-109,144-145,156-157"


def strict_state():
    from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist

    free = sorted(set(range(192)) - set(cpulist.parse(A2_RESERVED)))
    return '{"policyName":"static","defaultCpuSet":"%s","entries":{"p":{"c":"%s"}},"checksum":1}' % (
        cpulist.format(free[4:]),
        cpulist.format(free[:4]),
    )


@pytest.mark.parametrize("version", ["v1.33.5", "v1.35.0"])
def test_a_node_already_strict_is_rerun_without_a_reset(tmp_path, version):
    # before: the reserved CPUs had to be in defaultCpuSet, so a strict node asked for a
    # reset (a drain) on every run
    root = node(tmp_path, config_dir=True, cpu_state=strict_state())
    first = call(root, kubelet_version=version)
    assert first["reset_needed"] is False and first["changed"] is True
    second = call(root, kubelet_version=version)
    assert second["changed"] is False and second["reset_needed"] is False
    assert second["profile"]["config"]["reservedSystemCPUs"] == A2_RESERVED


@pytest.mark.parametrize(
    "version, gates",
    [
        ("v1.26.15", False),
        ("v1.30.14", False),
        ("v1.32.9", False),
        ("v1.32.9", True),
        ("v1.33.5", False),
        ("v1.35.0", False),
    ],
)
def test_second_run_changes_nothing_on_each_version(tmp_path, version, gates):
    for config_dir in (True, False):
        root = node(tmp_path / str(config_dir), config_dir=config_dir)
        first = call(root, kubelet_version=version, alpha_gates=gates)
        assert first["changed"] is True
        second = call(root, kubelet_version=version, alpha_gates=gates)
        assert second["changed"] is False and second["content"] == first["content"]
        assert ("featureGates" in first["profile"]["config"]) is (gates and version == "v1.32.9")


def test_start_checks_refuse_before_writing(tmp_path):
    root = node(tmp_path, config_dir=True)
    (root / "etc/kubernetes/kubelet.conf.d").mkdir(parents=True)
    site = root / "etc/kubernetes/kubelet.conf.d/10-site.conf"
    site.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsystemReservedCgroup: /system.slice\n"
    )
    with pytest.raises(NpuopsError, match="reservedSystemCPUs: cannot be used with systemReservedCgroup"):
        call(root)
    assert not (root / "etc/kubernetes/kubelet.conf.d/50-npuops.conf").exists()
    # the node's own option refused beside the profile's
    site.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "featureGates:\n  CPUManagerPolicyAlphaOptions: true\n"
        'cpuManagerPolicyOptions:\n  distribute-cpus-across-cores: "true"\n'
    )
    with pytest.raises(NpuopsError, match="full-pcpus-only and distribute-cpus-across-cores"):
        call(root, topology=smt_facts())
    # evictionHard without memory.available: the kubelet counts 0, so does the profile
    site.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "evictionHard:\n  nodefs.available: 10%\n"
    )
    result = call(root, memory_manager=True, kube_reserved_memory="1Gi")
    assert result["profile"]["config"]["reservedMemory"][0]["limits"] == {"memory": "1024Mi"}
    assert call(root, memory_manager=True, kube_reserved_memory="1Gi")["changed"] is False


def symlinked(path):
    (path.parent / "elsewhere").write_text('{"policyName":"static","defaultCpuSet":"0-191","checksum":1}')
    path.symlink_to("elsewhere")


def hard_linked(path):
    import os

    (path.parent / "other-name").write_text('{"policyName":"static","defaultCpuSet":"0-191","checksum":1}')
    os.link(str(path.parent / "other-name"), str(path))


def smt_facts():
    import copy

    facts, dummy = a2()
    facts = copy.deepcopy(facts)
    facts["cpu"]["threads_per_core"] = 2
    return facts


@pytest.mark.parametrize(
    "name, make",
    [
        ("corrupt", lambda p: p.write_text("{")),
        (
            "old format",
            lambda p: p.write_text('{"policyName":"static","defaultCpuSet":"0-3","entries":{"c1":"0"},"checksum":1}'),
        ),
        ("oversized", lambda p: p.write_text("x" * (2 << 20))),
        ("directory", lambda p: p.mkdir()),
        ("symlink", symlinked),
        ("hard link", hard_linked),
    ],
)
def test_a_state_file_that_cannot_be_read_is_refused_not_taken_as_absent(tmp_path, name, make):
    root = node(tmp_path)
    make(root / "var/lib/kubelet/cpu_manager_state")
    with pytest.raises(NpuopsError, match="nothing written: the kubelet's state cannot be judged"):
        call(root, check=True)
    assert "cpuManagerPolicy: static" not in (root / "var/lib/kubelet/config.yaml").read_text()


def test_a_symlinked_kubelet_directory_is_read(tmp_path):
    root = node(tmp_path)
    (root / "data").mkdir()
    (root / "var/lib/kubelet").rename(root / "data/kubelet")
    (root / "var/lib/kubelet").symlink_to("../../data/kubelet")
    (root / "data/kubelet/cpu_manager_state").write_text('{"policyName":"none","defaultCpuSet":"","checksum":1}')
    result = call(root, check=True)
    assert result["reset_needed"] is True and "none -> static" in result["reset_reasons"][0]


def test_merge_waits_for_the_shared_file_lock(tmp_path):
    """The merge reads, merges and rewrites the kubelet's own file under the lock every
    read-merge-write of a shared host file takes (host/locks): while another run holds it, the
    file is not written; check mode takes no lock and leaves no lock file."""
    import fcntl
    import threading
    import time

    root = node(tmp_path)
    config = root / "var/lib/kubelet/config.yaml"
    lock = root / "var/lib/kubelet/.config.yaml.lock"
    call(root, check=True, mode="merge")
    assert not lock.exists()
    lock.write_text("")
    held = open(str(lock), "r+")
    fcntl.flock(held.fileno(), fcntl.LOCK_EX)
    before = config.read_text()
    done = []
    worker = threading.Thread(target=lambda: done.append(call(root, mode="merge")))
    worker.start()
    time.sleep(1.0)
    assert config.read_text() == before and not done  # waiting on the lock, nothing written
    fcntl.flock(held.fileno(), fcntl.LOCK_UN)
    held.close()
    worker.join(30)
    assert done and done[0]["changed"] and config.read_text() != before
