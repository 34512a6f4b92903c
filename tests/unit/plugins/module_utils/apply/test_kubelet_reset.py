# -*- coding: utf-8 -*-
"""apply/kubelet_reset.py step by step against a fake Kubernetes API server on 127.0.0.1 (a
real HTTP server in a thread, stopped at the end of each test), a fake systemctl and a sandbox
root: drain before stop, state files moved while the kubelet is stopped, the configuration
written then, start, healthz, uncordon - and the rollback when the kubelet does not come back."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import kubelet_reset
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError

NODE = "a2-node-01"
PODS = [
    {"metadata": {"namespace": "infer", "name": "vllm-0", "ownerReferences": [{"kind": "StatefulSet"}]},
     "status": {"phase": "Running"}},
    {"metadata": {"namespace": "kube-system", "name": "ascend-device-plugin-x",
                  "ownerReferences": [{"kind": "DaemonSet"}]}, "status": {"phase": "Running"}},
    {"metadata": {"namespace": "kube-system", "name": "etcd-x",
                  "annotations": {"kubernetes.io/config.mirror": "abc"}}, "status": {"phase": "Running"}},
    {"metadata": {"namespace": "infer", "name": "done-job"}, "status": {"phase": "Succeeded"}},
]


class FakeCluster(object):
    def __init__(self, pdb_refusals=0, kubelet_starts=True):
        self.log, self.pods = [], [dict(p) for p in PODS]
        self.pdb_refusals, self.kubelet_starts, self.kubelet_up = pdb_refusals, kubelet_starts, True
        cluster = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, doc):
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self):
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def do_GET(self):
                if self.path == "/healthz":
                    return self._send(200 if cluster.kubelet_up else 503, {})
                assert self.headers["Authorization"] == "Bearer t0ken"
                cluster.log.append("GET pods")
                return self._send(200, {"items": cluster.pods})

            def do_PATCH(self):
                body = self._body()
                assert self.headers["Content-Type"] == "application/strategic-merge-patch+json"
                cluster.log.append("PATCH %s unschedulable=%s" % (self.path, body["spec"]["unschedulable"]))
                return self._send(200, {})

            def do_POST(self):
                body = self._body()
                name = body["metadata"]["name"]
                if cluster.pdb_refusals:
                    cluster.pdb_refusals -= 1
                    cluster.log.append("POST eviction %s -> 429" % name)
                    return self._send(429, {"message": "Cannot evict pod as it would violate the pod's disruption budget."})
                cluster.log.append("POST eviction %s" % name)
                cluster.pods = [p for p in cluster.pods if p["metadata"]["name"] != name]
                return self._send(201, {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True
        self.thread.start()

    def service(self, verb):
        self.log.append("systemctl %s kubelet" % verb)
        if verb == "stop":
            self.kubelet_up = False
        elif verb == "start":
            self.kubelet_up = self.kubelet_starts
            self.kubelet_starts = True  # the previous configuration starts

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cluster_factory():
    made = []

    def make(**kw):
        made.append(FakeCluster(**kw))
        return made[-1]
    yield make
    for cluster in made:
        cluster.close()


def kubeconfig(url):
    return ("apiVersion: v1\nkind: Config\ncurrent-context: admin\nclusters:\n- name: c\n  cluster:\n"
            "    server: %s\ncontexts:\n- name: admin\n  context:\n    cluster: c\n    user: u\n"
            "users:\n- name: u\n  user:\n    token: t0ken\n" % url)


def sandbox(tmp_path):
    root = tmp_path / "host"
    (root / "var/lib/kubelet").mkdir(parents=True)
    (root / "var/lib/kubelet/config.yaml").write_text("kind: KubeletConfiguration\ncpuManagerPolicy: none\n")
    (root / "var/lib/kubelet/cpu_manager_state").write_text('{"policyName":"none","defaultCpuSet":"","checksum":1}')
    return root


def reset(root, cluster, **kw):
    files = [("/var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\ncpuManagerPolicy: static\n")]
    api = kubelet_reset.KubeApi(kubeconfig(cluster.url))
    return kubelet_reset.Reset(str(root), api, NODE, cluster.service, cluster.url + "/healthz", files,
                               drain_timeout=kw.pop("drain_timeout", 30), start_timeout=2, poll=0.05, **kw)


def test_policy_change_step_by_step(tmp_path, cluster_factory):
    cluster = cluster_factory(pdb_refusals=1)
    root = sandbox(tmp_path)
    sequence = reset(root, cluster)
    steps = sequence.run()
    assert steps == ["cordon a2-node-01", "evict infer/vllm-0", "drained a2-node-01", "stop kubelet",
                     "moved /var/lib/kubelet/cpu_manager_state aside", "wrote /var/lib/kubelet/config.yaml",
                     "start kubelet", "kubelet healthy", "uncordon a2-node-01"]
    # the API and the service saw it in that order: the pod evicted (after one PDB refusal)
    # before the kubelet stopped, the node uncordoned only after it started again
    assert cluster.log == [
        "PATCH /api/v1/nodes/a2-node-01 unschedulable=True", "GET pods",
        "POST eviction vllm-0 -> 429", "GET pods", "POST eviction vllm-0", "GET pods",
        "systemctl stop kubelet", "systemctl start kubelet",
        "PATCH /api/v1/nodes/a2-node-01 unschedulable=False"]
    assert not (root / "var/lib/kubelet/cpu_manager_state").exists()
    assert not (root / "var/lib/kubelet/cpu_manager_state.npuops-old").exists()
    assert "static" in (root / "var/lib/kubelet/config.yaml").read_text()


def test_kubelet_that_does_not_start_is_rolled_back(tmp_path, cluster_factory):
    cluster = cluster_factory(kubelet_starts=False)
    root = sandbox(tmp_path)
    with pytest.raises(NpuopsError, match="rolled back"):
        reset(root, cluster).run()
    assert cluster.log[-4:] == ["systemctl start kubelet", "systemctl stop kubelet",
                                "systemctl start kubelet",
                                "PATCH /api/v1/nodes/a2-node-01 unschedulable=False"]
    assert "none" in (root / "var/lib/kubelet/config.yaml").read_text()
    assert '"policyName":"none"' in (root / "var/lib/kubelet/cpu_manager_state").read_text()


def test_drain_that_cannot_finish_touches_nothing(tmp_path, cluster_factory):
    cluster = cluster_factory(pdb_refusals=10 ** 6)
    root = sandbox(tmp_path)
    with pytest.raises(NpuopsError, match="stays cordoned"):
        reset(root, cluster, drain_timeout=0.3).run()
    assert not any(line.startswith("systemctl") for line in cluster.log)
    assert "none" in (root / "var/lib/kubelet/config.yaml").read_text()
    assert (root / "var/lib/kubelet/cpu_manager_state").exists()


@pytest.mark.parametrize("text, match", [
    ("apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts: []\n", "no context"),
    ("- a\n", "not a kubeconfig"),
    ("current-context: a\ncontexts:\n- name: a\n  context:\n    cluster: c\nclusters:\n- name: c\n"
     "  cluster:\n    server: ftp://x\n", "http"),
])
def test_bad_kubeconfig(text, match):
    with pytest.raises(kubelet_reset.KubeApiError, match=match):
        kubelet_reset.KubeApi(text)


def test_unreachable_api_server_is_a_message():
    api = kubelet_reset.KubeApi(kubeconfig("http://127.0.0.1:9"), timeout=2)
    with pytest.raises(kubelet_reset.KubeApiError, match="127.0.0.1:9"):
        api.cordon(NODE)
