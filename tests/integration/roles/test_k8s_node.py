# -*- coding: utf-8 -*-
"""Role k8s_node on recorded A2 and DGX hosts with kubeadm's kubelet files in their sandbox
roots: check mode writes nothing, a run merges the profile into the kubelet config and pins
the IRQs onto its reserved CPUs, a second run changes nothing; a policy change that needs the
kubelet's state reset is refused without a kubeconfig, with nothing written.

The change itself (drain, stop, files, start, healthz, Ready, uncordon, rollback) runs against
fault-injecting stand-ins on 127.0.0.1 (npuops_testing.kube_standins): a Kubernetes API that
kubernetes.core.k8s_drain / k8s_info reach through the kubernetes client, a kubelet healthz and
a systemctl first on PATH; the role acts on the sandbox root as on a real host
(``__npuops_k8s_real_host`` forced). Each fault ends in a known state, asserted: where the
kubelet's files are, whether it runs and on which configuration, the node's cordon, the message.
"""

import json
import os

import pytest

from npuops_testing import fixture_text
from npuops_testing.fleet import make_fleet, need, play, recap, written
from npuops_testing.runner import run_playbook

pytestmark = pytest.mark.slow
KUBELET_FILES = {
    "var/lib/kubelet/config.yaml": "kubernetes/kubeadm_var-lib-kubelet_config.yaml",
    "usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": "kubernetes/10-kubeadm.conf",
}


def add_kubelet(tmp_path, host, state=None):
    root = tmp_path / "demo" / host / "root"
    for rel, fixture in KUBELET_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(fixture_text(fixture))
    if state:
        (root / "var/lib/kubelet/cpu_manager_state").write_text(state)
    return root


def role_play(tmp_path):
    return play(
        tmp_path, [{"name": "Kubernetes node", "ansible.builtin.import_role": {"name": "npuops.fleet.k8s_node"}}]
    )


def test_profile_merged_irqs_on_reserved_idempotent(tmp_path):
    need("a2-910b3x8", "dgx-a100")
    inv = make_fleet(
        tmp_path,
        {
            "a2": ("a2-910b3x8", {"npuops_k8s_kubelet_version": "v1.35.0"}),
            "dgx": ("dgx-a100", {"npuops_k8s_kubelet_version": "v1.35.0"}),
        },
    )
    roots = dict((h, add_kubelet(tmp_path, h)) for h in ("a2", "dgx"))
    before = dict((h, (r / "var/lib/kubelet/config.yaml").read_text()) for h, r in roots.items())
    pb = role_play(tmp_path)
    check = run_playbook(pb, inv, ["--check"])
    assert check.returncode == 0, check.stdout
    assert recap(check.stdout)["a2"]["changed"] > 0
    for host, root in roots.items():
        assert (root / "var/lib/kubelet/config.yaml").read_text() == before[host]
    assert written(tmp_path, "a2", "a2-910b3x8") <= {
        "/var/lib/kubelet/config.yaml",
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
    }

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


# -- the change under faults ----------------------------------------------------------------
NODE = "a2"
NONE_STATE = '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}'
PODS = [
    {"namespace": "infer", "name": "vllm-0", "node": NODE, "owner": "StatefulSet", "emptydir": True},
    {"namespace": "kube-system", "name": "ascend-device-plugin-x", "node": NODE, "owner": "DaemonSet"},
    {"namespace": "kube-system", "name": "kube-proxy-mirror", "node": NODE, "mirror": True},
    {"namespace": "infer", "name": "done-job", "node": NODE, "owner": "Job", "phase": "Succeeded"},
    {"namespace": "infer", "name": "elsewhere", "node": "other-node", "owner": "ReplicaSet"},
]
STAYS = ["infer/elsewhere", "kube-system/ascend-device-plugin-x", "kube-system/kube-proxy-mirror"]


