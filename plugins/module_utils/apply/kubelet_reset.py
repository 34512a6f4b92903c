# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A CPU or Memory Manager policy change on a live node, in the order the kubelet docs give:

1. cordon the node and evict its pods through the Kubernetes API (DaemonSet and mirror pods
   stay, as ``kubectl drain --ignore-daemonsets``; a PodDisruptionBudget's 429 is retried) and
   wait until they are gone;
2. stop the kubelet;
3. move its state files (``cpu_manager_state``, ``memory_manager_state``) aside;
4. write the new configuration;
5. start the kubelet and wait for its healthz;
6. uncordon.

When the kubelet does not come back healthy, the previous configuration and state files are
put back and the kubelet started again, so the node is never left with a kubelet that cannot
start; the step list and the error say what happened. ``KubeApi`` is a small client over
urllib from a kubeconfig (token or client certificate); ``Service`` runs ``systemctl``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import ssl
import tempfile
import time

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.errors import KubeApiError, NpuopsError, SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import command, yaml_subset
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import host_path

from urllib.error import HTTPError, URLError
from urllib.parse import quote
from urllib.request import HTTPHandler, HTTPSHandler, Request, build_opener

MAX_RESPONSE = 32 << 20
STATE_FILES = ("/var/lib/kubelet/cpu_manager_state", "/var/lib/kubelet/memory_manager_state")


def _pick(items, name, what, source):
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            return item.get(what) or {}
    raise KubeApiError("%s: no %s named %r" % (source, what, name))


class KubeApi(object):
    """The API calls a drain needs, authenticated as the kubeconfig's current context says."""

    def __init__(self, kubeconfig_text, source="kubeconfig", timeout=30):
        try:
            doc = yaml_subset.loads(kubeconfig_text, source)
        except SnapshotError as err:
            raise KubeApiError("%s: cannot be read (%s)" % (source, err))
        if not isinstance(doc, dict):
            raise KubeApiError("%s: not a kubeconfig" % source)
        context = _pick(doc.get("contexts"), doc.get("current-context"), "context", source)
        cluster = _pick(doc.get("clusters"), context.get("cluster"), "cluster", source)
        user = _pick(doc.get("users"), context.get("user"), "user", source) if context.get("user") else {}
        self.server = str(cluster.get("server") or "").rstrip("/")
        if not self.server.startswith(("https://", "http://")):
            raise KubeApiError("%s: cluster server %r is not an http(s) URL" % (source, self.server))
        self.timeout = timeout
        self.headers = {"Accept": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = "Bearer %s" % user["token"]
        self._tmp = []
        handlers = [HTTPHandler()]
        if self.server.startswith("https://"):
            ctx = ssl.create_default_context()
            if cluster.get("insecure-skip-tls-verify"):
                ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            elif cluster.get("certificate-authority-data"):
                ctx.load_verify_locations(cadata=base64.b64decode(
                    cluster["certificate-authority-data"]).decode("ascii"))
            elif cluster.get("certificate-authority"):
                ctx.load_verify_locations(cafile=cluster["certificate-authority"])
            cert, key = self._file(user, "client-certificate"), self._file(user, "client-key")
            if cert and key:
                ctx.load_cert_chain(cert, key)
            handlers.append(HTTPSHandler(context=ctx))
        self._opener = build_opener(*handlers)

    def _file(self, user, name):
        if user.get(name + "-data"):
            handle, path = tempfile.mkstemp(prefix="npuops-kube-")
            os.write(handle, base64.b64decode(user[name + "-data"]))
            os.close(handle)
            self._tmp.append(path)
            return path
        return user.get(name)

    def close(self):
        for path in self._tmp:
            try:
                os.unlink(path)
            except OSError:
                pass
        self._tmp = []

    def call(self, method, path, body=None, content_type="application/json"):
        """``(HTTP status, JSON body or {})``; raises KubeApiError when the server is unreachable."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = content_type
        request = Request(self.server + path, data=data, headers=headers)
        request.get_method = lambda: method
        try:
            response = self._opener.open(request, timeout=self.timeout)
            status, raw = response.status, response.read(MAX_RESPONSE + 1)
        except HTTPError as err:
            status, raw = err.code, err.read(MAX_RESPONSE + 1)
        except (URLError, OSError) as err:
            raise KubeApiError("%s %s: %s" % (method, self.server + path, getattr(err, "reason", err)))
        if len(raw) > MAX_RESPONSE:
            raise KubeApiError("%s %s: response larger than %d bytes" % (method, path, MAX_RESPONSE))
        try:
            doc = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            doc = {}
        return status, doc

    def cordon(self, node, unschedulable=True):
        status, doc = self.call("PATCH", "/api/v1/nodes/%s" % quote(node, safe=""),
                                {"spec": {"unschedulable": bool(unschedulable)}},
                                "application/strategic-merge-patch+json")
        if status != 200:
            verb = "cordon" if unschedulable else "uncordon"
            raise KubeApiError("%s node %s: HTTP %d %s" % (verb, node, status, doc.get("message", "")))

    def pods_to_evict(self, node):
        status, doc = self.call("GET", "/api/v1/pods?fieldSelector=%s" % quote("spec.nodeName=" + node))
        if status != 200:
            raise KubeApiError("list pods on %s: HTTP %d %s" % (node, status, doc.get("message", "")))
        out = []
        for pod in doc.get("items") or []:
            meta = pod.get("metadata") or {}
            owners = [o.get("kind") for o in meta.get("ownerReferences") or []]
            if "DaemonSet" in owners or "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            out.append((meta.get("namespace"), meta.get("name")))
        return sorted(out)

    def evict(self, namespace, name):
        """True when evicted or gone; False when a disruption budget refuses it now (429)."""
        body = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, "namespace": namespace}}
        status, doc = self.call("POST", "/api/v1/namespaces/%s/pods/%s/eviction"
                                % (quote(namespace, safe=""), quote(name, safe="")), body)
        if status in (200, 201, 404):
            return True
        if status == 429:
            return False
        raise KubeApiError("evict pod %s/%s: HTTP %d %s" % (namespace, name, status, doc.get("message", "")))


class Service(object):
    """``systemctl <verb> <unit>`` on the host, bounded."""

    def __init__(self, unit="kubelet", timeout=120):
        self.unit, self.timeout = unit, timeout

    def __call__(self, verb):
        result = command.run(["systemctl", verb, self.unit], timeout=self.timeout)
        if result.rc != 0:
            why = (result.stderr or result.stdout or "rc %d" % result.rc).strip()
            raise NpuopsError("systemctl %s %s: %s" % (verb, self.unit, why))


def healthy(url, timeout):
    """Wait up to ``timeout`` s for ``url`` (the kubelet's healthz) to answer 200 ``ok``."""
    deadline = time.monotonic() + timeout
    opener = build_opener(HTTPHandler())
    while True:
        try:
            if opener.open(url, timeout=5).status == 200:
                return True
        except (URLError, OSError):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(1)


class Reset(object):
    """The sequence; ``steps`` records what was done, in order."""

    def __init__(self, host_root, api, node, service, healthz, files, state_files=STATE_FILES,
                 drain_timeout=600, start_timeout=120, poll=2.0):
        self.host_root, self.api, self.node, self.service = host_root, api, node, service
        self.healthz, self.files, self.state_files = healthz, files, state_files
        self.drain_timeout, self.start_timeout, self.poll = drain_timeout, start_timeout, poll
        self.steps = []

    def _step(self, text):
        self.steps.append(text)

    def drain(self):
        self.api.cordon(self.node, True)
        self._step("cordon %s" % self.node)
        deadline = time.monotonic() + self.drain_timeout
        while True:
            pods = self.api.pods_to_evict(self.node)
            if not pods:
                self._step("drained %s" % self.node)
                return
            for namespace, name in pods:
                if self.api.evict(namespace, name):
                    self._step("evict %s/%s" % (namespace, name))
            if time.monotonic() >= deadline:
                raise NpuopsError("drain %s: pods still there after %ds: %s; the node stays cordoned, "
                                  "the kubelet and its configuration are untouched"
                                  % (self.node, self.drain_timeout,
                                     ", ".join("%s/%s" % p for p in self.api.pods_to_evict(self.node))))
            time.sleep(self.poll)

    def _move_state(self):
        moved = {}
        for path in self.state_files:
            text = fileops.read_host_text(self.host_root, path)
            if text is None:
                continue
            real = host_path(self.host_root, path)
            os.rename(real, real + ".npuops-old")
            moved[path] = text
            self._step("moved %s aside" % path)
        return moved

    def _restore(self, previous, moved):
        for path, text in previous.items():
            if text is None:
                real = host_path(self.host_root, path)
                if os.path.lexists(real):
                    os.unlink(real)
            else:
                fileops.ensure_file(self.host_root, path, text)
        for path in moved:
            real = host_path(self.host_root, path)
            if os.path.lexists(real):
                os.unlink(real)
            os.rename(real + ".npuops-old", real)
        self._step("restored the previous configuration and state files")

    def run(self):
        self.drain()
        previous = dict((path, fileops.read_host_text(self.host_root, path)) for path, dummy in self.files)
        self.service("stop")
        self._step("stop kubelet")
        moved = self._move_state()
        try:
            for path, text in self.files:
                fileops.ensure_file(self.host_root, path, text, create_parents=True)
                self._step("wrote %s" % path)
            self.service("start")
            self._step("start kubelet")
            ok = healthy(self.healthz, self.start_timeout)
        except (NpuopsError, OSError) as err:
            ok, failure = False, str(err)
        else:
            failure = "the kubelet did not answer %s within %ds" % (self.healthz, self.start_timeout)
        if not ok:
            self._rollback(previous, moved)
            raise NpuopsError("%s; rolled back to the previous configuration and state, the kubelet "
                              "restarted and the node uncordoned (steps: %s)" % (failure, "; ".join(self.steps)))
        self._step("kubelet healthy")
        for path in moved:
            real = host_path(self.host_root, path) + ".npuops-old"
            if os.path.lexists(real):
                os.unlink(real)
        self.api.cordon(self.node, False)
        self._step("uncordon %s" % self.node)
        return self.steps

    def _rollback(self, previous, moved):
        try:
            self.service("stop")
        except NpuopsError:
            pass
        self._restore(previous, moved)
        self.service("start")
        self._step("start kubelet (previous configuration)")
        if healthy(self.healthz, self.start_timeout):
            self.api.cordon(self.node, False)
            self._step("uncordon %s" % self.node)
