# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two files an IRQ plan writes, as text and data (``apply/irq`` finds the IRQs and writes
``/proc/irq``; ``npu_irq_affinity`` writes these through ``apply/fileops``):

- ``render_irqbalance_config``: irqbalance's environment file with ``--banirq=N`` for the
  pinned IRQs in ``IRQBALANCE_ARGS`` (other lines and the user's options kept) and, when asked,
  ``IRQBALANCE_BANNED_CPULIST`` for the worker CPUs;
- ``state_document`` / ``merge_state``: the IRQ state file the reconciler and
  ``vllm_binding_facts`` read - every pinned IRQ, its device and CPUs - merged with the rows
  other instances' runs recorded.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import IrqError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import irqbalance_conf

BAN_MARKER = irqbalance_conf.BAN_MARKER
_SAFE_ARG_RE = re.compile(r"^[A-Za-z0-9_.,:=/@+-]+\Z")
_BANIRQ_RE = re.compile(r"^--banirq=([0-9]{1,10})\Z")


def state_document(targets):
    """The IRQ state file the reconciler reads: every pinned IRQ, its device id and CPUs."""
    rows = []
    for target in targets:
        device = re.match(r"^(?:NPU|GPU)(\d+)", target["device"])
        rows.append(
            {
                "irq": target["irq"],
                "device": int(device.group(1)) if device else None,
                "label": target["device"],
                "role": target["role"],
                "cpus": cpulist.format(target["cpus"]),
            }
        )
    return {"schema": 1, "irqs": sorted(rows, key=lambda r: r["irq"])}


MAX_STATE_BYTES = 4 << 20  # the state file of a host with thousands of pinned IRQs is < 1 MB


def merge_state(document, current, npus):
    """``document`` (the ``state_document`` of a run limited to the NPUs ``npus``) plus the
    IRQs the state file already records for other devices (``current``: its text, or None),
    so one instance's run keeps what other instances' runs recorded. ``(document, problem)``:
    ``problem`` says why ``current`` could not be kept (not a state file: it is replaced)."""
    if current is None or npus is None:
        return document, None
    try:
        rows = json.loads(current).get("irqs") if len(current) <= MAX_STATE_BYTES else None
    except (ValueError, RecursionError, AttributeError):
        rows = None
    if not isinstance(rows, list) or not all(
        isinstance(r, dict) and isinstance(r.get("irq"), int) and not isinstance(r.get("irq"), bool) for r in rows
    ):
        return document, "not an IRQ state file (replaced by this run's IRQs)"
    new_irqs = set(r["irq"] for r in document["irqs"])
    new_labels = set(r["label"] for r in document["irqs"])
    kept = [
        r
        for r in rows
        if r["irq"] not in new_irqs and r.get("label") not in new_labels and r.get("device") not in set(npus)
    ]
    return dict(document, irqs=sorted(kept + document["irqs"], key=lambda r: r["irq"])), None


CPU_MARKER = "# npuops.fleet: irqbalance keeps other IRQs off the worker CPUs"


def _ban_cpus(lines, cpus, source, warnings):
    """Set ``IRQBALANCE_BANNED_CPULIST`` to ``cpus`` (the worker CPUs) in ``lines``, unless the
    user set a banned-CPU value of their own (kept, with a warning) or a non-empty
    ``IRQBALANCE_BANNED_CPUS`` mask, which irqbalance reads first, would hide it."""
    try:
        parsed = irqbalance_conf.parse_config("\n".join(lines), source)
    except ParseError as err:
        raise IrqError(str(err))
    ours_at = [i for i, line in enumerate(lines) if line == CPU_MARKER]
    assign = re.compile(r"^\s*(?:export\s+)?IRQBALANCE_BANNED_CPULIST=")
    cpulist_at = [i for i, line in enumerate(lines) if assign.match(line)]
    if parsed["banned_cpus_from"] == "IRQBALANCE_BANNED_CPUS":
        warnings.append(
            "%s: IRQBALANCE_BANNED_CPUS is set; irqbalance reads it before "
            "IRQBALANCE_BANNED_CPULIST, so the worker CPUs %s are not banned" % (source, cpus)
        )
        return lines
    mine = [i for i in cpulist_at if i - 1 in ours_at]
    if cpulist_at and not mine:
        warnings.append(
            "%s: IRQBALANCE_BANNED_CPULIST is the user's own and is kept; irqbalance may "
            "place other IRQs on the worker CPUs %s" % (source, cpus)
        )
        return lines
    line = "IRQBALANCE_BANNED_CPULIST=%s" % cpus
    if mine:
        lines[mine[-1]] = line
    else:
        lines.extend([CPU_MARKER, line])
    return lines


def render_irqbalance_config(
    current, irqs, keep_previous=False, source="irqbalance config", banned_cpus=None, warnings=None
):
    """``current`` config text with ``--banirq=N`` for ``irqs`` in ``IRQBALANCE_ARGS`` and, with
    ``banned_cpus`` (the plan's worker CPUs), ``IRQBALANCE_BANNED_CPULIST`` so irqbalance places
    no other IRQ on them.

    IRQs we banned before (listed on our marker line) and not wanted now are unbanned unless
    ``keep_previous``; the user's own options and every other line are kept.
    """
    lines = (current or "").splitlines()
    try:
        parsed = irqbalance_conf.parse_config(current or "", source, cpus=False)
    except ParseError as err:
        raise IrqError(str(err))
    previous = set(parsed["ours"])
    marker_at, args_at, tokens = parsed["marker_line"], parsed["args_line"], parsed["args"]
    wanted = set(irqs) | (previous if keep_previous else set())
    kept = []
    for token in tokens:
        match = _BANIRQ_RE.match(token)
        if match and int(match.group(1)) in previous - wanted:
            continue
        kept.append(token)
    present = set(irqbalance_conf.banned_irqs(kept))  # any form: --banirq=N, -i N, ...
    kept.extend("--banirq=%d" % irq for irq in sorted(wanted - present))
    for token in kept:
        if not _SAFE_ARG_RE.match(token):
            raise IrqError(
                "%s: IRQBALANCE_ARGS option %r cannot be rewritten safely; "
                "edit it by hand or use irqbalance: ignore" % (source, token)
            )
    marker = "%s %s" % (BAN_MARKER, " ".join(str(i) for i in sorted(wanted)))
    args_line = 'IRQBALANCE_ARGS="%s"' % " ".join(kept)
    if args_at is None:
        if marker_at is not None:
            lines[marker_at] = marker
            lines.insert(marker_at + 1, args_line)
        else:
            lines.extend([marker, args_line])
    else:
        lines[args_at] = args_line
        if marker_at is None:
            lines.insert(args_at, marker)
        else:
            lines[marker_at] = marker
    if banned_cpus:
        lines = _ban_cpus(lines, banned_cpus, source, warnings if warnings is not None else [])
    return "\n".join(lines) + "\n"
