# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/interrupts`` and PCI ``msi_irqs`` -> the IRQ numbers of NPUs and RDMA NICs.

Pure functions (text / lists in, plain data out). An Ascend NPU's interrupts are named
``sq_send_trigger_irq`` (task dispatch) and ``cq_update_irq`` (completions, up to 16 per
NPU); which NPU owns an IRQ is known only from its PCI device's ``msi_irqs/`` directory.
vllm-ascend assumes CQ = SQ + 1; here both are found by name. Mellanox NICs name their
completion vectors ``mlx5_comp<N>@pci:<bus id>``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

SQ_NAME = "sq_send_trigger_irq"
CQ_NAME = "cq_update_irq"
NIC_COMP_PREFIX = "mlx5_comp"

_ROW = re.compile(r"^\s*([0-9]+):(.*)\Z")
_IRQ = re.compile(r"^[0-9]{1,10}\Z")  # an IRQ number (ASCII digits, bounded for int())
_COUNT = re.compile(r"^[0-9]{1,20}\Z")  # a per-CPU count (64 bits at most)


def parse_interrupts(text, source="/proc/interrupts"):
    """Numeric IRQ rows of ``/proc/interrupts``.

    Returns ``{irq: {"name": last word of the row (the action name), "desc": the text after
    the per-CPU counts, "total": sum of the counts}}``. Rows such as ``NMI:``/``LOC:`` are
    ignored. A row cut short (fewer counts than CPUs) is kept. Raises ParseError when the
    ``CPU0 ...`` header is missing or a numeric row holds something other than counts.
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    lines = text.splitlines()
    header = None
    for index, line in enumerate(lines):
        if line.strip():
            header = index
            break
    if header is None:
        raise ParseError(source, "empty output")
    cpus = lines[header].split()
    if not cpus or any(not re.match(r"^CPU[0-9]+\Z", c) for c in cpus):
        raise ParseError(source, "first line is not a 'CPU0 CPU1 ...' header: %r" % lines[header][:60])
    ncpu = len(cpus)
    result = {}
    for number, line in enumerate(lines[header + 1 :], header + 2):
        match = _ROW.match(line)
        if not match:
            continue
        if not _IRQ.match(match.group(1)):
            raise ParseError(source, "line %d: IRQ number %s... is out of range" % (number, match.group(1)[:12]))
        irq = int(match.group(1))
        tokens = match.group(2).split()
        counts = []
        while tokens and len(counts) < ncpu and _COUNT.match(tokens[0]):
            counts.append(int(tokens.pop(0)))
        if not counts and tokens:
            raise ParseError(source, "line %d: IRQ %d has no per-CPU counts" % (number, irq))
        desc = " ".join(tokens)
        result[irq] = {"name": tokens[-1] if tokens else "", "desc": desc, "total": sum(counts)}
    return result


def msi_irq_numbers(names):
    """IRQ numbers from the entry names of ``/sys/bus/pci/devices/<bdf>/msi_irqs/``,
    sorted numerically; non-numeric names are ignored and None gives []."""
    return sorted(int(n) for n in (names or ()) if isinstance(n, str) and _IRQ.match(n))


def irqs_named(interrupts, name):
    """Sorted IRQs whose action name is ``name`` (or starts with ``name@``)."""
    return sorted(irq for irq, row in interrupts.items() if row["name"] == name or row["name"].startswith(name + "@"))


def npu_irqs(interrupts, msi_irqs):
    """The IRQs of one NPU chip, by name, among its PCI device's MSI IRQs.

    ``interrupts``: ``parse_interrupts()`` output; ``msi_irqs``: IRQ numbers of the chip's
    PCI device (``msi_irq_numbers()``). Returns ``{"sq": first sq_send_trigger_irq or None,
    "cq": first cq_update_irq or None, "cq_all": every cq_update_irq}``.
    """
    own = set(msi_irqs or ())
    sq = [irq for irq in irqs_named(interrupts, SQ_NAME) if irq in own]
    cq = [irq for irq in irqs_named(interrupts, CQ_NAME) if irq in own]
    return {"sq": sq[0] if sq else None, "cq": cq[0] if cq else None, "cq_all": cq}


def nic_irqs(interrupts, bus_id=None, msi_irqs=None):
    """Completion-vector IRQs (``mlx5_comp*``) of one RDMA NIC, sorted.

    A row belongs to the NIC when its name carries ``@pci:<bus_id>`` or, failing that, when
    its number is one of the NIC's ``msi_irqs``.
    """
    own = set(msi_irqs or ())
    bus = (bus_id or "").lower()
    found = []
    for irq, row in interrupts.items():
        name = row["name"]
        if not name.startswith(NIC_COMP_PREFIX):
            continue
        at = name.split("@pci:", 1)
        if bus and len(at) == 2:
            if at[1].lower() == bus:
                found.append(irq)
        elif irq in own:
            found.append(irq)
    return sorted(found)
