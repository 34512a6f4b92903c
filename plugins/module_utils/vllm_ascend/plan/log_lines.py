# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm-ascend's role split and the plan log lines each worker prints (split from
allocator.py: the allocator there, what it prints here)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types
from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles


def _no_irq(device_type):
    """vllm-ascend reserves no IRQ CPUs for the type (NO_IRQ_BINDING_DEVICE_TYPES: A5); None
    (the callers' "no such roles") reserves them."""
    return device_type is not None and not device_types.row(device_type).irq_roles


def allocate(pools, device_type):
    """Role split for every kept NPU (the minimum is checked on each, as the reference does)."""
    roles = {}
    if _no_irq(device_type):
        for npu, pool in pools.items():
            roles[npu] = cpu_roles.cluster_roles(pool)
        return roles
    for npu, pool in pools.items():
        roles[npu] = cpu_roles.split_roles(pool, True, npu)
    return roles


def plan_line(npu, roles, device_type):
    """The per-NPU plan log line, formats as the reference (``release=[[N]]`` included)."""
    main = cpuset.join_ids(roles["main"])
    if _no_irq(device_type):
        return "Ascend 950 NPU%s: worker=[%s]" % (npu, main)
    acl = " ".join(map(str, roles["acl"]))
    rel = str(roles["release"]) if roles["release"] else ""
    return "NPU%s: main=[%s]  acl=[%s]  release=[%s]" % (npu, main, acl, rel)


def pool_plan_line(npu, pool, device_type):
    """``plan_line(npu, allocate({npu: pool}, device_type)[npu], device_type)``
    (``plan_lines`` of one NPU)."""
    return plan_lines([npu], {npu: pool}, device_type)[0]


def plan_lines(npus, pools, device_type):
    """``[pool_plan_line(npu, pools[npu], device_type) for npu in npus]``."""
    return [plan_line(npu, allocate({npu: pools[npu]}, device_type)[npu], device_type) for npu in npus]


def check_pools(pools, device_type):
    """``allocate``'s checks without the role lists: every pool's minimum, in pool order."""
    if not _no_irq(device_type):
        cpu_roles.check_pool_sizes(pools)


def rank_templates(head):
    """The head lines as ``(before, after)``: rank r prints ``before + str(r) + after``.

    Only the mode and slice lines carry a rank (rank 0 in ``head``); the others come back as
    ``(line, None)`` and every rank prints them unchanged.
    """
    templates = []
    for line in head:
        cut = -1
        if line.startswith("[cpu_bind_mode] "):
            found = line.find(" rank=0 ")
            if found >= 0:
                cut = found + len(" rank=")
        elif line.startswith("[cpu_global_slice] rank:0 "):
            cut = len("[cpu_global_slice] rank:")
        if cut < 0:
            templates.append((line, None))
        else:
            # the "0" at ``cut`` is the rank
            templates.append((line[:cut], line[cut + 1 :]))
    return templates
