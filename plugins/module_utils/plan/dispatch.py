# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``make_plan``: topology facts + options -> the CPU plan (schema in docs/dev/plan.md).

Dispatch only: validation of the options, the inputs each policy needs, and the plan dict.
The allocators live in strict.py and vllm_ascend/plan/allocator.py, GPU pools and pairing in gpu.py, the
frontend of each instance and the host's ``cpu_budget`` (strict and gpu_numa) in frontend.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules, schema, vendors
from ansible_collections.npuops.fleet.plugins.module_utils.model import worker_start
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types
from ansible_collections.npuops.fleet.plugins.module_utils.plan import frontend as placement
from ansible_collections.npuops.fleet.plugins.module_utils.plan.instance_input import (  # noqa: F401 pylint: disable=unused-import
    Instance,
    int_list as _int_list,
    validate_instances,
)
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.plan import gpu as gpu_plan
from ansible_collections.npuops.fleet.plugins.module_utils.plan import layout
from ansible_collections.npuops.fleet.plugins.module_utils.plan import roles as cpu_roles
from ansible_collections.npuops.fleet.plugins.module_utils.plan import strict as policy_strict
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import predict as va_predict
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import releases as vllm_ascend_releases


def _node_cpus(topology):
    """The NUMA nodes that hold CPUs: memory-only nodes (GH200, CXL) have none to plan with."""
    return {node: cpus for node, cpus in rules.node_cpus(topology).items() if cpus.size}


def _npu_facts(topology):
    """``(ids, affinity {id: ordered cpus}, pci_nodes {id: node or None}, busy [ids])``."""
    ids, affinity, pci_nodes, busy = [], {}, {}, []
    for index, npu in enumerate(topology.get("npus") or []):
        logic = npu.get("logic_id") if isinstance(npu, dict) else None
        if logic is None:
            raise PlanError("topology npus[%d] has no logic_id" % index)
        logic = int(logic)
        ids.append(logic)
        text = npu.get("affinity")
        # cpulist.is_cpulist's test, parsing once: a cpulist that is not blank parses to at
        # least one CPU, a blank one to none; an unreadable one counts as no affinity (so its
        # ParseError, and the source it names, are never shown)
        if text and isinstance(text, str):
            try:
                cpus = cpuset.parse_ordered(text, "npus[].affinity")
            except ParseError:
                cpus = cpuset.EMPTY
            if cpus.size:
                affinity[logic] = cpus
        node = npu.get("numa_node")
        if node is not None:
            node = int(node)
            if node < 0:
                node = None
        pci_nodes[logic] = node
        if npu.get("processes"):
            busy.append(logic)
    return sorted(set(ids)), affinity, pci_nodes, sorted(busy)


def _all_logic_npus(topology, ids):
    """vllm-ascend takes the logic ids from ``npu-smi info -m`` (the raw npu_map)."""
    found = set()
    for chips in (topology.get("npu_map") or {}).values():
        for logic in (chips or {}).values():
            if str(logic).isdigit():
                found.add(int(logic))
    return sorted(found) if found else list(ids)


def _empty_plan(policy, device_type, topology):
    # the host the facts were read from: the wrapper and IRQ modules refuse a plan for another
    nodes = (topology.get("cpu") or {}).get("numa_nodes") or {}
    plan = {
        "policy": policy,
        "hostname": topology.get("hostname"),
        "mode": None,
        "device_type": device_type,
        "skipped": False,
        "reason": None,
        "numa_nodes": dict(zip(map(str, nodes), nodes.values())),
        "npus": {},
        "instances": {},
        "gpus": {},
        "env": {},
        "log": [],
        "warnings": [],
        "vendor": topology.get("vendor"),
    }
    # how the host's engine starts its workers: the binder reads it from the plan JSON
    starts = worker_start.of_facts(topology)
    if starts is not None:
        plan["worker_start"] = starts
    return plan


def _release(topology, version):
    """The release ``policy=vllm_ascend`` predicts: the option, else the facts' version."""
    if version is not None:
        return vllm_ascend_releases.select(version, "option")
    found = topology.get("vllm_ascend")
    if isinstance(found, dict) and found.get("version"):
        source = "facts: %s" % (found.get("source") or "unknown")
        try:
            return vllm_ascend_releases.select(str(found["version"]), source)
        except PlanError as err:
            raise PlanError(
                "%s (the version of npu_topology.vllm_ascend, read from %s; pass "
                "vllm_ascend_version to predict another release)" % (err.reason, found.get("source"))
            )
    return vllm_ascend_releases.select(None)


