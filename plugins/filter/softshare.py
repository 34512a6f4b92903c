# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Soft-share (软切分) filters (controller side).

- ``fleet | npuops.fleet.softshare_place(allocations, job, rules='shipped')``: where each
  replica of a soft-share job would land (host, chip) or why it cannot (reasons per host),
  following the Volcano ``chip1-softShareDev`` rules as shipped (or the RFC's with
  ``rules='rfc'``).
- ``facts | npuops.fleet.softshare_capacity(single_die_mode=True)``: healthy chips x 100 for one
  host's ``npu_topology`` (or its ``npus`` list), or per host plus a total for a fleet mapping.
- ``root | npuops.fleet.softshare_daemonset(device_type, version, ...)``: the validated
  soft-share device-plugin DaemonSet manifest (YAML text, ``plugin_utils/manifests``).
- ``node_name | npuops.fleet.softshare_node_labels(enable=True, extra={})``: the Node patch
  with the soft-share labels (YAML text).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.fleet.plugins.module_utils.model import rules
from ansible_collections.npuops.fleet.plugins.module_utils.softshare import plugin_config, scheduler
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.plugin_utils import manifests
from ansible_collections.npuops.fleet.plugins.plugin_utils.ansible_data import to_plain


def _fail(name, err):
    raise AnsibleFilterError("%s: %s" % (name, err))


def softshare_place(fleet_facts_by_host, allocations=None, job=None, rules="shipped"):
    if job is None:
        _fail("softshare_place", "a job {aicore_quota, hbm_quota, policy, replicas} is required")
    try:
        return scheduler.place(to_plain(fleet_facts_by_host), to_plain(allocations), to_plain(job), rules=str(rules))
    except NpuopsError as err:
        _fail("softshare_place", err)


def _npus_of(value):
    if isinstance(value, list):
        return value, None
    topo = scheduler.topology_of(value)
    if not isinstance(topo, dict):
        return None, None
    return topo.get("npus"), topo.get("device_type")


def _one_capacity(value, device_type, single_die_mode, source="softshare_capacity"):
    npus, found_type = _npus_of(value)
    if not isinstance(npus, list):
        raise AnsibleFilterError(
            "%s: expected npu_topology facts or their npus list, got %s" % (source, type(value).__name__)
        )
    for index, npu in enumerate(npus):
        if not isinstance(npu, dict):
            raise AnsibleFilterError(
                "%s: npus[%d] must be a mapping (an NPU of the facts), got %s" % (source, index, type(npu).__name__)
            )
        for key in ("health", "npu_id"):
            if not isinstance(npu.get(key), (str, int, type(None))):
                raise AnsibleFilterError(
                    "%s: npus[%d].%s must be text or a number, got %s" % (source, index, key, type(npu[key]).__name__)
                )
    if not isinstance(device_type or found_type, (str, type(None))):
        raise AnsibleFilterError(
            "%s: device_type must be text, got %s" % (source, type(device_type or found_type).__name__)
        )
    return rules.softshare_capacity(npus, device_type or found_type, single_die_mode)


def softshare_capacity(value, device_type=None, single_die_mode=True):
    value = to_plain(value)
    single = bool(single_die_mode)
    single_keys = ("npus", "npu_topology", "ansible_facts")
    if (
        isinstance(value, dict)
        and value
        and not any(k in value for k in single_keys)
        and all(
            isinstance(v, dict) and ("npus" in v or "npu_topology" in v or "ansible_facts" in v) for v in value.values()
        )
    ):
        hosts = dict(
            (host, _one_capacity(entry, device_type, single, "softshare_capacity: %s" % host))
            for host, entry in sorted(value.items())
        )
        total = {"chips_total": 0, "chips_healthy": 0, "capacity": 0}
        for cap in hosts.values():
            for key in total:
                total[key] += cap[key]
        return {"hosts": hosts, "total": total}
    return _one_capacity(value, device_type, single)


def softshare_daemonset(
    root,
    device_type,
    version,
    image=None,
    single_die_mode=None,
    extra_args=None,
    log_level=0,
    namespace="kube-system",
    root_parent_exists=None,
):
    if (
        isinstance(log_level, bool)
        or not isinstance(log_level, (int, str))
        or not str(log_level).strip().lstrip("-").isdigit()
        or len(str(log_level)) > 3
    ):
        _fail("softshare_daemonset", "log_level must be a small integer, got %r" % (log_level,))
    try:
        return manifests.render_daemonset(
            str(root),
            to_plain(device_type),
            str(version),
            image=image and str(image),
            single_die_mode=single_die_mode,
            extra_args=to_plain(extra_args),
            log_level=int(log_level),
            namespace=str(namespace),
            root_parent_exists=root_parent_exists,
        )
    except (NpuopsError, ValueError, TypeError, OverflowError) as err:
        _fail("softshare_daemonset", err)


def softshare_node_labels(node_name, enable=True, extra=None):
    extra = to_plain(extra) if extra is not None else {}
    if not isinstance(extra, dict):
        _fail("softshare_node_labels", "extra must be a mapping of label name -> value, got %s" % type(extra).__name__)
    for key, value in extra.items():
        if not isinstance(value, (str, int, float, bool)):
            _fail("softshare_node_labels", "extra[%s] must be text or a number, got %s" % (key, type(value).__name__))
    if not isinstance(node_name, str) or not node_name:
        _fail("softshare_node_labels", "the node name must be non-empty text, got %r" % (node_name,))
    labels = plugin_config.node_labels(enable=bool(enable), extra=extra)
    return manifests.render_node_labels(str(node_name), labels)


class FilterModule(object):
    """npuops.fleet soft-share filters."""

    def filters(self):
        return {
            "softshare_place": softshare_place,
            "softshare_capacity": softshare_capacity,
            "softshare_daemonset": softshare_daemonset,
            "softshare_node_labels": softshare_node_labels,
        }
