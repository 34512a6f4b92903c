# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NPU soft-share (软切分): capacity, the Volcano ``chip1-softShareDev`` rules, placement
what-if, and the Ascend device-plugin configuration (DaemonSet manifest, node labels).

Pure functions over plain data. Two rule sets exist and both are implemented:

- ``shipped``: what MindCluster 26.x code does (device plugin + ascend-for-volcano);
- ``rfc``: the differing rules of the RFC text (combined usage <= 100 %, threshold 0.25,
  used-chip score capped at 15).

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import posixpath

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError

# Each physical chip (die, with single-die mode on A3) is advertised as this many devices.
SHARE_DEV_COUNT = 100

# The device plugin's getDevState(): DCMI health 0 (npu-smi "OK") and 1 (general alarm,
# npu-smi "Warning") are Healthy; every other state is Unhealthy.
HEALTHY_STATES = ("ok", "warning")


class SoftShareError(NpuopsError):
    """A soft-share input (job, allocation, plugin configuration) is invalid."""

    def __init__(self, source, msg):
        self.source = source
        self.msg = msg
        super(SoftShareError, self).__init__("%s: %s" % (source, msg))


def is_healthy(health):
    """True when the device plugin would report a chip with this npu-smi Health as Healthy."""
    return str(health or "").strip().lower() in HEALTHY_STATES


def _chip_groups(npus, device_type, single_die_mode):
    """Health lists per advertised chip. A3 without single-die mode: one chip per package."""
    if device_type == "A3" and not single_die_mode:
        groups = {}
        order = []
        for npu in npus:
            key = npu.get("npu_id")
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(npu.get("health"))
        return [groups[key] for key in order]
    return [[npu.get("health")] for npu in npus]


def capacity(npus, device_type, single_die_mode=True):
    """Soft-share capacity of one host, as the device plugin advertises it to kubelet.

    ``npus``: the facts' ``npus`` list (one entry per logic NPU, i.e. per die on A3), each
    with ``health``. Every healthy chip is 100 devices; an unhealthy chip makes all its 100
    devices Unhealthy (-100). On A3, single-die mode (``-useSingleDieMode=true``, required for
    soft share on A3 inference hosts) counts each die as a chip; without it the two dies of a
    package are one chip, healthy only when both dies are.
    """
    groups = _chip_groups(list(npus or []), device_type, single_die_mode)
    healthy = sum(1 for healths in groups if all(is_healthy(h) for h in healths))
    return {"chips_total": len(groups), "chips_healthy": healthy,
            "capacity": healthy * SHARE_DEV_COUNT}
