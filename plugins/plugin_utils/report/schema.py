# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's schema constants and the small pure helpers its analysis and renderers
share (cpulists in and out, tolerant dict/list access, plurals).

Controller-side code: the report is built by ``analysis.build_report`` (problems from
``problems``) and only formatted by ``markdown``, ``html`` and ``analysis.render_json``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.cpus.nodemap import NodeMap
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.model import drift_kinds
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch

REPORT_SCHEMA = 1
# Where a number of the report comes from. The installed plan: each instance's plan JSON
# (<dest>/<name>.plan.json, docs/plan-json.md) as vllm_binding_facts read it back, with the
# binder's check of the running processes against it. A what-if: the audit's own npu_cpu_plan
# of each policy, recomputed from the host's facts - what the host would get, not what it runs.
INSTALLED = "installed"
WHAT_IF = "what_if"
CONFIGURED = "configured"  # the role variables: what site.yml applies (report/applied.py)
BASIS_TEXT = OrderedDict(
    [
        (
            INSTALLED,
            "installed plan: each instance's plan JSON as vllm_binding_facts read it back, "
            "and the binder's check of the running processes against it",
        ),
        (
            WHAT_IF,
            "what-if: recomputed by the audit from the host's facts (npu_cpu_plan per "
            "policy), not the plan the host runs",
        ),
        (
            CONFIGURED,
            "configured: the host's role variables (npuops_vllm_instances, "
            "npuops_irqbalance, ...), what site.yml applies",
        ),
    ]
)
# the report's sections (JSON keys under hosts[] and at the top level) and their basis
SECTION_BASIS = OrderedDict(
    [
        ("plans", WHAT_IF),
        ("irqbalance_bans", WHAT_IF),
        ("vllm_ascend_release", WHAT_IF),
        ("kubernetes_whatif", WHAT_IF),
        ("binding", INSTALLED),
        ("drift", INSTALLED),
        ("config", CONFIGURED),
    ]
)
POLICIES = dispatch.POLICIES  # the planner's registry: one list of policies
BASELINE = "strict"  # our plan: the pages compare every other policy's binding with it
COMPARED = tuple(p for p in POLICIES if p != BASELINE)
# the policy that predicts vllm-ascend's own in-process binding (an instance's binding: vllm);
# its findings, the fleet summary's vllm_* counts and the release prediction read its plan
VLLM = "vllm_ascend"
# how the pages name a policy: (table heading, map caption); one not listed, by its name
_TITLES = {
    BASELINE: ("strict (ours)", "strict plan (ours)"),
    VLLM: ("vllm_ascend (in-process)", "vllm-ascend in-process binding"),
}
ROLES = ("irq", "main", "acl", "release")
SEVERITIES = ("error", "warning", "info")

FIX_VLLM = (
    "use policy strict: set enable_cpu_binding false in vLLM's additional_config and "
    "bind with the npuops.fleet.cpu_binding role (npuops_cpu_policy: strict)"
)
FIX_IRQBALANCE = drift_kinds.FIX_IRQBALANCE
FIX_MIGRATEPAGES = "install numactl (provides migratepages)"


# every character that ends a line somewhere (str.splitlines: \r \n \v \f \x1c-\x1e \x85
# \u2028 \u2029) and the other control characters: host text is shown on one line
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text):
    """Host text with every line separator and control character as a space: a host's value
    (a process ``comm`` of ``x\\r# ALL OK\\r``) cannot start a line of the report's own."""
    return _LINE_BREAKING.sub(" ", text)


def cpu_ids(text):
    """Sorted CPU ids of a cpulist string; [] for None or text that is not a cpulist."""
    if isinstance(text, (list, tuple)):
        return sorted(set(int(c) for c in text))
    if text is None or text == "":
        return []
    try:
        return cpulist.parse(str(text))
    except NpuopsError:
        return []


def fmt(cpus):
    return cpulist.format(cpus)


def int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def key_sort(key):
    number = int_or_none(key)
    return (0, number, "") if number is not None else (1, 0, str(key))


def as_dict(value):
    return value if isinstance(value, dict) else {}


def as_list(value):
    return value if isinstance(value, list) else []


def numa_map(facts):
    """{node id (int): [cpus]} from facts cpu.numa_nodes (memory-only nodes kept, empty)."""
    nodes = {}
    for key, text in as_dict(as_dict(facts.get("cpu")).get("numa_nodes")).items():
        node = int_or_none(key)
        if node is not None:
            nodes[node] = cpu_ids(text)
    return dict(sorted(nodes.items()))


def node_map(facts):
    """The nodemap.NodeMap of ``numa_map(facts)``: which NUMA node each CPU is on."""
    return NodeMap(numa_map(facts))


def nodes_of(cpus, nodes):
    """The sorted NUMA nodes of ``cpus`` on the NodeMap ``nodes`` (``node_map``)."""
    return sorted(nodes.nodes(cpus))


def policy_heading(policy):
    """A policy's heading over its columns in the comparison table."""
    return _TITLES.get(policy, (policy, None))[0]


def policy_caption(policy):
    """A policy's name over its CPU map."""
    return _TITLES.get(policy, (None, policy + " plan"))[1]


def sources():
    """The report's ``sources``: per section its basis and what that means."""
    return OrderedDict(
        (section, OrderedDict([("basis", basis), ("text", BASIS_TEXT[basis])]))
        for section, basis in SECTION_BASIS.items()
    )


def comparison_title():
    """The comparison section's title: ``vllm-ascend in-process binding vs the strict plan``."""
    return "%s vs the %s plan" % (", ".join(policy_caption(p) for p in COMPARED), BASELINE)


def device_label(device_type):
    """A device type as the pages show it: ``Ascend 950 (A5)`` (the row's ``label``, the product
    name the README and docs use, where it differs from its code); others as they are (GPU
    models too)."""
    kind = device_types.BY_NAME.get(device_type) if isinstance(device_type, str) else None
    if kind is None or kind.label == device_type:
        return device_type
    return "%s (%s)" % (kind.label, device_type)


def plural(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else "s")