class World(object):
    """A sandbox A2 node whose kubelet runs under the stand-ins."""

    def __init__(
        self,
        tmp_path,
        pods=None,
        unschedulable=False,
        pdb_refusals=0,
        stuck=(),
        refuse=(),
        ready=True,
        healthz="http",
        healthz_port=None,
        state=NONE_STATE,
        kubelet_dir=None,
        start_timeout=6,
        **extra,
    ):
        need("a2-910b3x8")
        from npuops_testing import kube_standins as ks

        self.tmp = tmp_path
        self.inv = make_fleet(
            tmp_path,
            {
                NODE: (
                    "a2-910b3x8",
                    dict(
                        {
                            "npuops_k8s_kubelet_version": "v1.35.0",
                            "npuops_k8s_kubelet_start_timeout": start_timeout,
                            "npuops_k8s_drain_timeout": 20,
                        },
                        **extra,
                    ),
                )
            },
        )
        self.root = add_kubelet(tmp_path, NODE, state)
        kdir = self.root / "var/lib/kubelet"
        if kubelet_dir:  # /var/lib/kubelet -> /data/kubelet (a data disk)
            target = self.root / kubelet_dir.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(str(kdir), str(target))
            os.symlink(kubelet_dir, str(kdir))
            kdir = target
        self.kdir = kdir
        self.systemd = ks.FakeSystemd(tmp_path / "systemd")
        self.kubelet = ks.Kubelet(self.systemd, kdir / "config.yaml", refuse, ready)
        self.healthz = ks.Healthz(self.kubelet, healthz)
        port = healthz_port or self.healthz.port
        config = kdir / "config.yaml"
        config.write_text(config.read_text().replace("healthzPort: 10248", "healthzPort: %d" % port))
        self.original = config.read_text()
        self.api = ks.KubeApi(self.kubelet, NODE, PODS if pods is None else pods, unschedulable, pdb_refusals, stuck)
        self.kubeconfig = self.api.kubeconfig(tmp_path / "kubeconfig")

    def run(self, *extra):
        variables = {"__npuops_k8s_real_host": True, "npuops_k8s_kubeconfig": self.kubeconfig}
        return run_playbook(
            role_play(self.tmp), self.inv, ["-e", json.dumps(variables)] + list(extra), env=self.systemd.env()
        )

    def close(self):
        self.healthz.close()
        self.api.close()

    def files(self):
        return sorted(os.listdir(str(self.kdir)))

    def pods_left(self):
        return sorted("%s/%s" % (p["namespace"], p["name"]) for p in self.api.pods)


@pytest.fixture
def world(tmp_path):
    made = []

    def make(**kw):
        made.append(World(tmp_path, **kw))
        return made[-1]

    yield make
    for one in made:
        one.close()


def _msg(result):
    return " ".join(result.stdout.split())


def test_reset_drains_through_kubernetes_core_and_uncordons(world):
    w = world(pdb_refusals=1)
    result = w.run()
    assert result.returncode == 0, result.stdout
    assert w.pods_left() == STAYS  # the StatefulSet pod evicted after one PDB 429, the finished one too
    log = w.api.log
    assert len([e for e in log if e.endswith("-> 429")]) == 1, log
    assert "POST eviction infer/vllm-0" in log and "POST eviction infer/done-job" in log, log
    assert log.index("PATCH node unschedulable=True") < log.index("POST eviction infer/vllm-0")
    patches = [e for e in log if e.startswith(("PATCH", "POST"))]
    assert patches[0] == "PATCH node unschedulable=True" and patches[-1] == "PATCH node unschedulable=False", log
    assert w.api.unschedulable is False
    assert w.systemd.calls().count("stop kubelet") == 1 and w.systemd.calls().count("start kubelet") == 1
    assert w.systemd.state()["active"] == "active"
    assert w.files() == ["config.yaml"]  # state files gone (the new kubelet writes its own), no copies
    assert 'cpuManagerPolicy: "static"' in (w.kdir / "config.yaml").read_text()
    again = w.run()
    assert again.returncode == 0, again.stdout
    assert recap(again.stdout)[NODE]["changed"] == 0, again.stdout
    assert w.systemd.calls().count("start kubelet") == 1  # the second run did not restart it


