# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm-ascend's role split and the plan log lines each worker prints (split from
vllm_ascend.py: the allocator there, what it prints here)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types


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
    """``[pool_plan_line(npu, pools[npu], device_type) for npu in npus]``.

    A CpuSeq pool (already checked by ``allocate``'s minimum) is formatted from its runs
    without building the role lists (ids below 2048: their text is looked up): this runs once
    per rank of every plan.
    """
    lines = []
    append = lines.append
    general = _no_irq(device_type)
    for npu in npus:
        pool = pools[npu]
        if general or pool.__class__ is not cpuset.CpuSeq:
            append(plan_line(npu, allocate({npu: pool}, device_type)[npu], device_type))
            continue
        runs = pool.runs
        if len(runs) == 1:
            first, last = runs[0]
            main = " ".join(_TEXT[first + 2:last - 1]) if 0 <= first and last < _SMALL else \
                cpuset.join_run(first + 2, last - 2)
            acl, release = last - 1, last
        elif runs[0][1] - runs[0][0] >= 2 and runs[-1][1] - runs[-1][0] >= 2:
            # pool[2:-2] cuts only the ends of the first and the last run
            acl, release = runs[-1][1] - 1, runs[-1][1]
            main = cpuset.join_runs(((runs[0][0] + 2, runs[0][1]),) + runs[1:-1] +
                                    ((runs[-1][0], acl - 1),))
        else:
            main = cpuset.join_ids(pool[2:-2])
            acl, release = pool.last_two()
        # acl is printed as its ids, release as the repr of its one-CPU list
        if 0 <= acl < _SMALL and 0 <= release < _SMALL and npu.__class__ is int and \
                0 <= npu < _SMALL:
            append("".join(("NPU", _TEXT[npu], ": main=[", main, "]  acl=[", _TEXT[acl],
                            "]  release=[[", _TEXT[release], "]]")))
        else:
            append("NPU%s: main=[%s]  acl=[%d]  release=[[%d]]" % (npu, main, acl, release))
    return lines


_TEXT = cpuset.DECIMAL
_SMALL = len(_TEXT)  # ids with a text in _TEXT


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
            templates.append((line[:cut], line[cut + 1:]))
    return templates
