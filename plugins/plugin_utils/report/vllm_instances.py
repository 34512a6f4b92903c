# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's "which vLLM, which binding" per instance: the host's vLLM as the facts read it
(``vllm``), each instance's binding (``npuops_vllm_instances``), the NUMA flag the wrapper gives
it for that version (``render/launch_flags.numa_flags``: the rule the wrapper follows, not a
copy) and, with ``--device-ids`` in its command, the devices in rank order."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors, vllm_flags
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch_flags
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import as_dict, as_list, int_or_none


def _command(inst):
    command = as_list(inst.get("command"))
    return [str(a) for a in command][:4096] if command else ["vllm"]


def summarize_instances(entry, facts):
    """``{version, source, instances: [{name, binding, vllm, numa, rank_devices}]}`` or None
    when the host has no instance in its configuration and no vLLM was read. An instance's
    stated ``vllm_version`` wins over the host's vLLM, as in the wrapper."""
    facts = as_dict(facts)
    config = as_dict(as_dict(entry).get("config"))
    found = as_dict(facts.get("vllm"))
    vllm = {"version": str(found["version"]), "source": str(found.get("source"))} if found.get("version") else None
    vendor = str(facts.get("vendor"))
    row = vendors.get(vendor)
    rows = []
    for inst in as_list(config.get("instances")):
        inst = as_dict(inst)
        command = _command(inst)
        binding = inst.get("binding") or config.get("binding") or "host"
        view = {"vendor": vendor, "host_cpus": [], "name": str(inst.get("name"))}
        stated = inst.get("vllm_version")
        own = {"version": str(stated), "source": "npuops_vllm_instances vllm_version"} if stated else vllm
        try:
            numa = launch_flags.numa_flags(view, command, binding, own, [])["numa"]
        except NpuopsError as err:
            numa = "refused by the wrapper: %s" % err
        devices = [i for i in (int_or_none(n) for n in as_list(inst.get("npus"))) if i is not None]
        order = None
        if row is not None:
            try:
                order = vllm_flags.device_order(command, devices, row.visibility[0])
            except ValueError as err:
                order = "refused: %s" % err
            if order == devices:
                order = None
        rows.append(
            OrderedDict(
                [
                    ("name", str(inst.get("name"))),
                    ("binding", str(binding)),
                    ("vllm", own["version"] if own else None),
                    ("numa", numa),
                    ("rank_devices", order),
                ]
            )
        )
    if not rows and vllm is None:
        return None
    return OrderedDict(
        [
            ("word", row.device_word if row is not None else "device"),
            ("version", vllm["version"] if vllm else None),
            ("source", vllm["source"] if vllm else None),
            ("instances", rows),
        ]
    )


def instances_markdown(shapes, md_table, hosts_cell):
    """The Markdown section: per host shape the vLLM read and, per instance, its binding, the
    NUMA binding vLLM itself applies and the devices in rank order under --device-ids."""
    rows = []
    for shape, host in shapes:
        found = host.get("vllm_instances")
        if not found:
            continue
        version = found["version"] or "unknown"
        for inst in found["instances"] or [
            {"name": "-", "vllm": "-", "binding": "-", "numa": "-", "rank_devices": None}
        ]:
            order = inst["rank_devices"]
            rows.append(
                [
                    hosts_cell(shape),
                    version,
                    found["source"] or "not found",
                    inst["name"],
                    inst.get("vllm") or "unknown",
                    inst["binding"],
                    inst["numa"],
                    order
                    if isinstance(order, str)
                    else ", ".join("rank %d: %s%d" % (r, found.get("word") or "", d) for r, d in enumerate(order or []))
                    or "as listed",
                ]
            )
    if not rows:
        return []
    return ["", "## vLLM per instance: version and NUMA binding", ""] + md_table(
        [
            "hosts",
            "host's vLLM",
            "read from",
            "instance",
            "its vLLM",
            "binding",
            "vLLM's own NUMA binding",
            "devices by rank (--device-ids)",
        ],
        rows,
    )