def test_new_configuration_refused_is_rolled_back_and_our_cordon_undone(world):
    w = world(refuse=['cpuManagerPolicy: "static"'])
    result = w.run()
    assert result.returncode != 0
    msg = _msg(result)
    assert "the new kubelet configuration failed" in msg
    assert "Rolled back: put back /var/lib/kubelet/config.yaml, put back /var/lib/kubelet/cpu_manager_state" in msg
    assert "The kubelet runs on its previous configuration (healthz ok, node Ready)" in msg
    assert "The node was uncordoned again" in msg
    assert (w.kdir / "config.yaml").read_text() == w.original
    assert (w.kdir / "cpu_manager_state").read_text() == NONE_STATE
    assert w.files() == ["config.yaml", "cpu_manager_state"]
    assert w.systemd.state()["active"] == "active" and w.kubelet.healthy()
    assert w.api.unschedulable is False


def test_operator_cordon_stays_after_success(world):
    w = world(unschedulable=True)
    assert w.run().returncode == 0
    assert w.api.unschedulable is True
    assert "PATCH node unschedulable=False" not in w.api.log
    assert "PATCH node unschedulable=True" not in w.api.log  # already cordoned: not cordoned again


def test_operator_cordon_stays_after_rollback(world):
    w = world(unschedulable=True, refuse=['cpuManagerPolicy: "static"'])
    result = w.run()
    assert result.returncode != 0
    assert "The node stays as it was (cordoned by its operator)" in _msg(result)
    assert "uncordoned" not in _msg(result).split("the new kubelet configuration failed", 1)[1]
    assert w.api.unschedulable is True
    assert (w.kdir / "config.yaml").read_text() == w.original


def test_healthz_on_a_wrong_port_rolls_back(world):
    from npuops_testing.kube_standins import free_port

    w = world(healthz_port=free_port(), start_timeout=3)
    result = w.run()
    assert result.returncode != 0
    msg = _msg(result)
    assert "Wait for the kubelet's healthz" in msg
    assert "The kubelet did NOT come back on its previous configuration either" in msg
    assert "The node stays cordoned (this run cordoned it)" in msg, msg[-6000:]
    assert "uncordoned" not in msg.split("the new kubelet configuration failed", 1)[1]
    assert (w.kdir / "config.yaml").read_text() == w.original
    assert (w.kdir / "cpu_manager_state").read_text() == NONE_STATE
    assert w.systemd.state()["active"] == "active"  # started again on the old configuration
    assert w.api.unschedulable is True


def test_healthz_that_is_not_http_rolls_back(world):
    w = world(healthz="garbage", start_timeout=3)
    result = w.run()
    assert result.returncode != 0
    assert "Wait for the kubelet's healthz" in _msg(result)
    assert (w.kdir / "config.yaml").read_text() == w.original
    assert w.files() == ["config.yaml", "cpu_manager_state"]
    assert w.systemd.state()["active"] == "active"


def test_healthz_ok_but_node_never_ready_rolls_back(world):
    """One healthz 200 is not healthy: the node must report Ready with a fresh heartbeat."""
    w = world(ready=False, start_timeout=3)
    result = w.run()
    assert result.returncode != 0
    msg = _msg(result)
    assert "Wait for the node to report Ready again" in msg
    assert (w.kdir / "config.yaml").read_text() == w.original
    assert w.systemd.state()["active"] == "active"


def test_bare_pod_not_evicted_without_force(world):
    bare = {"namespace": "infer", "name": "hand-made", "node": NODE}
    w = world(pods=PODS + [bare])
    result = w.run()
    assert result.returncode != 0
    msg = _msg(result)
    assert "the drain failed" in msg and "hand-made" in msg
    assert "npuops_k8s_drain_force" in msg
    assert "The kubelet, its configuration and state files are untouched; the node was uncordoned again" in msg
    assert "infer/hand-made" in w.pods_left()
    assert w.api.unschedulable is False
    assert "stop kubelet" not in w.systemd.calls()
    assert (w.kdir / "config.yaml").read_text() == w.original
    assert w.files() == ["config.yaml", "cpu_manager_state"]


def test_stuck_pod_is_a_failed_drain_not_a_stopped_kubelet(world):
    w = world(stuck=["vllm-0"], npuops_k8s_drain_timeout=3)
    result = w.run()
    assert result.returncode != 0
    msg = _msg(result)
    assert "pods still on the node" in msg and "infer/vllm-0" in msg
    assert "the node was uncordoned again" in msg
    assert "stop kubelet" not in w.systemd.calls()
    assert w.api.unschedulable is False


