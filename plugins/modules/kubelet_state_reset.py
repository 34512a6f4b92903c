#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubelet_state_reset
short_description: The host-side steps of a kubelet policy change - state files aside, the new configuration written, put back on failure
version_added: 0.2.0
description:
  - The kubelet refuses to start when C(cpu_manager_state) or C(memory_manager_state) was written
    under another policy or reservation. With the kubelet stopped, this module moves those files
    aside and writes the new configuration (O(step=apply)), puts everything back when the kubelet
    does not come up with it (O(step=rollback)), or drops the saved copies once it did
    (O(step=commit)). Each step is atomic and leaves every file where the kubelet expects it.
  - The drain, stop, start, healthz and uncordon are not this module's any more; the role
    C(npuops.fleet.k8s_node) does them around it (C(kubernetes.core.k8s_drain) on the controller,
    C(ansible.builtin.systemd_service), C(ansible.builtin.uri)), one node at a time.
  - Files are found as the kubelet finds them - a symlinked directory on the way (a
    C(/var/lib/kubelet) on a data disk) is followed - but a state or configuration file that is a
    symlink, not a regular file, hard-linked or oversized is refused before anything moves; so is a
    copy left aside by a run that did not finish (run O(step=rollback) or O(step=commit) first).
  - Check mode checks all of that and says what the step would do (the role runs it before the
    drain). Outside check mode, O(step=apply) and O(step=rollback) refuse to run while
    C(systemctl is-active) says O(service) is running.
options:
  step:
    description:
      - V(apply) saves the configuration file beside itself, moves the state files aside (when
        O(move_state)) and writes O(config_content); V(rollback) undoes an V(apply); V(commit)
        removes the saved copies.
    type: str
    choices: [apply, rollback, commit]
    default: apply
    version_added: 0.2.0
  config_path:
    description: The kubelet configuration file (config file or drop-in), RV(npuops.fleet.kubelet_cpu_profile#module:path).
    type: path
    required: true
  config_content:
    description: Its new text (RV(npuops.fleet.kubelet_cpu_profile#module:content)); required with O(step=apply).
    type: str
  move_state:
    description: Move the state files aside (a change that needs a reset); V(false) for a change that does not.
    type: bool
    default: true
    version_added: 0.2.0
  state_files:
    description: The kubelet's state files.
    type: list
    elements: path
    default: [/var/lib/kubelet/cpu_manager_state, /var/lib/kubelet/memory_manager_state]
    version_added: 0.2.0
  service:
    description: The kubelet's systemd unit, which must not be running while files move.
    type: str
    default: kubelet
  node_name:
    description:
      - Deprecated, will be removed in 1.0.0; setting it gives a deprecation warning and does nothing.
      - The drain is the role's (C(kubernetes.core.k8s_drain) on the controller); use its C(npuops_k8s_node_name).
    type: str
  kubeconfig:
    description:
      - Deprecated, will be removed in 1.0.0; setting it gives a deprecation warning and does nothing.
      - No cluster credentials on nodes any more; the role's C(npuops_k8s_kubeconfig) is a kubeconfig on the controller.
    type: path
  healthz_url:
    description:
      - Deprecated, will be removed in 1.0.0; setting it gives a deprecation warning and does nothing.
      - The role checks the kubelet's healthz with C(ansible.builtin.uri) and the node's Ready.
    type: str
  drain_timeout:
    description:
      - Deprecated, will be removed in 1.0.0; setting it gives a deprecation warning and does nothing.
      - See the role's C(npuops_k8s_drain_timeout).
    type: int
  start_timeout:
    description:
      - Deprecated, will be removed in 1.0.0; setting it gives a deprecation warning and does nothing.
      - See the role's C(npuops_k8s_kubelet_start_timeout).
    type: int
attributes:
  check_mode:
    support: full
    details: Checks every file and reports what the step would do; moves and writes nothing.
  diff_mode:
    support: none
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.host_root
seealso:
  - module: npuops.fleet.kubelet_cpu_profile
  - module: kubernetes.core.k8s_drain
"""

EXAMPLES = r"""
- name: Kubelet profile, computed only
  npuops.fleet.kubelet_cpu_profile:
    plan: "{{ npuops_plan }}"
    topology: "{{ ansible_facts['npu_topology'] }}"
  check_mode: true
  register: profile

- name: With the node drained and the kubelet stopped - state files aside, profile written
  npuops.fleet.kubelet_state_reset:
    config_path: "{{ profile.path }}"
    config_content: "{{ profile.content }}"
    move_state: "{{ profile.reset_needed }}"

- name: The kubelet did not come up - put the old configuration and state back
  npuops.fleet.kubelet_state_reset:
    step: rollback
    config_path: "{{ profile.path }}"
"""

RETURN = r"""
steps:
  description: What was done (in check mode, what would be), in order.
  returned: always
  type: list
  elements: str
  sample: ["saved /var/lib/kubelet/config.yaml as /var/lib/kubelet/config.yaml.npuops-old",
           "moved /var/lib/kubelet/cpu_manager_state aside", "wrote /var/lib/kubelet/config.yaml"]
"""

from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import command
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.apply import reset as kubelet_reset

RUNNING = ("active", "activating", "deactivating", "reloading", "refreshing")
DEPRECATED = ("node_name", "kubeconfig", "healthz_url", "drain_timeout", "start_timeout")


def _stopped(service, host_root):
    """Refuse while ``systemctl is-active`` says the unit runs (a sandbox root without
    systemctl has no kubelet to stop)."""
    result = command.run(["systemctl", "is-active", service], timeout=30)
    if result.missing:
        if host_root in ("/", ""):
            raise NpuopsError("systemctl not found: cannot tell whether %s is stopped; nothing was changed" % service)
        return
    state = (result.stdout or "").strip()
    if result.timed_out or state in RUNNING:
        raise NpuopsError(
            "%s is %s: stop it before its state files move (the role k8s_node drains the "
            "node, stops it, runs this module, starts it); nothing was changed" % (service, state or "not answering")
        )


def body(module):
    params = module.params
    step = params["step"]
    if step == "apply" and params["config_content"] is None:
        raise NpuopsError("config_content is required with step=apply")
    change = kubelet_reset.Change(
        params["host_root"],
        params["config_path"],
        params["config_content"] if step == "apply" else None,
        state_files=params["state_files"],
        move_state=params["move_state"],
        create=not module.check_mode,
    )
    try:
        planned = change.plan(step)
        if module.check_mode or not planned:
            return dict(changed=bool(planned), steps=planned)
        if step != "commit" and params["move_state"]:
            _stopped(params["service"], params["host_root"])
        return dict(changed=True, steps=change.run(step))
    finally:
        change.close()


def main():
    spec = dict(
        step=dict(type="str", default="apply", choices=list(kubelet_reset.STEPS)),
        config_path=dict(type="path", required=True),
        config_content=dict(type="str"),
        move_state=dict(type="bool", default=True),
        state_files=dict(type="list", elements="path", default=list(kubelet_reset.STATE_FILES)),
        service=dict(type="str", default="kubelet"),
        node_name=dict(type="str"),
        kubeconfig=dict(type="path", no_log=False),
        healthz_url=dict(type="str"),
        drain_timeout=dict(type="int"),
        start_timeout=dict(type="int"),
        host_root=dict(type="path", default="/"),
    )
    for name in DEPRECATED:
        spec[name].update(removed_in_version="1.0.0", removed_from_collection="npuops.fleet")
    run(spec, body)


if __name__ == "__main__":
    main()
