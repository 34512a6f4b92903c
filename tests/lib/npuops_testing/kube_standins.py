# -*- coding: utf-8 -*-
"""Fault-injecting stand-ins for the kubelet's world, on 127.0.0.1 only (tests only).

- ``FakeSystemd(dir)``: a ``systemctl`` program (``bin/systemctl`` under ``dir``, put first on
  PATH) that answers ``show``, ``is-active``, ``start``, ``stop``, ``restart`` and
  ``daemon-reload`` for one unit, keeps the unit's state in ``dir/state.json`` and logs each
  call in ``dir/calls``; ``fail_start=True`` makes ``start`` exit 1.
- ``Kubelet``: what the stand-in kubelet does when started - it "comes up" (healthz 200, the
  node Ready with a fresh heartbeat) unless its configuration file holds one of
  ``refuse_markers`` (a configuration the real kubelet would refuse); ``ready=False``: healthz
  answers but the node never reports Ready again.
- ``Healthz(kubelet, mode)``: the kubelet's healthz; ``mode="garbage"`` answers bytes that
  are not HTTP.
- ``KubeApi(kubelet, ...)``: enough of the Kubernetes API for ``kubernetes.core.k8s_drain``
  and ``k8s_info`` through the kubernetes client: GET/PATCH a node (``spec.unschedulable``,
  the Ready condition), GET ``/api/v1/pods?fieldSelector=spec.nodeName=...``, GET a pod (404
  once evicted), POST ``pods/<name>/eviction`` (``pdb_refusals`` 429s first), ``/version`` and
  the discovery documents the client asks for. ``log`` records what was asked, in order.
"""

import json
import os
import re
import socket
import stat
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

SYSTEMCTL = r"""#!%(python)s
import json, os, sys, time
base = %(base)r
state_path = os.path.join(base, "state.json")
with open(state_path) as f:
    state = json.load(f)
args = [a for a in sys.argv[1:] if not a.startswith("-")]
with open(os.path.join(base, "calls"), "a") as f:
    f.write(" ".join(args) + "\n")
verb = args[0] if args else ""
unit = args[1].strip("'") if len(args) > 1 else ""
if unit.endswith(".service"):
    unit = unit[:-8]
if verb in ("daemon-reload", "daemon-reexec"):
    sys.exit(0)
if unit != state["unit"]:
    print("LoadState=not-found\nActiveState=inactive") if verb == "show" else None
    sys.exit(4 if verb != "show" else 0)
if verb == "show":
    print("Id=%%s.service\nLoadState=loaded\nActiveState=%%s\nSubState=%%s\nUnitFileState=enabled"
          %% (unit, state["active"], "running" if state["active"] == "active" else "dead"))
elif verb == "is-active":
    print(state["active"])
    sys.exit(0 if state["active"] == "active" else 3)
elif verb == "is-enabled":
    print("enabled")
elif verb in ("start", "stop", "restart"):
    if verb in ("start", "restart") and state.get("fail_start"):
        sys.stderr.write("Job for %%s.service failed.\n" %% unit)
        state["active"] = "failed"
        rc = 1
    else:
        state["active"] = "inactive" if verb == "stop" else "active"
        rc = 0
    if verb != "stop":
        state["starts"] = state.get("starts", 0) + 1
        state["started_at"] = time.time()
    with open(state_path + ".tmp", "w") as f:
        json.dump(state, f)
    os.rename(state_path + ".tmp", state_path)
    sys.exit(rc)
else:
    sys.exit(1)
"""


