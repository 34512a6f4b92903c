#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: kubelet_state_reset
short_description: Change the kubelet's CPU or Memory Manager policy safely - drain, stop, remove state, write, start, uncordon
version_added: 0.2.0
description:
  - The kubelet refuses to start when C(cpu_manager_state) or C(memory_manager_state) was written
    under another policy or reservation. This module makes the change in the order the
    Kubernetes documentation gives, on a live node.
  - Cordons the node and evicts its pods through the Kubernetes API (O(kubeconfig); DaemonSet and
    mirror pods stay; a PodDisruptionBudget refusal is retried until O(drain_timeout)), stops the
    kubelet, moves its state files aside, writes O(config_content) to O(config_path), starts the
    kubelet and waits for O(healthz_url), then uncordons.
  - When the kubelet does not come back healthy the previous configuration and state files are
    restored and the kubelet started again (and the node uncordoned when it answers); the task
    fails with the steps taken. A drain that cannot finish changes nothing but the cordon.
  - Runs only on a real host (O(host_root=/)); run it one node at a time (C(serial=1)).
options:
  node_name:
    description: The Kubernetes node name of this host.
    type: str
    required: true
  kubeconfig:
    description: A kubeconfig on the host whose current context may patch nodes, list pods and create evictions.
    type: path
    required: true
  config_path:
    description: The kubelet configuration file (config file or drop-in) to write while the kubelet is stopped.
    type: path
    required: true
  config_content:
    description: Its new text (RV(npuops.fleet.kubelet_cpu_profile#module:content)).
    type: str
    required: true
  healthz_url:
    description: The kubelet's healthz endpoint.
    type: str
    default: http://127.0.0.1:10248/healthz
  service:
    description: The kubelet's systemd unit.
    type: str
    default: kubelet
  drain_timeout:
    description: Seconds the drain may take.
    type: int
    default: 600
  start_timeout:
    description: Seconds the kubelet has to answer its healthz after it starts.
    type: int
    default: 120
attributes:
  check_mode:
    support: full
    details: Reports the steps it would take and C(changed=true); touches nothing, calls no API.
  diff_mode:
    support: none
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.host_root
seealso:
  - module: npuops.fleet.kubelet_cpu_profile
'''

EXAMPLES = r'''
- name: Kubelet profile, computed only
  npuops.fleet.kubelet_cpu_profile:
    plan: "{{ npuops_plan }}"
    topology: "{{ ansible_facts['npu_topology'] }}"
  check_mode: true
  register: profile

- name: Apply it with the drain and state-file reset it needs
  npuops.fleet.kubelet_state_reset:
    node_name: "{{ inventory_hostname_short }}"
    kubeconfig: /etc/kubernetes/admin.conf
    config_path: "{{ profile.path }}"
    config_content: "{{ profile.content }}"
  when: profile.reset_needed
'''

RETURN = r'''
steps:
  description: What was done, in order.
  returned: always
  type: list
  elements: str
  sample: ["cordon node-1", "evict infer/vllm-0", "drained node-1", "stop kubelet",
           "moved /var/lib/kubelet/cpu_manager_state aside", "wrote /var/lib/kubelet/config.yaml",
           "start kubelet", "kubelet healthy", "uncordon node-1"]
'''

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops, kubelet_reset
from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import check_components

PLANNED = ["cordon", "evict the node's pods", "stop kubelet", "move its state files aside",
           "write the configuration", "start kubelet", "wait for healthz", "uncordon"]


def prepare(module):
    params = module.params
    if params["host_root"] not in ("/", ""):
        raise NpuopsError("kubelet_state_reset stops and starts the real kubelet: it runs only with "
                          "host_root=/ (got %s)" % params["host_root"])
    check_components(params["config_path"])
    if not params["healthz_url"].startswith("http://127.0.0.1:") and not params["healthz_url"].startswith("http://localhost:"):
        raise NpuopsError("healthz_url %r: the kubelet's local healthz (http://127.0.0.1:<port>/healthz)"
                          % params["healthz_url"])
    if module.check_mode:
        return dict(changed=True, steps=["(check mode) " + s for s in PLANNED])
    text = fileops.read_host_text("/", params["kubeconfig"])
    if text is None:
        raise NpuopsError("kubeconfig %s does not exist" % params["kubeconfig"])
    api = kubelet_reset.KubeApi(text, params["kubeconfig"])
    try:
        steps = kubelet_reset.Reset(
            "/", api, params["node_name"], kubelet_reset.Service(params["service"]),
            params["healthz_url"], [(params["config_path"], params["config_content"])],
            drain_timeout=params["drain_timeout"], start_timeout=params["start_timeout"]).run()
    finally:
        api.close()
    return dict(changed=True, steps=steps)


def main():
    run(dict(
        node_name=dict(type="str", required=True),
        kubeconfig=dict(type="path", required=True, no_log=False),
        config_path=dict(type="path", required=True),
        config_content=dict(type="str", required=True),
        healthz_url=dict(type="str", default="http://127.0.0.1:10248/healthz"),
        service=dict(type="str", default="kubelet"),
        drain_timeout=dict(type="int", default=600),
        start_timeout=dict(type="int", default=120),
        host_root=dict(type="path", default="/"),
    ), prepare)


if __name__ == "__main__":
    main()
