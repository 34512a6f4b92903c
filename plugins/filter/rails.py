# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``npuops.fleet.rail_check``: hosts whose GPU k -> NIC differs from their peers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rail_check
short_description: Find GPU hosts whose GPU-to-NIC rails differ from identical hosts
description:
  - Groups hosts by shape and, in each group, compares every host's GPU k -> NIC mapping
    (from C(npu_cpu_plan) on GPU hosts) with the mapping most hosts of the group share.
  - Rail-aligned fabrics cable GPU k of every node to leaf k; NCCL assumes identical
    intra-node topology everywhere and does not check it. A host that pairs GPU k with
    another NIC sends that rank's traffic over the wrong rail.
  - Default shape is the number of GPUs and the number of distinct NICs the plan pairs them
    with. NIC names are deliberately not part of the default shape - a host that uses a
    different NIC would land in a group of its own and never be compared. Pass O(shapes) to
    group by hardware model or by the full NIC list from the facts.
positional: plans_by_host
options:
  _input:
    description: 'C({host: plan}). Hosts whose plan has no C(gpus) are ignored.'
    type: dict
    required: true
  shapes:
    description: 'C({host: shape}); any JSON-able value. Hosts absent from it get the default.'
    type: dict
  key:
    description: Entry field compared per GPU, C(nic) (RDMA name) or C(nic_bus_id).
    type: str
    default: nic
"""

EXAMPLES = r"""
- name: Fail when a host's rails differ from its peers
  ansible.builtin.assert:
    that: rails | length == 0
    fail_msg: "{{ rails | to_nice_yaml }}"
  vars:
    rails: "{{ dict(groups['gpu'] | zip(groups['gpu'] | map('extract', hostvars, 'npuops_plan')))
               | npuops.fleet.rail_check }}"
"""

RETURN = r"""
_value:
  description: >-
    C({host: {shape, majority, differences, group_hosts, majority_hosts, tie}}) for every
    deviating host; C(differences) maps a GPU index to C({expected, actual}). Empty when
    all groups are consistent.
  type: dict
"""

import json
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.fleet.plugins.plugin_utils import rail_majority


def _natural(text):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(text))]


def _mapping(host, plan, key):
    gpus = plan.get("gpus") if isinstance(plan, dict) else None
    if not gpus:
        return None
    if not isinstance(gpus, dict):
        raise AnsibleFilterError("rail_check: plan of %s: 'gpus' must be a dict" % host)
    mapping = {}
    for gpu, entry in gpus.items():
        if not isinstance(entry, dict):
            raise AnsibleFilterError("rail_check: plan of %s: GPU %s entry is not a dict"
                                     % (host, gpu))
        mapping[str(gpu)] = entry.get(key)
    return mapping


def _default_shape(mapping):
    nics = set(nic for nic in mapping.values() if nic)
    return "%d GPUs, %d NICs" % (len(mapping), len(nics))


def rail_check(plans_by_host, shapes=None, key="nic"):
    """Deviating hosts with the majority mapping of their group and per-GPU differences."""
    if not isinstance(plans_by_host, dict):
        raise AnsibleFilterError("rail_check: expects a dict {host: plan}, got %s"
                                 % type(plans_by_host).__name__)
    if shapes is not None and not isinstance(shapes, dict):
        raise AnsibleFilterError("rail_check: shapes must be a dict {host: shape}")
    if key not in ("nic", "nic_bus_id"):
        raise AnsibleFilterError("rail_check: key must be 'nic' or 'nic_bus_id', got %r" % key)
    groups = {}
    for host in sorted(plans_by_host, key=_natural):
        mapping = _mapping(host, plans_by_host[host], key)
        if mapping is None:
            continue
        shape = (shapes or {}).get(host)
        if shape is None:
            shape = _default_shape(mapping)
        group_key = json.dumps(shape, sort_keys=True, default=str)
        groups.setdefault(group_key, (shape, []))[1].append((host, mapping))
    result = {}
    for shape, members in groups.values():
        if len(members) < 2:
            continue
        majority, majority_count, tie = rail_majority.majority(m for _host, m in members)
        for host, mapping in members:
            if mapping == majority:
                continue
            differences = dict(
                (gpu, {"expected": expected, "actual": actual})
                for gpu, expected, actual in rail_majority.differences(mapping, majority, _natural))
            result[host] = {"shape": shape, "majority": majority, "differences": differences,
                            "group_hosts": len(members), "majority_hosts": majority_count,
                            "tie": tie}
    return result


class FilterModule(object):
    """npuops.fleet rail filters."""

    def filters(self):
        return {"rail_check": rail_check}