class FakeSystemd(object):
    def __init__(self, base, unit="kubelet", active="active", fail_start=False):
        self.base = str(base)
        os.makedirs(os.path.join(self.base, "bin"), exist_ok=True)
        self.bin = os.path.join(self.base, "bin")
        path = os.path.join(self.bin, "systemctl")
        with open(path, "w") as handle:
            handle.write(SYSTEMCTL % {"python": sys.executable, "base": self.base})
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self._write({"unit": unit, "active": active, "fail_start": fail_start, "starts": 0, "started_at": time.time()})

    def _write(self, state):
        with open(os.path.join(self.base, "state.json"), "w") as handle:
            json.dump(state, handle)

    def state(self):
        with open(os.path.join(self.base, "state.json")) as handle:
            return json.load(handle)

    def calls(self):
        path = os.path.join(self.base, "calls")
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [line.strip() for line in handle if line.strip()]

    def env(self):
        return {"PATH": self.bin + os.pathsep + os.environ.get("PATH", "")}


class Kubelet(object):
    """The stand-in kubelet: healthy when its unit is active and its configuration is one the
    real kubelet would take."""

    def __init__(self, systemd, config_file, refuse_markers=(), ready=True):
        self.systemd, self.config_file = systemd, str(config_file)
        self.refuse_markers, self.ready = tuple(refuse_markers), ready

    def healthy(self):
        if self.systemd.state()["active"] != "active":
            return False
        try:
            with open(self.config_file) as handle:
                text = handle.read()
        except OSError:
            return False
        return not any(marker in text for marker in self.refuse_markers)

    def heartbeat(self):
        """The Ready condition's lastHeartbeatTime: the last start when the kubelet came up."""
        return self.systemd.state()["started_at"]


