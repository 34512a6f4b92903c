# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one vllm-ascend release will do on a host, rank by rank (the plan's ``vllm_ascend``).

The release's rules come from ``releases.select``; the pools from the allocator
(allocator.py) run with those rules. Per instance (its ``ASCEND_RT_VISIBLE_DEVICES`` is its
NPU list, in its order) or, without instances, for the workers the facts show: each local rank
binds ``running_npu_list[rank]`` up to 0.25, ``ASCEND_RT_VISIBLE_DEVICES[rank]`` (``rank`` when
unset) from 0.26 - skipped where that NPU has no pool. Where the release fails before it builds
a pool (a parser that crashes on this host's output, an import that fails) every rank gets
``outcome: error`` and the plan says why, instead of a plan the release will never make.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import nodemap
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import allocator as va

TOPO_SOURCE = "npu-smi info -t topo"
STATUS_SOURCE = "/proc/self/status"
LSCPU_E_SOURCE = "lscpu -e=CPU,NODE"
FAIL_PREFIX = "vllm-ascend %s will fail to bind here, because "


def _errors_of(topology, source):
    return [
        e.get("msg") or "" for e in (topology.get("errors") or []) if isinstance(e, dict) and e.get("source") == source
    ]


MAP_SOURCE = "npu-smi info -m"
NO_NPU_SMI = (
    "DeviceInfo.get_npu_map_info ('npu-smi info -m')",
    "FileNotFoundError: [Errno 2] No such file or directory: 'npu-smi'",
)
# 'npu-smi info -m' answered nothing: how each parser generation fails on it (released code,
# run on that output: the positional one finds no logic id for the workers' rows, the header
# one reads the header of an empty list)
EMPTY_MAP = {
    "positional": (
        "DeviceInfo.get_running_npus ('npu-smi info' rows through 'npu-smi info -m')",
        "RuntimeError: Failed to get correct chip_logic_id from command 'npu-smi info -m'.",
    ),
    "header": ("DeviceInfo.get_npu_map_info ('npu-smi info -m')", "IndexError: list index out of range"),
}


class _AnyId(object):
    """``known`` of instances whose ids no fact can check (a host without npu-smi)."""

    def __contains__(self, item):
        return True


ANY_ID = _AnyId()


def npu_smi_missing(topology):
    """True when the facts say npu-smi is not installed (``tools``) and show no NPU (a tool
    that answered is installed, whatever ``which`` said): every release runs it."""
    return (topology.get("tools") or {}).get("npu-smi") is False and not topology.get("npus")


def release_failure(release, topology, device_type):
    """``(stage, message)`` where ``release`` fails on this host before any pool, or None."""
    rules = release["rules"]
    kind = device_types.row(device_type)
    if npu_smi_missing(topology):
        return NO_NPU_SMI
    if any(msg == "empty output" for msg in _errors_of(topology, MAP_SOURCE)):
        return EMPTY_MAP[rules["parsers"]]
    if rules["profile"] and not kind.vllm_profiled:
        return (
            "import of vllm_ascend.device.hardware_profile (the worker does not start)",
            "RuntimeError: No hardware profile is registered for device type: %s." % (device_type,),
        )
    layout = topology.get("npu_process_layout")
    if rules["parsers"] == "positional":
        if kind.process_table == device_types.NPU_ID_ROWS:
            return (
                "DeviceInfo.get_running_npus ('npu-smi info' process table)",
                "IndexError: list index out of range (the positional parser reads a Chip "
                "column that the %s table '| NPU ID | Process id |' does not have)" % kind.label,
            )
        if layout == "npu_id":
            return (
                "DeviceInfo.get_running_npus ('npu-smi info' process table)",
                "IndexError: list index out of range (the positional parser reads a Chip "
                "column that this host's '| NPU | Process id |' table does not have)",
            )
        npus = topology.get("npus") or []
        if (
            npus
            and not _errors_of(topology, TOPO_SOURCE)
            and any(isinstance(n, dict) and not n.get("affinity") for n in npus)
        ):
            return (
                "DeviceInfo.parse_topo_affinity ('npu-smi info -t topo')",
                "ValueError: invalid literal for int() with base 10 (the positional parser "
                "reads the last column of every NPU row as a CPU list; these rows have no "
                "CPU Affinity column)",
            )
    elif layout == "npu_id":
        ambiguous = _ambiguous_card(topology)
        if ambiguous is not None:
            return (
                "DeviceInfo.resolve_logic_id ('npu-smi info' rows through 'npu-smi info -m')",
                "RuntimeError: Failed to resolve chip_logic_id because the process table "
                "does not contain chip_id and NPU %s has %d mapped chips." % ambiguous,
            )
    status = _errors_of(topology, STATUS_SOURCE)
    if any("no Cpus_allowed_list" in msg for msg in status):
        return (
            "DeviceInfo.parse_allowed_cpus (/proc/self/status)",
            "RuntimeError: Can not found specific 'Cpus_allowed_list' in the '/proc/self/status' file.",
        )
    for msg in _errors_of(topology, LSCPU_E_SOURCE):
        if "no NUMA node" in msg:
            return ("CpuAlloc.build_cpu_node_map (lscpu -e=CPU,NODE)", "RuntimeError: " + va.NO_NUMA_NODE)
        return ("CpuAlloc.build_cpu_node_map (lscpu -e=CPU,NODE)", "ValueError: a row is not two integers (%s)" % msg)
    return None


def _ambiguous_card(topology):
    """``(card, chips)`` of the first card with a process whose ``-m`` map has several chips,
    where the process table names cards only (each of its chips then lists the process)."""
    chips = topology.get("npu_map") or {}
    cards = sorted(
        set(n.get("npu_id") for n in topology.get("npus") or [] if isinstance(n, dict) and n.get("processes")), key=str
    )
    for card in cards:
        mapped = chips.get(str(card)) or {}
        if len(mapped) > 1:
            return card, len(mapped)
    return None


def _rank_npus(rules, members, visible, running, order=None):
    """``[(rank, npu or None, own npu)]``: the NPU each local rank binds, and its own device.
    Without instances and without a visible list the workers are the running ones, in order:
    a release that binds ``ASCEND_RT_VISIBLE_DEVICES[rank]`` binds NPU ``rank`` then (released
    code: a running subset 2,3 without the variable fails with KeyError 0 and 1).
    ``order``: the instance's devices in rank order under ``--device-ids`` (local rank r runs on
    ``order[r]``, and the 0.26+ releases bind ``device_id_to_physical_device_id(r)``, which is
    that device: vllm_ascend/worker/worker.py _init_device, 0.26.0rc1-0.30.0rc2)."""
    if order is not None:
        count = len(order)
        if rules["rank_npu"] == "visible":
            npus = list(order)
        else:
            npus = running[:count] + [None] * (count - len(running))
        return list(zip(range(count), npus, list(order)))
    count = len(members) if members is not None else len(running)
    if visible:
        owns = visible[:count] + [None] * (count - len(visible))
    elif members is None and visible is None:
        owns = list(running)
    else:
        owns = list(members) if members is not None else list(range(count))
    if rules["rank_npu"] == "visible":
        npus = owns if visible else list(range(count))
    else:
        npus = running[:count] + [None] * (count - len(running))
    return list(zip(range(count), npus, owns))


def without_npu_smi(plan, requested, insts, release):
    """The prediction on a host without npu-smi (no NPU in the facts): every release fails in
    ``DeviceInfo`` before any pool; one ``error`` rank per NPU asked for (``npus`` or the
    instances'), none when none was."""
    stage, message = NO_NPU_SMI
    plan["skipped"] = True
    plan["reason"] = (FAIL_PREFIX % release["version"]) + "%s fails: %s" % (stage, message)
    plan["warnings"].append(plan["reason"])
    groups = [(name, list(members)) for name, members in insts] if insts else [(None, list(requested or []))]
    ranks = [
        {
            "rank": rank,
            "npu": None,
            "outcome": "error",
            "reason": "%s: %s" % (stage, message),
            "instance": name,
            "own_npu": npu,
        }
        for name, members in groups
        for rank, npu in enumerate(members)
    ]
    plan["vllm_ascend"] = _block(release, ranks)
    plan["warnings"].extend(release["warnings"])
    return plan


def _block(release, ranks):
    return {
        "version": release["version"],
        "source": release["source"],
        "group": release["group"],
        "migration": release["rules"]["migration"],
        "warnings": list(release["warnings"]),
        "ranks": ranks,
    }


def predict(
    plan, topology, requested, insts, busy, affinity, node_cpus, allowed, dtype, cpu, all_logic, release, audit=False
):
    """Fill ``plan`` (mode, skipped, reason, log, warnings, uvb, ``vllm_ascend``); returns
    ``(pools {npu: pool}, cluster_roles, reserve_irq, cpu_node)`` of every NPU the release
    builds a pool for (the first instance's where two build one). ``audit``: the NPUs are the
    workers the facts show (no ``npus`` asked for), so without a visible list in the facts
    they run without one; else they are taken as launched with it (the wrapper exports it)."""
    failure = release_failure(release, topology, dtype)
    env_facts = (topology.get("visible_devices") or {}).get("ASCEND_RT_VISIBLE_DEVICES")
    orders = dict((inst[0], getattr(inst, "order", None)) for inst in insts or ())
    if insts:
        groups = [(name, list(members), ",".join(str(n) for n in members)) for name, members in insts]
        seen = set(busy) if busy else set(n for _name, members, _e in groups for n in members)
    else:
        groups = [(None, None, env_facts)]
        seen = None
    ranks = []
    if failure is not None:
        stage, message = failure
        plan["skipped"] = True
        plan["reason"] = (FAIL_PREFIX % release["version"]) + "%s fails: %s" % (stage, message)
        plan["warnings"].append(plan["reason"])
        for name, members, _env in groups:
            for rank in range(len(members) if members is not None else len(requested)):
                ranks.append(
                    {
                        "rank": rank,
                        "npu": None,
                        "outcome": "error",
                        "reason": "%s: %s" % (stage, message),
                        "instance": name,
                        "own_npu": (orders.get(name) or members)[rank] if members is not None else None,
                    }
                )
        plan["vllm_ascend"] = _block(release, ranks)
        plan["warnings"].extend(release["warnings"])
        return {}, False, True, None
    cpu_node = nodemap.NodeMap(node_cpus)
    arch = topology.get("arch")
    is_arm = va.arm_check(arch)[0]
    pools, cluster, reserve_irq = {}, False, True
    for index, (name, members, env) in enumerate(groups):
        visible = va.visible_devices(env)
        if name is not None:
            running = sorted(seen & set(visible))
        else:
            running = va.running_npus(requested, env) if is_arm else list(requested)
            dropped = sorted(set(requested) - set(running))
            if dropped:
                plan["warnings"].append(
                    "NPU(s) %s are outside ASCEND_RT_VISIBLE_DEVICES=%s: "
                    "vllm-ascend plans no pool for them" % (dropped, env)
                )
        # without instances: a plan for ``npus`` is launched with ASCEND_RT_VISIBLE_DEVICES=
        # <running> (the wrapper exports it); an audit of the workers the facts show keeps the
        # facts' visible list, or none (each rank then binds by the release's own rule)
        rank_npus = _rank_npus(
            release["rules"],
            members,
            visible if visible is not None or name is not None else (None if audit else running),
            running,
            orders.get(name),
        )
        if is_arm and not running:
            for rank, _npu, own in rank_npus:
                ranks.append(
                    {
                        "rank": rank,
                        "npu": None,
                        "outcome": "error",
                        "reason": "DeviceInfo.get_running_npus: RuntimeError: " + va.NO_RUNNING_NPU,
                        "instance": name,
                        "own_npu": own,
                    }
                )
            continue
        result = va.plan_vllm_ascend(
            arch,
            dtype,
            allowed,
            node_cpus,
            all_logic,
            running,
            affinity,
            cpu.get("threads_per_core"),
            env,
            cpu_node,
            release["rules"],
            release["texts"],
            [(rank, npu) for rank, npu, _own in rank_npus],
        )
        if index == 0 or plan["mode"] is None:
            plan["mode"] = result["mode"]
            plan["skipped"] = result["skipped"]
            plan["reason"] = result["reason"]
            if result["uvb"] is not None:
                plan["uvb"] = result["uvb"]
        plan["log"].extend(result["log"])
        for warning in result["warnings"]:
            if warning not in plan["warnings"]:
                plan["warnings"].append(warning)
        cluster, reserve_irq = result["cluster_roles"], result["reserve_irq"]
        for npu, pool in result["pools"].items():
            pools.setdefault(npu, pool)
        built = result["pools"]
        if not result["skipped"] and all(npu in built for _r, npu, _o in rank_npus):
            # every rank binds (the usual host)
            ranks.extend(
                [
                    {"rank": rank, "npu": npu, "outcome": "bound", "reason": None, "instance": name, "own_npu": own}
                    for rank, npu, own in rank_npus
                ]
            )
            continue
        for rank, npu, own in rank_npus:
            if result["skipped"]:
                entry = {
                    "rank": rank,
                    "npu": None,
                    "outcome": "skipped",
                    "reason": result["reason"],
                    "instance": name,
                    "own_npu": own,
                }
            elif npu is not None and npu in built:
                entry = {"rank": rank, "npu": npu, "outcome": "bound", "reason": None, "instance": name, "own_npu": own}
            else:
                entry = {
                    "rank": rank,
                    "npu": None,
                    "reason": va.bind_failure(rank, npu, built),
                    "outcome": "error" if npu is None else "skipped",
                    "instance": name,
                    "own_npu": own,
                }
            ranks.append(entry)
    plan["vllm_ascend"] = _block(release, ranks)
    plan["warnings"].extend(release["warnings"])
    return pools, cluster, reserve_irq, cpu_node