def _no_cpus(allowed_all, allowed_cpus, reserved_cpus):
    """Why no CPU is left to plan on, naming only what the caller or the facts gave."""
    if allowed_all.size:
        return "no allowed CPUs left: %s minus reserved_cpus is empty" % (
            "allowed_cpus" if allowed_cpus is not None else "the host's allowed CPUs (facts cpu.allowed)"
        )
    if allowed_cpus is not None:
        return "allowed_cpus is empty"
    return (
        "no CPUs known for this host: its facts have neither cpu.allowed nor cpu.online "
        "(/proc/self/status, sysfs and lscpu gave none); gather the facts again"
    )


def make_plan(
    topology,
    policy="strict",
    npus=None,
    instances=None,
    device_type=None,
    allowed_cpus=None,
    reserved_cpus=None,
    nics=None,
    frontend_cpus=None,
    full_check=False,
    vllm_ascend_version=None,
):
    """The CPU plan of a host. Raises PlanError (or ParseError) with a message for the user.

    A plan that fails for lack of CPUs while ``allowed_cpus`` is not given and the facts'
    allowed CPUs are a strict subset of the online ones says so (``cpuset_hint``).
    ``frontend_cpus`` caps each instance's frontend (strict and GPU plans; 0: none).
    The topology is checked before use: the fields the planners read
    (``schema.check_planner_input``), or with ``full_check`` the whole facts
    (``schema.check_topology``, what a module does with the facts it is given).
    ``vllm_ascend_version``: the release ``policy=vllm_ascend`` predicts (default the facts'
    ``vllm_ascend.version``, else the newest release known, with a warning).
    """
    if frontend_cpus is not None and (
        isinstance(frontend_cpus, bool) or not isinstance(frontend_cpus, int) or frontend_cpus < 0
    ):
        raise PlanError("frontend_cpus must be a non-negative integer, got %r" % (frontend_cpus,))
    try:
        return _make_plan(
            topology,
            policy,
            npus,
            instances,
            device_type,
            allowed_cpus,
            reserved_cpus,
            nics,
            frontend_cpus,
            full_check,
            vllm_ascend_version,
        )
    except PlanError as err:
        if err.cpu_shortage and allowed_cpus is None and err.hint is None:
            hint = rules.cpuset_hint(topology)
            if hint:
                err.add_hint(hint)
        raise


