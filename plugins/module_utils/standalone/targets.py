# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the plan JSON (written by ``vllm_launch_wrapper`` beside the wrapper) asks for: per
device the main, ACL and release CPUs and the memory node; for the instance the frontend CPUs
(API server, EngineCore, tokenizer processes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus.nodemap import NodeMap
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors, worker_start

from .rules import BindError, parse_cpulist, read_json

ACL_THREAD = "acl_thread"
RELEASE_THREAD = "release_thread"
COMM_LEN = 15


MAX_PLAN_BYTES = 4 << 20


def load_plan(path, instance=None):
    doc = read_json(path, MAX_PLAN_BYTES, "plan")
    info = doc.get("npuops_instance") if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        raise BindError("plan %s: no npuops_instance block (write it with vllm_launch_wrapper)" % path)
    if info.get("name") is not None and not isinstance(info.get("name"), str):
        raise BindError("plan %s: npuops_instance.name %r is not a name" % (path, info.get("name")))
    if instance is not None and info.get("name") != instance:
        raise BindError("plan %s: is for instance %r, not %r" % (path, info.get("name"), instance))
    return doc


def _node_id(value, source):
    """A NUMA node id: an int (not a bool) or its decimal text; BindError naming ``source``."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 4096:
        return value
    if isinstance(value, str) and value.isdigit() and len(value) <= 4:
        return int(value)
    raise BindError("plan: %s: %r is not a NUMA node id" % (source, value))


def instance_devices(doc):
    """The instance's devices (``npuops_instance.devices``): a list of device ids (ints)."""
    devices = doc["npuops_instance"].get("devices")
    if devices is None:
        return []
    if not isinstance(devices, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices
    ):
        raise BindError("plan: npuops_instance.devices %r is not a list of device ids" % (devices,))
    return list(devices)


def plan_nodes(doc):
    """``{node: [cpus]}`` of the plan's ``numa_nodes`` (a mapping of node id -> cpulist);
    BindError saying what is wrong with it."""
    nodes = doc.get("numa_nodes")
    if nodes is None:
        return {}
    if not isinstance(nodes, dict):
        raise BindError("plan: numa_nodes is a %s, not a mapping of NUMA node -> CPUs" % type(nodes).__name__)
    return dict(
        (_node_id(node, "numa_nodes key"), parse_cpulist(cpus, "plan numa_nodes %s" % node))
        for node, cpus in nodes.items()
    )


def vendor_of(doc):
    """The vendor row (``model/vendors``) of the plan's ``npuops_instance.vendor`` (plans
    written before it existed: ascend); BindError for a vendor the table lacks."""
    name = doc["npuops_instance"].get("vendor") or "ascend"
    row = vendors.get(name) if isinstance(name, str) else None
    if row is None:
        raise BindError("plan: vendor %r is not one of %s" % (name, ", ".join(sorted(vendors.VENDORS))))
    return row


def worker_start_of(doc, start_method=None):
    """How the instance's engine starts its workers (``model/worker_start.decide``): the
    engine and version the plan records (``worker_start``; plans without it: the vendor's
    engine, version unknown), ``start_method`` the instance's VLLM_WORKER_MULTIPROC_METHOD.
    The order is looked up again in the binder's own table, never taken from the file."""
    recorded = doc.get("worker_start")
    if recorded is not None and not isinstance(recorded, dict):
        raise BindError("plan: worker_start is a %s, not a mapping" % type(recorded).__name__)
    recorded = recorded or {}
    engine = recorded.get("engine")
    if engine is None:
        engine = worker_start.ENGINE_OF_VENDOR.get(vendor_of(doc).name)
    version = recorded.get("version")
    if engine is not None and not isinstance(engine, str) or version is not None and not isinstance(version, str):
        raise BindError("plan: worker_start engine %r / version %r are not texts" % (engine, version))
    decision = worker_start.decide(engine, version, start_method)
    decision["source"] = recorded.get("source") if isinstance(recorded.get("source"), str) else None
    return decision


def planned_node(doc, device):
    """The NUMA node the plan gives ``device`` (``npuops_instance.device_nodes``, plan JSON
    schema 2), or None where the plan has none (a schema 1 file)."""
    nodes = doc["npuops_instance"].get("device_nodes")
    if nodes is None:
        return None
    if not isinstance(nodes, dict):
        raise BindError(
            "plan: npuops_instance.device_nodes is a %s, not a mapping of device -> NUMA node" % type(nodes).__name__
        )
    node = nodes.get(str(device))
    return None if node is None else _node_id(node, "npuops_instance.device_nodes %s" % device)


def device_target(doc, device):
    """CPU roles and memory node of one device: {label, main, acl, release, node}. The
    vendor row names the plan table (``npus`` / ``gpus``) and the device word; a GPU entry
    has one pool and its node, an NPU entry main / ACL / release CPUs and its nodes. The node
    is the plan's (``planned_node``); a schema 1 plan's is found from its entry as the
    binders of that schema did (the entry's first node, else the node of its main CPUs)."""
    row = vendor_of(doc)
    table = doc.get(row.device_key) or {}
    if not isinstance(table, dict):
        raise BindError("plan: %s is a %s, not a mapping of device -> CPUs" % (row.device_key, type(table).__name__))
    entry = table.get(str(device))
    if not isinstance(entry, dict):
        raise BindError("plan: device %s is not in the plan" % device)
    label = "%s%s" % (row.device_word, device)
    planned = planned_node(doc, device)
    if row.is_gpu:
        main = parse_cpulist(entry.get("pool"), label + " pool")
        acl, release, node = [], [], entry.get("numa_node")
        if node is not None:
            node = _node_id(node, "%s numa_node" % label)
    else:
        main = parse_cpulist(entry.get("main"), label + " main")
        acl = parse_cpulist(entry.get("acl"), label + " acl")
        release = parse_cpulist(entry.get("release"), label + " release")
        nodes = entry.get("numa_nodes") or []
        if not isinstance(nodes, list):
            raise BindError("plan: %s numa_nodes %r is not a list of NUMA nodes" % (label, nodes))
        nodes = [_node_id(n, "%s numa_nodes" % label) for n in nodes]
        if planned is None:
            node = nodes[0] if nodes else node_of(doc, main[0] if main else None)
    if planned is not None:
        node = planned
    if not main:
        raise BindError("plan: %s has no main CPUs" % label)
    return {
        "label": label,
        "device": device,
        "main": main,
        "acl": acl,
        "release": release,
        "node": None if node is None else int(node),
    }


def node_of(doc, cpu):
    """The plan's NUMA node of ``cpu`` (None: on no node, or no CPU); a CPU the plan lists
    under two nodes is the lower node's (the map gives it to the later one)."""
    if cpu is None:
        return None
    return NodeMap(dict(sorted(plan_nodes(doc).items(), reverse=True))).get(cpu)


def all_nodes(doc):
    nodes = plan_nodes(doc)
    if nodes:
        return sorted(nodes)
    try:
        with open("/sys/devices/system/node/online") as handle:
            return parse_cpulist(handle.read().strip(), "node/online")
    except (IOError, OSError):
        return [0]


def frontend_target(doc):
    """The instance's frontend CPUs as a target, or None when the plan has none."""
    info = doc["npuops_instance"]
    cpus = parse_cpulist(info.get("frontend"), "instance frontend")
    if not cpus:
        return None
    return {"label": "frontend", "device": None, "main": cpus, "acl": [], "release": [], "node": None}


def desired_cpus(comm, target):
    if target["acl"] and ACL_THREAD[:COMM_LEN] in comm:
        return target["acl"], "acl"
    if target["release"] and RELEASE_THREAD[:COMM_LEN] in comm:
        return target["release"], "release"
    return target["main"], "main"


def plan_lines(targets):
    """The plan as the binder logs it (the lines vllm-ascend's own binding prints)."""
    lines = ["The CPU allocation plan is as follows:"]
    for target in targets:
        lines.append(
            "%s: main=[%s]  acl=[%s]  release=[%s]"
            % (target["label"], *(" ".join(str(c) for c in target[role]) for role in ("main", "acl", "release")))
        )
    return lines