def _iso(seconds):
    return datetime.fromtimestamp(int(seconds), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Server(object):
    def __init__(self, handler):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Healthz(_Server):
    def __init__(self, kubelet, mode="http"):
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def handle(self):
                if stand_in.mode == "garbage":
                    self.request.sendall(b"\x00\x01 SSH-2.0-not-http\r\n\r\n")
                    return
                BaseHTTPRequestHandler.handle(self)

            def do_GET(self):
                ok = stand_in.kubelet.healthy()
                body = b"ok" if ok else b"[-]kubelet not running"
                self.send_response(200 if ok else 500)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.kubelet, self.mode = kubelet, mode
        _Server.__init__(self, Handler)


def free_port():
    """A 127.0.0.1 port nothing listens on (a typo'd healthz port)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


DISCOVERY_V1 = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {
            "name": "nodes",
            "singularName": "node",
            "namespaced": False,
            "kind": "Node",
            "verbs": ["get", "list", "patch", "update"],
        },
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "verbs": ["get", "list", "delete"]},
        {
            "name": "pods/eviction",
            "singularName": "",
            "namespaced": True,
            "group": "policy",
            "version": "v1",
            "kind": "Eviction",
            "verbs": ["create"],
        },
    ],
}


class KubeApi(_Server):
    """The API server stand-in. ``pods``: pod documents on the node; ``unschedulable``: the
    node's cordon as the operator left it; ``pdb_refusals``: evictions refused (429) first;
    ``stuck``: pods whose eviction is accepted but that never go away; ``trickle``: seconds
    to wait between bytes of each answer to an eviction (a server that never finishes)."""

    def __init__(self, kubelet, node, pods=(), unschedulable=False, pdb_refusals=0, stuck=(), trickle=0):
        self.kubelet, self.node = kubelet, node
        self.pods = [dict(p) for p in pods]
        self.unschedulable, self.pdb_refusals = unschedulable, pdb_refusals
        self.stuck, self.trickle = set(stuck), trickle
        self.log = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, doc, trickle=0):
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if trickle:
                    for i in range(len(body)):
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(trickle)
                else:
                    self.wfile.write(body)

            def _body(self):
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def do_GET(self):
                with api.lock:
                    status, doc = api.get(self.path)
                self._send(status, doc)

            def do_PATCH(self):
                body = self._body()
                with api.lock:
                    status, doc = api.patch(self.path, body)
                self._send(status, doc)

            def do_POST(self):
                body = self._body()
                with api.lock:
                    status, doc = api.post(self.path, body)
                try:
                    self._send(status, doc, api.trickle)
                except OSError:
                    pass  # the client gave up

        _Server.__init__(self, Handler)

    # -- documents --------------------------------------------------------------------
    def node_doc(self):
        ready = self.kubelet.healthy() and self.kubelet.ready
        beat = self.kubelet.heartbeat() if ready else self.kubelet.heartbeat() - 3600
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.node, "resourceVersion": "1"},
            "spec": {"unschedulable": True} if self.unschedulable else {},
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "Unknown",
                        "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                        "lastHeartbeatTime": _iso(beat),
                        "lastTransitionTime": _iso(beat),
                    }
                ]
            },
        }

    @staticmethod
    def _pod(pod):
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "spec": {"nodeName": pod["node"], "containers": []},
            "metadata": {"namespace": pod["namespace"], "name": pod["name"]},
            "status": {"phase": pod.get("phase", "Running")},
        }
        if pod.get("owner"):
            doc["metadata"]["ownerReferences"] = [
                {"apiVersion": "apps/v1", "kind": pod["owner"], "name": "x", "uid": "u", "controller": True}
            ]
        if pod.get("mirror"):
            doc["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
        if pod.get("emptydir"):
            doc["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        return doc

    # -- verbs ------------------------------------------------------------------------
    def get(self, raw):
        url = urlparse(raw)
        path, query = url.path, parse_qs(url.query)
        self.log.append("GET " + path + ("?" + unquote(url.query) if url.query else ""))
        if path == "/version":
            return 200, {"major": "1", "minor": "35", "gitVersion": "v1.35.0"}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"]}
        if path == "/apis":
            return 200, {"kind": "APIGroupList", "groups": []}
        if path == "/api/v1":
            return 200, DISCOVERY_V1
        if path == "/api/v1/nodes/" + self.node:
            return 200, self.node_doc()
        if path.startswith("/api/v1/nodes/"):
            return 404, {"kind": "Status", "reason": "NotFound", "code": 404, "message": "node not found"}
        if path == "/api/v1/pods":
            selector = (query.get("fieldSelector") or [""])[0]
            match = re.match(r"^spec\.nodeName=(.*)$", selector)
            items = [self._pod(p) for p in self.pods if not match or p["node"] == match.group(1)]
            return 200, {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}
        match = re.match(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$", path)
        if match:
            for pod in self.pods:
                if (pod["namespace"], pod["name"]) == match.groups():
                    return 200, self._pod(pod)
            return 404, {"kind": "Status", "reason": "NotFound", "code": 404, "message": "pod not found"}
        return 404, {"kind": "Status", "reason": "NotFound", "code": 404, "message": "no " + path}

    def patch(self, path, body):
        if path == "/api/v1/nodes/" + self.node:
            value = bool(((body or {}).get("spec") or {}).get("unschedulable"))
            self.log.append("PATCH node unschedulable=%s" % value)
            self.unschedulable = value
            return 200, self.node_doc()
        self.log.append("PATCH " + path)
        return 404, {"kind": "Status", "code": 404, "message": "no " + path}

    def post(self, path, body):
        match = re.match(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction$", path)
        if not match:
            self.log.append("POST " + path)
            return 404, {"kind": "Status", "code": 404, "message": "no " + path}
        namespace, name = match.groups()
        if self.pdb_refusals:
            self.pdb_refusals -= 1
            self.log.append("POST eviction %s/%s -> 429" % (namespace, name))
            return 429, {
                "kind": "Status",
                "status": "Failure",
                "reason": "TooManyRequests",
                "code": 429,
                "message": "Cannot evict pod as it would violate the pod's disruption budget.",
            }
        self.log.append("POST eviction %s/%s" % (namespace, name))
        if name not in self.stuck:
            self.pods = [p for p in self.pods if (p["namespace"], p["name"]) != (namespace, name)]
        return 201, {"kind": "Status", "status": "Success", "code": 201}

    def kubeconfig(self, path):
        """A kubeconfig for this stand-in (a token user; the client sends it as a bearer)."""
        text = json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "standin",
                "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
                "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t0ken"}}],
            }
        )
        with open(str(path), "w") as handle:
            handle.write(text)
        return str(path)
