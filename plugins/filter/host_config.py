# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host configuration checks of the validate role (controller side).

- ``instances | npuops.fleet.instance_problems(topology=None, npus=[], need_command=False)``:
  every problem of ``npuops_vllm_instances`` as a whole (names, NPU lists, commands,
  environments; with the facts: NPU ids of the host, NPUs in two instances), each message naming
  the variable. An empty list means the instances are fine.
- ``names | npuops.fleet.unknown_variables(known)``: a warning for each ``npuops_*`` name that no
  role reads, naming the nearest known one (difflib).
- ``values | npuops.fleet.variable_problems(spec, topology=None)``: every problem of single
  ``npuops_*`` variables that Ansible's argument spec lets through, and (with the facts) their
  values against the host (``plugin_utils/host_variables.py``).
- ``instances | npuops.fleet.plan_instances``: the ``[{name, npus}]`` of ``npu_cpu_plan``'s
  ``instances`` option, in order (a duplicate name stays, for the planner to refuse).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display

from ansible_collections.npuops.fleet.plugins.module_utils.model import instances as instance_schema
from ansible_collections.npuops.fleet.plugins.plugin_utils import host_variables
from ansible_collections.npuops.fleet.plugins.plugin_utils.ansible_data import to_plain


def instance_problems(instances, topology=None, npus=None, need_command=False, host_env=None):
    instances = to_plain(instances)
    devices, word = (None, None)
    if topology is not None:
        devices, word = host_variables.host_devices(to_plain(topology))
    try:
        restricted = [int(n) for n in (to_plain(npus) or [])]
    except (TypeError, ValueError):
        return ["npuops_npus: must be a list of integers, got %r" % (to_plain(npus),)]
    out = instance_schema.problems(
        instances, devices=devices, restricted=restricted or None, device_word=word, need_command=bool(need_command)
    )
    if host_env is not None:
        out.extend(instance_schema.env_problems(to_plain(host_env), "npuops_vllm_env"))
    return out


def unknown_variables(names, known=None, warn=False):
    if known is None:
        raise AnsibleFilterError("unknown_variables: the list of known variables is required")
    known = sorted(set(str(k) for k in to_plain(known)))
    out = []
    for name in sorted(set(str(n) for n in to_plain(names))):
        if not name.startswith("npuops_") or name in known or name.startswith("__"):
            continue
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        out.append(
            "%s is not a variable of npuops.fleet: no role reads it%s"
            % (name, "; did you mean %s?" % near[0] if near else "")
        )
    if warn:
        for message in out:
            Display().warning(message)
    return out


def variable_problems(values, spec=None, topology=None):
    if not isinstance(spec, dict) or not spec:
        raise AnsibleFilterError("variable_problems: the argument spec (name -> option) is required")
    values = to_plain(values)
    if not isinstance(values, dict):
        raise AnsibleFilterError("variable_problems: expects a mapping of variable names to values")
    return host_variables.problems(values, to_plain(spec), None if topology is None else to_plain(topology))


def plan_instances(instances, binding=False):
    out = []
    for inst in to_plain(instances) or []:
        if isinstance(inst, dict):
            out.append({"name": inst.get("name"), "npus": inst.get("npus")})
            if inst.get("command"):
                # its --device-ids puts the devices in rank order (the prediction follows)
                out[-1]["command"] = inst.get("command")
            if binding:
                out[-1]["binding"] = inst.get("binding")
                if inst.get("vllm_version"):
                    out[-1]["vllm_version"] = inst.get("vllm_version")
    return out


class FilterModule(object):
    def filters(self):
        return {
            "instance_problems": instance_problems,
            "unknown_variables": unknown_variables,
            "variable_problems": variable_problems,
            "plan_instances": plan_instances,
        }
