# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What site.yml applies on a host, as the audit reads it from the host's variables.

The audit plans every device of a host; site.yml plans only the devices of the host's
instances (or ``npuops_npus``), pins and bans the IRQs of those instances use
(``npuops_irq_devices: instances``, none on a host without instances) or of every planned device
(``all``), as ``npuops_irqbalance`` says. A finding
that ignored this would tell the operator to set what is already set, so the findings consult
``summarize_config``: which devices serve no instance, which instances keep vllm-ascend's
in-process binding (``binding: vllm``) - its prediction is in effect for those only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import (
    CONFIGURED,
    as_dict,
    as_list,
    int_or_none,
)

_LABEL = re.compile(r"^(?:NPU|GPU)(\d+)")


def _device_ids(facts):
    if facts.get("vendor") == "nvidia":
        return sorted(
            set(i for i in (int_or_none(as_dict(g).get("index")) for g in as_list(facts.get("gpus"))) if i is not None)
        )
    return sorted(
        set(i for i in (int_or_none(as_dict(n).get("logic_id")) for n in as_list(facts.get("npus"))) if i is not None)
    )


def summarize_config(entry, facts):
    """``{known, irqbalance, irq_enabled, irq_devices, instances: [{name, npus, binding}],
    planned, idle, irq_idle, host_bound, vllm_bound, word}`` from the audit input's ``config``
    (the role variables). ``idle``: devices no instance uses (on a host with instances);
    ``irq_idle``: devices whose IRQs site.yml leaves to irqbalance."""
    raw = as_dict(as_dict(entry).get("config"))
    word = "GPU" if facts.get("vendor") == "nvidia" else "NPU"
    out = OrderedDict(
        [
            ("known", bool(raw)),
            ("irqbalance", raw.get("irqbalance")),
            ("irq_enabled", raw.get("irq_enabled", True) is not False),
            ("irq_devices", raw.get("irq_devices") or "instances"),
            ("instances", []),
            ("planned", []),
            ("idle", []),
            ("irq_idle", []),
            ("host_bound", []),
            ("vllm_bound", []),
            ("word", word),
            ("basis", CONFIGURED),
        ]
    )
    if not raw:
        return out
    default_binding = raw.get("binding") or "host"
    served = set()
    for inst in as_list(raw.get("instances")):
        inst = as_dict(inst)
        npus = [i for i in (int_or_none(n) for n in as_list(inst.get("npus"))) if i is not None]
        binding = inst.get("binding") or default_binding
        out["instances"].append(OrderedDict([("name", str(inst.get("name"))), ("npus", npus), ("binding", binding)]))
        served.update(npus)
        out["vllm_bound" if binding == "vllm" else "host_bound"].append(str(inst.get("name")))
    devices = _device_ids(facts)
    restricted = [i for i in (int_or_none(n) for n in as_list(raw.get("npus"))) if i is not None]
    planned = set(restricted) if restricted else (served if out["instances"] else set(devices))
    out["planned"] = sorted(planned & set(devices))
    out["idle"] = [d for d in devices if d not in served] if out["instances"] else []
    if out["irq_devices"] == "all":
        out["irq_idle"] = [d for d in devices if d not in planned]
    else:
        out["irq_idle"] = [d for d in devices if d not in served]
    return out


def device_of(label):
    """The device id of a report label (``NPU4``, ``GPU0/mlx5_0``), None when it names none."""
    match = _LABEL.match(str(label))
    return int(match.group(1)) if match else None


def ids_text(word, ids):
    return ", ".join("%s%d" % (word, i) for i in ids)


def vllm_in_effect(config, devices):
    """(in effect, not in effect) of ``devices`` (report labels) under vllm-ascend's own
    binding: in effect only for devices of an instance with ``binding: vllm`` (all of them when
    the host's configuration is not known)."""
    if not config["known"]:
        return list(devices), []
    vllm_npus = set()
    for inst in config["instances"]:
        if inst["binding"] == "vllm":
            vllm_npus.update(inst["npus"])
    inside = [d for d in devices if device_of(d) in vllm_npus]
    return inside, [d for d in devices if d not in inside]


def not_in_effect_note(config):
    """``not in effect: qwen-a runs with host binding; NPU4..7 serve no instance``."""
    parts = []
    if config["host_bound"]:
        parts.append(
            "%s run%s with host binding (npuops.fleet's binder pins the strict plan; "
            "the wrapper turns vllm-ascend's binding off)"
            % (", ".join(config["host_bound"]), "s" if len(config["host_bound"]) == 1 else "")
        )
    if config["idle"]:
        parts.append(
            "%s serve%s no instance"
            % (ids_text(config["word"], config["idle"]), "s" if len(config["idle"]) == 1 else "")
        )
    return "not in effect: " + "; ".join(parts) if parts else ""


def irqbalance_finding(config, bans):
    """(severity, title, evidence prefix, fix) of the irqbalance finding once what site.yml
    applies is known, or None to keep the generic finding."""
    if not config["known"] or bans["state"] != "unbanned":
        return None
    idle = set(config["irq_idle"])
    idle_irqs = [e for e in bans["unbanned"] if device_of(e["device"]) in idle]
    busy_irqs = [e for e in bans["unbanned"] if device_of(e["device"]) not in idle]
    word = config["word"]
    where = bans["config"] or "irqbalance's config"
    setting = config["irqbalance"] or "ban"
    if not config["irq_enabled"]:
        return (
            "info",
            "irqbalance balances the device IRQs (IRQ pinning is off)",
            busy_irqs + idle_irqs,
            "npuops_irq_enabled is false, so site.yml leaves IRQs to irqbalance; set it true to pin and ban them",
        )
    if not busy_irqs and not bans["unknown"] and not config["instances"]:
        return (
            "info",
            "irqbalance balances the device IRQs (no vLLM instance on this host)",
            idle_irqs,
            "nothing to do while no instance runs here: site.yml pins and bans only the IRQs of "
            "the %ss instances use (npuops_irq_devices: instances); to pin every %s's IRQs now, "
            "set npuops_irq_devices: all and run site.yml" % (word, word),
        )
    if not busy_irqs and not bans["unknown"]:
        return (
            "info",
            "irqbalance balances the IRQs of %ss in no instance" % word,
            idle_irqs,
            "nothing to do while %s serve no instance: site.yml pins and bans the IRQs of the "
            "%ss instances use only; to pin them too, add them to an instance in "
            "npuops_vllm_instances and run site.yml" % (ids_text(word, sorted(idle)), word),
        )
    if setting == "ban":
        return (
            "warning",
            "irqbalance will undo IRQ affinity",
            busy_irqs,
            "npuops_irqbalance is already ban, but these IRQs are not banned in %s: run "
            "site.yml on this host (--tags irq) to write the bans; if they are written, "
            "irqbalance reads another config file" % where,
        )
    if setting == "stop":
        return (
            "warning",
            "irqbalance will undo IRQ affinity",
            busy_irqs,
            "npuops_irqbalance is stop, yet irqbalance is active: run site.yml --tags irq "
            "(it stops and disables it), then find what starts it again",
        )
    return (
        "warning",
        "irqbalance will undo IRQ affinity",
        busy_irqs,
        "set npuops_irqbalance: ban (now %s): site.yml then bans the planned IRQs in irqbalance's config" % setting,
    )