def _make_plan(
    topology,
    policy,
    npus,
    instances,
    device_type,
    allowed_cpus,
    reserved_cpus,
    nics,
    frontend_cpus,
    full_check,
    vllm_ascend_version=None,
):
    if not isinstance(topology, dict):
        raise PlanError("topology must be the npu_topology facts dict, got %r" % type(topology).__name__)
    # every field the planners read, before they read it
    (schema.check_topology if full_check else schema.check_planner_input)(topology)
    if policy not in POLICIES:
        raise PlanError("unknown policy %r; choose one of %s" % (policy, ", ".join(POLICIES)))
    if device_type is not None and device_type not in device_types.TYPES:
        raise PlanError("unknown device_type %r; choose one of %s" % (device_type, ", ".join(device_types.TYPES)))
    dtype = device_type or topology.get("device_type")
    plan = _empty_plan(policy, dtype, topology)
    release = _release(topology, vllm_ascend_version) if policy == "vllm_ascend" else None
    cpu = topology.get("cpu") or {}
    allowed = cpuset.parse_option(allowed_cpus, "allowed_cpus")
    if allowed is None:
        allowed = cpuset.parse(cpu.get("allowed") or cpu.get("online") or "", "topology cpu.allowed")
    allowed_all = allowed
    reserved = cpuset.parse_option(reserved_cpus, "reserved_cpus")
    if reserved:
        allowed = cpuset.subtract(allowed, reserved)
    # the host's budget: every allowed CPU, reserved ones included
    host = layout.HostCpus(topology, _node_cpus(topology), allowed, allowed_all, reserved, frontend_cpus)
    vendor = topology.get("vendor")
    if vendors.is_gpu_vendor(vendor):
        return _gpu_plan(plan, topology, npus, instances, allowed_cpus, reserved_cpus, nics, host)
    ids, affinity, pci_nodes, busy = _npu_facts(topology)
    if vendor == "ascend" and not ids:
        # npu-smi answered with a table no parser could read: not a host without NPUs
        raise PlanError(
            "an Ascend host whose NPUs could not be read: %s"
            % (
                "; ".join(
                    "%s: %s" % (e.get("source"), e.get("msg"))
                    for e in topology.get("errors") or []
                    if str(e.get("source", "")).startswith("npu-smi")
                )
                or "no NPU in the facts"
            )
        )
    if release is not None and not ids and va_predict.npu_smi_missing(topology):
        # no npu-smi: vllm-ascend fails on this host whatever it is asked (rank by rank)
        return va_predict.without_npu_smi(
            plan, _int_list(npus, "npus"), validate_instances(instances, va_predict.ANY_ID), release
        )
    if vendor not in (None, "ascend") or not ids:
        plan["skipped"] = True
        plan["reason"] = "no NPU on this host (vendor %s): CPU binding does not apply" % (vendor,)
        return plan
    requested = _int_list(npus, "npus")
    unknown = sorted(set(requested) - set(ids)) if requested else None
    if unknown:
        raise PlanError("unknown NPU id(s) %s; this host has logic ids %s" % (unknown, ids), unknown[0])
    insts = (
        None
        if instances is None
        else validate_instances(instances, set(requested if requested is not None else ids), ids)
    )
    if requested is None and insts:
        requested = sorted(set(n for dummy, members in insts for n in members))
    if not allowed.size:
        raise PlanError(_no_cpus(allowed_all, allowed_cpus, reserved_cpus))
    request = layout.NpuRequest(ids, requested, affinity, pci_nodes, busy, dtype)
    fronts = POLICY_PLANNERS[policy](plan, request, host, insts, release)
    if insts:
        _instances(plan, insts, fronts)
    return plan


def _strict(plan, request, host, insts, release=None):
    """The strict policy (ours): pools, roles, frontends and the budget."""
    requested, cpu_node, nearness = request.requested, host.cpu_node, host.nearness
    result = policy_strict.plan_strict(
        request.ids,
        request.affinity,
        request.pci_nodes,
        host.node_cpus,
        host.allowed,
        request.device_type,
        host.threads_per_core,
        requested,
        cpu_node,
        nearness,
        host.cores,
    )
    plan["mode"] = result["mode"]
    plan["warnings"].extend(result["warnings"])
    keep = requested if requested is not None else result["planned_over"]
    pools = result["pools"]
    homes = result["homes"]
    cluster = result["cluster_roles"]
    planned = sorted(result["planned_over"])
    uvb = result["uvb"]
    fronts = _place(
        plan,
        planned,
        pools,
        lambda npu: homes[npu][0],
        host,
        insts,
        cluster and cpu_roles.cluster_size(host.threads_per_core, device_types.row(request.device_type).cluster_cores),
        uvb,
    )
    entries = plan["npus"]
    if insts:
        # the entries' pool and main CPUs for ``_instances``, from the pools instead of the
        # entries' text: main is ``pool[2:-2]`` (roles.split_roles; _place has those it
        # carved from), a 950 pool is all main
        fronts["device_cpus"] = device_cpus = {}
        if cluster:
            for npu in keep:
                device_cpus[npu] = (pools[npu], pools[npu])
        else:
            mains = fronts["mains"]  # (_place cut every planned pool's main)
            for npu in keep:
                device_cpus[npu] = (pools[npu], mains[npu])
    for npu, entry in zip(keep, cpu_roles.pool_entries(pools, keep, cpu_node, cluster)):
        home, entry["locality"] = homes[npu]
        entry["home_node"] = home
        nodes = entry["pool_nodes"] = entry["numa_nodes"]
        if home is not None and (len(nodes) != 1 or nodes[0] != home):
            # the worker's memory stays on its home node, whatever it borrowed
            entry["numa_nodes"] = [home]
        entries[str(npu)] = entry
    if uvb is not None:
        plan["uvb"] = cpuset.format(uvb)
    plan["warnings"].extend(nearness.read_warnings())
    plan["log"].append(
        "[strict] mode=%s npus=%s planned_over=%s" % (result["mode"], list(keep), result["planned_over"])
    )
    return fronts


