# -*- coding: utf-8 -*-
"""kubelet/model/facts.gather: the kubernetes facts section through HostIO (FakeIO)."""

from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import facts as kubelet
from npuops_testing import fixture_text
from npuops_testing.fake_io import FakeIO


def files(**extra):
    out = {
        "/var/lib/kubelet/config.yaml": fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml"),
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": fixture_text("kubernetes/10-kubeadm.conf"),
        "/var/lib/kubelet/kubeadm-flags.env": 'KUBELET_KUBEADM_ARGS="--config-dir=/etc/kubernetes/kubelet.conf.d"\n',
        "/etc/kubernetes/kubelet.conf.d/50-npuops.conf": "kind: KubeletConfiguration\ncpuManagerPolicy: static\n",
        "/etc/kubernetes/kubelet.conf.d/README": "not a drop-in",
        "/var/lib/kubelet/cpu_manager_state": fixture_text("kubernetes/cpu_manager_state_static-v2.json"),
        "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint": fixture_text(
            "kubernetes/device_checkpoint_ascend-numa.json"
        ),
    }
    out.update(extra)
    return out


def test_gather_reads_flags_base_dropins_and_states():
    facts = kubelet.gather(FakeIO(files=files()))
    kube = facts["kubelet"]
    assert kube["config_file"] == "/var/lib/kubelet/config.yaml"
    assert kube["config_dir"] == "/etc/kubernetes/kubelet.conf.d"
    assert [d["name"] for d in kube["dropins"]] == ["50-npuops.conf"]
    assert kube["effective"]["cpuManagerPolicy"] == "static"
    assert kube["effective"]["cgroupDriver"] == "systemd"
    assert facts["cpu_manager_state"]["entries"]["pod"]["container1"] == "4-6"
    assert facts["device_checkpoint"]["entries"][0]["devices"][0]["numa_node"] == 6
    assert facts["memory_manager_state"] is None and facts["errors"] == []


def test_no_kubelet_is_none_and_bad_files_are_errors():
    assert kubelet.gather(FakeIO(files={"/etc/hostname": "x\n"})) is None
    facts = kubelet.gather(
        FakeIO(
            files=files(
                **{
                    "/var/lib/kubelet/cpu_manager_state": "{",
                    "/var/lib/kubelet/memory_manager_state": "x" * (kubelet.MAX_BYTES + 1),
                }
            )
        )
    )
    sources = sorted(e["source"] for e in facts["errors"])
    assert sources == ["/var/lib/kubelet/cpu_manager_state", "/var/lib/kubelet/memory_manager_state"]
    assert facts["cpu_manager_state"] is None and facts["kubelet"]["effective"]
