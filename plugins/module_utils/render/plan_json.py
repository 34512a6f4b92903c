# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The installed plan JSON (``<dest>/<name>.plan.json``): one instance's part of the plan, the
contract between ``vllm_launch_wrapper`` and its readers - the binder (``standalone/``) and
``vllm_binding_facts`` (``model/binding``). Its fields: docs/plan-json.md.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors, worker_start

# The plan JSON's schema (docs/plan-json.md). 1: the whole plan plus ``npuops_instance``
# (name, vendor, devices, main, pool, binding, visible, frontend). 2: only what the readers
# read, ``npuops_instance.device_nodes`` added; the binder reads schema 1 files too.
PLAN_JSON_SCHEMA = 2


def device_nodes(plan, view):
    """``{device: node}``: the NUMA node each of the instance's devices keeps its memory on, as
    the plan decided it (the binder's ``migratepages`` target, read from the plan JSON): a GPU
    entry's ``numa_node``; an NPU entry's ``home_node``, else its first ``numa_nodes``. A device
    whose entry names none is left out (the binder then finds it from the device's CPUs)."""
    table = plan.get(vendors.of_plan(plan).device_key) or {}
    out = {}
    for dev in view["devices"]:
        entry = table.get(str(dev)) or {}
        node = entry.get("numa_node") if "numa_node" in entry else entry.get("home_node")
        if node is None and entry.get("numa_nodes"):
            node = entry["numa_nodes"][0]
        if isinstance(node, int) and not isinstance(node, bool) and node >= 0:
            out[str(dev)] = node
    return out


# What the plan JSON keeps of a device's entry: the fields the binder reads (docs/plan-json.md).
# ``numa_nodes`` stays for binders of schema 1, which took the node from it.
_ENTRY_FIELDS = {"npus": ("main", "acl", "release", "numa_nodes"), "gpus": ("pool", "numa_node")}


def plan_json_doc(plan, view, binding="host", vllm=None):
    """The plan JSON as a dict (docs/plan-json.md, schema ``PLAN_JSON_SCHEMA``): what the binder
    and ``vllm_binding_facts`` read of the plan, for this instance only. ``npuops_instance``:
    the instance (name, vendor, devices in rank order, binding, frontend, each device's NUMA
    node); ``numa_nodes``: the host's nodes; ``npus`` / ``gpus``: the instance's devices'
    entries, the fields the binder reads; ``worker_start``: how its workers start. ``vllm``:
    the instance's own vLLM (``{version, source}``, read from the environment its command
    names): on a vLLM host it decides ``worker_start`` for this instance, over the host's guess."""
    key = vendors.of_plan(plan).device_key
    table = plan.get(key) or {}
    keep = _ENTRY_FIELDS.get(key, ())
    doc = {
        "numa_nodes": plan.get("numa_nodes") or {},
        key: dict(
            (str(dev), dict((f, table[str(dev)][f]) for f in keep if f in table[str(dev)]))
            for dev in view["devices"]
            if isinstance(table.get(str(dev)), dict)
        ),
    }
    if plan.get("worker_start") is not None:
        doc["worker_start"] = plan["worker_start"]
    engine = worker_start.ENGINE_OF_VENDOR.get(view.get("vendor"))
    if engine == "vllm" and isinstance(vllm, dict) and vllm.get("version"):
        doc["worker_start"] = dict(worker_start.decide(engine, vllm["version"]), source=vllm.get("source"))
    doc["npuops_instance"] = {
        "schema": PLAN_JSON_SCHEMA,
        "name": view["name"],
        "vendor": view["vendor"],
        "devices": view["devices"],
        "binding": binding,
        "device_nodes": device_nodes(plan, view),
    }
    if view.get("frontend"):
        doc["npuops_instance"]["frontend"] = cpulist.format(view["frontend"])
    return doc


def render_plan_json(plan, view, binding="host", vllm=None):
    """The plan JSON text the binder reads (``plan_json_doc``)."""
    return json.dumps(plan_json_doc(plan, view, binding, vllm), indent=2, sort_keys=True) + "\n"