def _place(plan, devices, pools, home_of, host, insts, cluster=None, uvb=None):
    """Frontends, carve-outs (``pools`` updated in place) and ``plan["cpu_budget"]``.
    ``home_of``: device -> its home node or None; ``host``: the plan's ``layout.HostCpus``."""
    allowed, allowed_all, reserved = host.allowed, host.allowed_all, host.reserved
    cpu = host.cpu
    seqs = pools
    extra = cpuset.CpuSeq.from_cpus(uvb) if uvb else cpuset.EMPTY
    if (
        not (insts or reserved or cpu.get("isolated") or cpu.get("nohz_full"))
        and sum([seqs[dev].size for dev in devices]) + extra.size == allowed.size
    ):
        # the usual whole-host plan of a host whose pools hold every allowed CPU (A3)
        plan["cpu_budget"] = {"workers": cpuset.format(allowed_all), "frontend": "", "reserved": "", "spare": ""}
        return {"instances": {}, "carved": {}}
    isolated = host.isolated
    # device -> its main CPUs, pool[2:-2] (roles.split_roles): the carve's sources, then the
    # instances'
    mains = {}
    if insts and not cluster:
        for dev in devices:
            seq = seqs[dev]
            mains[dev] = seq.part(2, seq.size - 2)
    main_cpus = mains.__getitem__

    fronts = placement.place(
        devices, seqs, home_of, host, insts, None if cluster else main_cpus, cluster or None, extra
    )
    workers = fronts["workers"]
    frontend = placement.union(
        [f["frontend"] for f in fronts["instances"].values()] + list(fronts["device_frontend"].values())
    )
    if fronts["carved"]:
        for dev, carved in fronts["carved"].items():
            if cluster:
                seqs[dev] = cpuset.subtract(seqs[dev], carved)
            else:
                seqs[dev], mains[dev] = placement.carved_pool(seqs[dev], mains[dev], carved)
            pools[dev] = seqs[dev]  # (one dict for non-950 pools: the same assignment)
        # every frontend carved (none from free CPUs): the frontends are the carved CPUs
        only_carved = not fronts["device_frontend"] and all(
            front["frontend_source"] != "free" for front in fronts["instances"].values()
        )
        held = workers if only_carved else None  # (the workers before the carve)
        workers = cpuset.subtract(workers, frontend if only_carved else placement.union(fronts["carved"].values()))
    else:
        held = None
    plan["cpu_budget"] = placement.budget(allowed_all, workers, frontend, reserved, isolated, held)
    plan["warnings"].extend(fronts["warnings"])
    fronts["mains"] = mains
    return fronts


def _vllm_ascend_policy(plan, request, host, insts, release):
    """vllm-ascend's own allocator, as ``release`` has it; with no NPU asked for, the workers
    that run now (an audit), else, pre-launch, every NPU."""
    requested = request.requested if request.requested is not None else (request.busy or request.ids)
    _vllm_ascend(
        plan,
        host.topology,
        request.ids,
        requested,
        insts,
        request.busy,
        request.affinity,
        host.node_cpus,
        host.allowed,
        request.device_type,
        host.cpu,
        release,
        request.requested is None and bool(request.busy),
    )


def _vllm_ascend(
    plan, topology, ids, requested, insts, busy, affinity, node_cpus, allowed, dtype, cpu, release, audit=False
):
    pools, cluster, reserve_irq, cpu_node = va_predict.predict(
        plan,
        topology,
        requested,
        insts,
        busy,
        affinity,
        node_cpus,
        allowed,
        dtype,
        cpu,
        _all_logic_npus(topology, ids),
        release,
        audit,
    )
    if plan.get("uvb") is not None:
        plan["uvb"] = cpuset.format(plan["uvb"])
    entries = plan["npus"]
    npus = list(pools)
    if not reserve_irq and not cluster:
        # 0.22.1rc1 on Ascend 950: global slices without IRQ CPUs
        for npu in npus:
            entries[str(npu)] = cpu_roles.npu_entry(pools[npu], cpu_roles.split_roles(pools[npu], False, npu), cpu_node)
        return
    for npu, entry in zip(npus, cpu_roles.pool_entries(pools, npus, cpu_node, cluster)):
        entries[str(npu)] = entry


