# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU rail consistency across hosts (controller side): ``rail_check`` behind the
``npuops.fleet.rail_check`` filter, and the majority vote the fleet report's own comparison
(``report.gpu_rails.analyse_rails``) shares with it: among hosts of one shape, the GPU -> NIC
mapping most of them share is the majority; a host with another mapping differs on each GPU
whose NIC is not the majority's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.fleet.plugins.module_utils.model.rules import natural_key


def majority(mappings):
    """The mapping most of ``mappings`` share: ``(mapping, how many share it, tie)``.

    ``tie`` is True when another mapping is shared by as many; the tie goes to the smallest
    mapping text (JSON, sorted keys), so the answer does not depend on the input order.
    """
    counts = {}
    for mapping in mappings:
        text = json.dumps(mapping, sort_keys=True)
        counts[text] = counts.get(text, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    text, count = ranked[0]
    return json.loads(text), count, len(ranked) > 1 and ranked[1][1] == count


def differences(mapping, expected, sort_key):
    """``[(gpu, expected value, actual value)]`` for each GPU where ``mapping`` differs from
    ``expected`` (a GPU missing on one side counts as None there), in ``sort_key`` order."""
    return [
        (gpu, expected.get(gpu), mapping.get(gpu))
        for gpu in sorted(set(mapping) | set(expected), key=sort_key)
        if mapping.get(gpu) != expected.get(gpu)
    ]


def _mapping(host, plan, key):
    gpus = plan.get("gpus") if isinstance(plan, dict) else None
    if not gpus:
        return None
    if not isinstance(gpus, dict):
        raise AnsibleFilterError("rail_check: plan of %s: 'gpus' must be a dict" % host)
    mapping = {}
    for gpu, entry in gpus.items():
        if not isinstance(entry, dict):
            raise AnsibleFilterError("rail_check: plan of %s: GPU %s entry is not a dict" % (host, gpu))
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            raise AnsibleFilterError(
                "rail_check: plan of %s: GPU %s %s must be a NIC name "
                "(text), got %s" % (host, gpu, key, type(value).__name__)
            )
        mapping[str(gpu)] = value
    return mapping


def _default_shape(mapping):
    nics = set(nic for nic in mapping.values() if nic)
    return "%d GPUs, %d NICs" % (len(mapping), len(nics))


def rail_check(plans_by_host, shapes=None, key="nic"):
    """Deviating hosts with the majority mapping of their group and per-GPU differences."""
    if not isinstance(plans_by_host, dict):
        raise AnsibleFilterError("rail_check: expects a dict {host: plan}, got %s" % type(plans_by_host).__name__)
    if shapes is not None and not isinstance(shapes, dict):
        raise AnsibleFilterError("rail_check: shapes must be a dict {host: shape}")
    if key not in ("nic", "nic_bus_id"):
        raise AnsibleFilterError("rail_check: key must be 'nic' or 'nic_bus_id', got %r" % key)
    groups = {}
    for host in sorted(plans_by_host, key=lambda name: natural_key(str(name))):
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
        expected, majority_count, tie = majority(m for _host, m in members)
        for host, mapping in members:
            if mapping == expected:
                continue
            diffs = dict(
                (gpu, {"expected": want, "actual": actual})
                for gpu, want, actual in differences(mapping, expected, natural_key)
            )
            result[host] = {
                "shape": shape,
                "majority": expected,
                "differences": diffs,
                "group_hosts": len(members),
                "majority_hosts": majority_count,
                "tie": tie,
            }
    return result
