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

from ansible_collections.npuops.fleet.plugins.plugin_utils.rails import rail_check


class FilterModule(object):
    """npuops.fleet rail filters."""

    def filters(self):
        return {"rail_check": rail_check}