def _instances(plan, insts, fronts=None):
    """``plan["instances"]``: each instance's devices, the union of their pools and main CPUs,
    its frontend (the wrapper takes them from here; the visibility variable is the wrapper's
    to write, from ``npus``). ``fronts["device_cpus"]`` (strict): ``{device: (pool, main)}`` CpuSeq equal
    to the entries' cpulists, used instead of parsing them."""
    table = plan["gpus"] if plan["mode"] == "gpu_numa" else plan["npus"]
    device_cpus = (fronts or {}).get("device_cpus")
    for name, members in insts:
        main, pool, nodes = [], [], set()  # (the devices' runs)
        for dev in members:
            entry = table.get(str(dev))
            if entry is None:
                if plan["skipped"] or "vllm_ascend" in plan:
                    # (vllm_ascend: the ranks say why the release builds no pool for it)
                    continue
                raise PlanError("instance %s: no CPU pool was planned for it" % name, dev)
            if device_cpus is not None:
                dev_pool, dev_main = device_cpus[dev]
                pool.extend(dev_pool.runs)
                main.extend(dev_main.runs)
            else:
                # the entries' cpulists as runs (cpuset), not one int per CPU
                pool.extend(cpuset.parse(entry["pool"]).runs)
                main.extend(cpuset.parse(entry.get("main", entry["pool"])).runs)
            if "numa_nodes" in entry:
                nodes.update(entry["numa_nodes"])
            elif entry.get("numa_node") is not None:
                nodes.add(entry["numa_node"])
        plan["instances"][name] = {
            "npus": list(members),
            "main": cpuset.format(cpuset.union_runs(main)),
            "pool": cpuset.format(cpuset.union_runs(pool)),
            "numa_nodes": sorted(nodes),
        }
        if fronts is not None:
            front = fronts["instances"].get(name) or {}
            plan["instances"][name].update(
                {
                    "frontend": cpuset.format(front.get("frontend") or cpuset.EMPTY),
                    "frontend_nodes": list(front.get("frontend_nodes") or []),
                    "frontend_source": front.get("frontend_source") or "none",
                }
            )


def _gpu_plan(plan, topology, npus, instances, allowed_cpus, reserved_cpus, nics, host):
    plan["mode"] = "gpu_numa"
    result = gpu_plan.plan_gpus(topology, nics=nics, allowed=allowed_cpus, reserved=reserved_cpus)
    gpus = result.get("gpus") or {}
    known = set(int(k) for k in gpus)
    requested = _int_list(npus, "npus")
    unknown = sorted(set(requested or []) - known)
    if unknown:
        raise PlanError("unknown GPU index(es) %s; this host has %s" % (unknown, sorted(known)))
    keep = requested if requested is not None else sorted(known)
    plan["env"] = dict(result.get("env") or {})
    plan["warnings"].extend(result.get("warnings") or [])
    insts = validate_instances(instances, set(keep), sorted(known), "GPU")
    # the frontends and the budget, per the GPU's NUMA node and package
    if not host.allowed and allowed_cpus is None:
        # facts without cpu.allowed: plan_gpus planned over the NUMA nodes' CPUs
        allowed_all = placement.union(list(host.node_cpus.values()))
        allowed = cpuset.subtract(allowed_all, host.reserved) if host.reserved else allowed_all
        host = host.with_allowed(allowed, allowed_all)
    devices = sorted(known)
    pools = dict((k, cpuset.parse(gpus[str(k)]["pool"])) for k in devices)
    fronts = _place(plan, devices, pools, lambda k: gpus[str(k)].get("numa_node"), host, insts)
    plan["warnings"].extend(host.nearness.read_warnings())
    for dev in fronts["carved"]:
        gpus[str(dev)] = dict(gpus[str(dev)], pool=cpuset.format(pools[dev]))
    plan["gpus"] = dict((str(k), gpus[str(k)]) for k in keep)
    if insts:
        _instances(plan, insts, fronts)
    return plan


# The policy registry: name -> planner(plan, request, host, instances) -> the frontends (or
# None). A new policy is a planner here (its rules in its own plan/<policy>.py); the module's
# choices, the report's columns and the docs' list read POLICIES.
POLICY_PLANNERS = {"strict": _strict, "vllm_ascend": _vllm_ascend_policy}
POLICIES = tuple(sorted(POLICY_PLANNERS))  # strict, vllm_ascend: the module's choices, in order