def test_trickled_eviction_answer_is_bounded_by_the_drain_timeout(world):
    """An API server that answers an eviction one byte a second: the attempt is killed at the
    drain's bound (+20 s), the cordon undone, the kubelet untouched."""
    import time

    w = world(npuops_k8s_drain_timeout=2)
    w.api.trickle = 1.0
    started = time.monotonic()
    result = w.run()
    took = time.monotonic() - started
    assert result.returncode != 0
    msg = _msg(result)
    assert "the drain failed" in msg and "timed out" in msg.lower(), msg[-3000:]
    assert "the node was uncordoned again" in msg
    assert took < 120, took
    assert w.api.unschedulable is False
    assert "stop kubelet" not in w.systemd.calls()
    assert w.files() == ["config.yaml", "cpu_manager_state"]


def test_symlinked_kubelet_directory_followed(world):
    w = world(kubelet_dir="/data/kubelet")
    result = w.run()
    assert result.returncode == 0, result.stdout
    assert os.path.islink(str(w.root / "var/lib/kubelet"))
    assert w.files() == ["config.yaml"]
    assert 'cpuManagerPolicy: "static"' in (w.kdir / "config.yaml").read_text()


def test_hardlinked_state_file_refused_before_the_drain(world):
    w = world()
    os.link(str(w.kdir / "cpu_manager_state"), str(w.tmp / "elsewhere"))
    result = w.run()
    assert result.returncode != 0
    assert "cpu_manager_state has 2 hard links" in _msg(result)
    assert w.api.log == [] or not any(e.startswith(("PATCH", "POST")) for e in w.api.log)
    assert w.systemd.calls() == [] or "stop kubelet" not in w.systemd.calls()
    assert w.files() == ["config.yaml", "cpu_manager_state"]


def test_no_reset_change_restarts_and_rolls_back(world):
    """A change that needs no reset (the kubelet has no state file yet) restarts the kubelet
    without a drain; when the new configuration does not come up, the old one is put back."""
    w = world(state=None, refuse=['cpuManagerPolicy: "static"'])
    result = w.run()
    assert result.returncode != 0
    msg = _msg(result)
    assert "Rolled back: put back /var/lib/kubelet/config.yaml" in msg
    assert "The node stays as it was (schedulable)" in msg
    assert not any(e.startswith(("PATCH", "POST")) for e in w.api.log)  # no drain, no cordon
    assert (w.kdir / "config.yaml").read_text() == w.original
    assert w.files() == ["config.yaml"]
    assert w.systemd.state()["active"] == "active" and w.kubelet.healthy()


def test_no_reset_change_restarts_and_keeps_it(world):
    w = world(state=None)
    result = w.run()
    assert result.returncode == 0, result.stdout
    assert not any(e.startswith(("PATCH", "POST")) for e in w.api.log)
    assert w.systemd.calls().count("stop kubelet") == 1
    assert w.files() == ["config.yaml"]
    again = w.run()
    assert recap(again.stdout)[NODE]["changed"] == 0, again.stdout


def test_memory_reserved_node_passed_to_the_profile(tmp_path):
    """npuops_k8s_memory_reserved_node (generated from the module's memory_reserved_node, which the
    role lacked) reaches the profile: reservedMemory on that NUMA node, not the default one."""
    need("a2-910b3x8")
    inv = make_fleet(
        tmp_path,
        {
            "a2": (
                "a2-910b3x8",
                {
                    "npuops_k8s_kubelet_version": "v1.35.0",
                    "npuops_k8s_memory_manager": True,
                    "npuops_k8s_kube_reserved_memory": "1Gi",
                    "npuops_k8s_memory_reserved_node": 1,
                },
            )
        },
    )
    root = add_kubelet(tmp_path, "a2")
    first = run_playbook(role_play(tmp_path), inv)
    assert first.returncode == 0, first.stdout
    text = (root / "var/lib/kubelet/config.yaml").read_text()
    assert 'memoryManagerPolicy: "Static"' in text, text
    assert "numaNode: 1" in text, text
