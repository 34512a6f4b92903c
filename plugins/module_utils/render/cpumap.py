# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ASCII CPU map of a plan: a row per NUMA node (one character per CPU), a row per NPU.

::

    node 3  144-191  IIMMMMMMMMMMMMMMMMMMMMARIIMMMMMMMMMMMMMMMMMMMMAR
    NPU0    144-167  node 3  IIMMMMMMMMMMMMMMMMMMMMAR

Characters: I IRQ, M main, A ACL, R release, W Ascend 950 worker (whole cluster), U UVB poll
threads, ! a CPU in two pools, . allowed but unused, x not allowed; with a ``cpu_budget``
(strict and GPU plans) F frontend (API server, EngineCore, tokenizers), r reserved, and a row
per instance frontend; ``.`` is then the spare CPUs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist

LEGEND = "I=IRQ M=main A=ACL R=release W=950 worker U=UVB !=in two pools .=allowed, unused x=not allowed"
LEGEND_BUDGET = (
    "I=IRQ M=main A=ACL R=release W=950 worker U=UVB G=GPU pool F=frontend "
    "r=reserved !=in two pools .=spare x=not allowed"
)


def cpu_roles_of(plan):
    """``{cpu: [(npu, char), ...]}`` for every CPU a pool of the plan uses."""
    owners = {}
    for key in sorted(plan.get("npus") or {}, key=_num):
        entry = plan["npus"][key]
        for cpu, char in _npu_chars(entry, plan.get("mode")):
            owners.setdefault(cpu, []).append((key, char))
    for key in sorted(plan.get("gpus") or {}, key=_num):
        for cpu in cpulist.parse(plan["gpus"][key].get("pool") or ""):
            owners.setdefault(cpu, []).append(("GPU" + key, "G"))
    return owners


def _num(key):
    return int(key) if str(key).isdigit() else str(key)


def _npu_chars(entry, mode):
    order = cpulist.parse_ordered(entry.get("pool_order") or entry.get("pool") or "")
    if mode == "ascend950":
        return [(cpu, "W") for cpu in order]
    roles = {}
    for name, char in (("irq", "I"), ("acl", "A"), ("release", "R")):
        for cpu in cpulist.parse(entry.get(name) or ""):
            roles[cpu] = char
    return [(cpu, roles.get(cpu, "M")) for cpu in order]


def render_text(plan, topology=None):
    """The map as text (lines joined by newlines, no trailing newline)."""
    owners = cpu_roles_of(plan)
    uvb = set(cpulist.parse(plan.get("uvb") or ""))
    allowed = None
    if topology:
        text = (topology.get("cpu") or {}).get("allowed")
        if text:
            allowed = set(cpulist.parse(text))
    nodes = []
    for key, text in (plan.get("numa_nodes") or {}).items():
        cpus = cpulist.parse(text or "")
        if cpus:
            nodes.append((_num(key), cpus))
    nodes.sort(key=lambda item: item[1][0])
    if not nodes:
        used = sorted(set(owners) | uvb)
        if used:
            nodes = [("-", list(range(used[0], used[-1] + 1)))]
    head = "CPU map: policy %s, mode %s" % (plan.get("policy"), plan.get("mode"))
    if plan.get("skipped"):
        return head + "\nskipped: %s" % plan.get("reason")
    budget = plan.get("cpu_budget")
    kept = {}
    if isinstance(budget, dict):
        for key, char in (("frontend", "F"), ("reserved", "r")):
            kept.update(dict.fromkeys(cpulist.parse(budget.get(key) or ""), char))
    lines = [head, LEGEND_BUDGET if kept or isinstance(budget, dict) else LEGEND]
    width = max(
        [len(cpulist.format(c)) for dummy, c in nodes]
        + [7]
        + [len(e.get("pool_order") or e.get("pool") or "") for e in (plan.get("npus") or {}).values()]
    )
    for node, cpus in nodes:
        row = "".join(_cpu_char(cpu, owners, uvb, allowed, kept) for cpu in cpus)
        lines.append("node %-3s %-*s  %s" % (node, width, cpulist.format(cpus), row))
    for key in sorted(plan.get("npus") or {}, key=_num):
        entry = plan["npus"][key]
        chars = "".join(char for dummy, char in _npu_chars(entry, plan.get("mode")))
        where = ",".join(str(n) for n in entry.get("pool_nodes") or entry.get("numa_nodes") or []) or "-"
        lines.append(
            "NPU%-5s %-*s  node %-3s %s" % (key, width, entry.get("pool_order") or entry.get("pool"), where, chars)
        )
    for key in sorted(plan.get("gpus") or {}, key=_num):
        entry = plan["gpus"][key]
        lines.append(
            "GPU%-5s %-*s  node %-3s nic %s (%s)"
            % (key, width, entry.get("pool"), entry.get("numa_node"), entry.get("nic"), entry.get("link"))
        )
    if uvb:
        lines.append("UVB      %-*s" % (width, plan.get("uvb")))
    for name in sorted(plan.get("instances") or {}):
        inst = plan["instances"][name]
        if "frontend" not in inst:
            continue
        where = ",".join(str(n) for n in inst.get("frontend_nodes") or []) or "-"
        lines.append(
            "%-8s %-*s  node %-3s frontend (%s)"
            % (name, width, inst.get("frontend") or "-", where, inst.get("frontend_source"))
        )
    return "\n".join(lines)


def _cpu_char(cpu, owners, uvb, allowed, kept=None):
    found = owners.get(cpu)
    if found:
        return "!" if len(found) > 1 else found[0][1]
    if cpu in uvb:
        return "U"
    if allowed is not None and cpu not in allowed:
        return "x"
    if kept:
        return kept.get(cpu, ".")
    return "."
