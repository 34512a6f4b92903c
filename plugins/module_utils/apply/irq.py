# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""IRQ affinity from a plan: find each planned NPU's IRQs, write the planned CPUs, keep
irqbalance from undoing it.

- ``plan_targets``: the IRQs to set. NPU: ``sq_send_trigger_irq`` -> the plan's first IRQ
  CPU, ``cq_update_irq`` -> the second (both found by name: the facts' ``npus[].irqs`` or the
  PCI device's ``msi_irqs`` + ``/proc/interrupts``; never "CQ = SQ + 1"). GPU hosts: the paired
  NIC's ``mlx5_comp*`` IRQs round-robin over the GPU pool. Ascend 950 has no IRQ roles. An IRQ
  several devices resolve to is kept by the first (``unique_targets``) with a warning.
- ``apply_targets``: read every ``/proc/irq/N/smp_affinity_list`` first, check that every
  needed write is possible, then write only those that differ (rolled back on a failure).
- ``irqbalance_config_path``: which irqbalance environment file the unit reads (its text is
  ``render/irqbalance``'s).

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import stat

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types
from ansible_collections.npuops.fleet.plugins.module_utils.parse import interrupts, irqbalance_conf
from ansible_collections.npuops.fleet.plugins.module_utils.errors import IrqError, ParseError, UnsafePathError
from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import LiveHostIO
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema, vendors
from ansible_collections.npuops.fleet.plugins.module_utils.plan import irq_pins

# RHEL/openEuler/Kylin read the first, Debian/Ubuntu the second (EnvironmentFile of the unit).
IRQBALANCE_CONFIGS = irqbalance_conf.CONFIG_PATHS
_BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\Z")
_DIGITS_RE = re.compile(r"^[0-9]+\Z")


def irq_number(value, source):
    """An IRQ number as int; anything but a plain non-negative integer is refused."""
    if isinstance(value, bool):
        raise IrqError("%s: %r is not an IRQ number" % (source, value))
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and _DIGITS_RE.match(value):
        return int(value)
    raise IrqError("%s: %r is not an IRQ number" % (source, value))


def _is_gpu(plan):
    return vendors.of_plan(plan).is_gpu


class _Interrupts(object):
    """Lazy, cached reads of /proc/interrupts and msi_irqs under host_root."""

    def __init__(self, io):
        self.io = io
        self._table = None

    def table(self):
        if self._table is None:
            text = self.io.read_text("/proc/interrupts")
            if text is None:
                raise IrqError("/proc/interrupts: cannot be read under host_root")
            try:
                self._table = interrupts.parse_interrupts(text)
            except ParseError as err:
                raise IrqError(str(err))
        return self._table

    def msi(self, bus_id):
        names = self.io.listdir("/sys/bus/pci/devices/%s/msi_irqs" % bus_id)
        if names is None:
            return None
        bad = [n for n in names if not _DIGITS_RE.match(n)]
        if bad:
            raise IrqError(
                "/sys/bus/pci/devices/%s/msi_irqs: unexpected entry %r (only IRQ "
                "numbers are accepted)" % (bus_id, bad[0])
            )
        return interrupts.msi_irq_numbers(names)


def _facts_by_logic(topology, key="npus", id_key="logic_id"):
    out = {}
    for entry in (topology or {}).get(key) or []:
        if isinstance(entry, dict) and entry.get(id_key) is not None:
            out[str(entry[id_key])] = entry
    return out


def _check_bdf(bus_id, label):
    bus = (bus_id or "").lower()
    if not _BDF_RE.match(bus):
        raise IrqError("%s: PCI bus id %r is not of the form 0000:c1:00.0" % (label, bus_id))
    return bus


def _npu_targets(plan, topology, reader, wanted, warnings):
    facts = _facts_by_logic(topology)
    targets = []
    for key in wanted:
        entry = plan["npus"][key]
        label = "NPU%s" % key
        try:
            cpus = cpulist.parse_ordered(str(entry.get("irq") or ""), "plan npus %s irq" % key)
        except ParseError as err:
            raise IrqError(str(err))
        if not cpus:
            warnings.append("%s: the plan has no IRQ CPUs; its IRQs are left alone" % label)
            continue
        fact = facts.get(key) or {}
        sq, cqs = irq_pins.npu_known_irqs(fact.get("irqs"))
        if sq is None and not cqs:
            if not fact:
                warnings.append("%s: not in the topology facts; its IRQs cannot be found" % label)
                continue
            if not fact.get("bus_id"):
                warnings.append("%s: no PCI bus id in the facts; its IRQs cannot be found" % label)
                continue
            bus = _check_bdf(fact["bus_id"], label)
            msi = reader.msi(bus)
            if msi is None:
                warnings.append("%s: /sys/bus/pci/devices/%s/msi_irqs not found" % (label, bus))
                continue
            found = interrupts.npu_irqs(reader.table(), msi)
            sq, cqs = found["sq"], found["cq_all"]
        # as vllm-ascend: the send queue on the first IRQ CPU, completions on the second - all of
        # the device's completion vectors, not only the first
        if sq is None:
            warnings.append("%s: %s not found" % (label, interrupts.SQ_NAME))
        if not cqs:
            warnings.append("%s: %s not found" % (label, interrupts.CQ_NAME))
        for irq, role, cpu in irq_pins.npu_roles(sq, cqs, cpus):
            targets.append(
                {"irq": irq_number(irq, "%s %s IRQ" % (label, role[:2])), "device": label, "role": role, "cpus": [cpu]}
            )
    return targets


def _nic_targets(plan, topology, reader, wanted, warnings):
    nics = dict((n.get("name"), n) for n in (topology or {}).get("nics") or [] if isinstance(n, dict))
    targets = []
    crowded = []
    # a NIC shared by several GPUs follows the lowest GPU's pool
    for nic, key in irq_pins.nic_claims(plan, wanted):
        label = "GPU%s/%s" % (key, nic)
        try:
            pool = cpulist.parse(str(plan["gpus"][key].get("pool") or ""), "plan gpus %s" % key)
        except ParseError as err:
            raise IrqError(str(err))
        fact = nics.get(nic)
        if not pool or not fact or not fact.get("bus_id"):
            warnings.append("%s: no pool or no NIC bus id; NIC IRQs left alone" % label)
            continue
        spare = _spare_on_node(plan, fact.get("numa_node"))
        if spare:
            pool = spare  # completions on CPUs no worker runs on
        else:
            crowded.append(label)
        bus = _check_bdf(fact["bus_id"], label)
        irqs = interrupts.nic_irqs(reader.table(), bus, reader.msi(bus))
        if not irqs:
            warnings.append("%s: no mlx5_comp IRQs found" % label)
        for index, irq in enumerate(irqs):
            targets.append(
                {
                    "irq": irq_number(irq, label),
                    "device": label,
                    "role": "comp%d" % index,
                    "cpus": [pool[index % len(pool)]],
                }
            )
    if crowded:
        # one warning per host, saying whether to act and what to change
        warnings.append(
            "%s: no spare CPU on the NIC's NUMA node, so its completion IRQs are pinned inside the "
            "GPU's pool (every CPU of the node went to GPU pools and frontends). Nothing to do "
            "unless RDMA traffic is heavy (NCCL over InfiniBand/RoCE) and the GPU workers jitter; "
            "then leave CPUs spare for the IRQs: cap each instance's frontend with "
            "npuops_frontend_cpus (npu_cpu_plan frontend_cpus; the rest goes to cpu_budget.spare) "
            "and run site.yml again" % ", ".join(crowded)
        )
    return targets


def _spare_on_node(plan, node):
    """The plan's spare CPUs (``cpu_budget.spare``: nobody's) on NUMA node ``node``."""
    if not isinstance(node, int) or isinstance(node, bool):
        return []
    try:
        spare = set(cpulist.parse(str((plan.get("cpu_budget") or {}).get("spare") or ""), "plan cpu_budget spare"))
        on_node = set(
            cpulist.parse(str((plan.get("numa_nodes") or {}).get(str(node)) or ""), "plan numa_nodes %s" % node)
        )
    except ParseError as err:
        raise IrqError(str(err))
    return sorted(spare & on_node)


def plan_targets(plan, topology=None, host_root="/", npus=None, io=None, scope="all"):
    """The IRQs to set: ``(targets, skipped, warnings)``.

    ``targets``: ``[{irq, device, role, cpus}]``; ``skipped``: a reason when the plan has no
    IRQ step (Ascend 950, skipped plan) or, with ``scope`` ``instances``, no instance uses a
    device (``irq_pins.NO_INSTANCE_NOTE``), else None. ``npus`` limits the planned devices;
    without it ``scope`` chooses them (``irq_pins.scoped_devices``).
    """
    if not isinstance(plan, dict):
        raise IrqError("plan: must be a dict (the npu_cpu_plan result)")
    schema.check_plan(plan)
    if topology is not None:
        schema.check_topology(topology)
    if plan.get("skipped"):
        return [], "plan skipped: %s" % (plan.get("reason"),), []
    if not irq_pins.has_irq_step(plan):
        kind = device_types.row(plan.get("device_type"))
        return (
            [],
            "IRQ binding skipped on %s (no IRQ roles in its plan)" % ("Ascend 950" if kind.irq_roles else kind.label),
            [],
        )
    table_key = "gpus" if _is_gpu(plan) else "npus"
    table = plan.get(table_key) or {}
    if npus is None:
        wanted = irq_pins.scoped_devices(plan, scope)
        if not wanted and scope == "instances":
            return [], irq_pins.NO_INSTANCE_NOTE, []
    else:
        wanted = [str(int(n)) for n in npus]
        missing = [n for n in wanted if n not in table]
        if missing:
            raise IrqError(
                "npus: %s not in the plan (planned: %s)" % (", ".join(missing), ", ".join(sorted(table, key=int)))
            )
        # By logic id (GPU index): which device keeps a shared IRQ must not depend on the
        # order the caller listed them in.
        wanted = sorted(set(wanted), key=int)
    reader = _Interrupts(io or LiveHostIO(host_root))
    warnings = []
    if table_key == "gpus":
        targets = _nic_targets(plan, topology, reader, wanted, warnings)
    else:
        targets = _npu_targets(plan, topology, reader, wanted, warnings)
    return unique_targets(targets, warnings), None, warnings


def unique_targets(targets, warnings):
    """One target per IRQ: the first device (lowest logic id) keeps an IRQ that several
    planned devices resolve to (two chips behind one PCI function, e.g. a 300I Duo card whose
    npu-smi reports one Bus-Id for both 310P chips). Each dropped claim adds a warning naming
    the IRQ and both devices; the same device naming an IRQ twice is kept once."""
    kept, owner = [], {}
    for target in targets:
        first = owner.get(target["irq"])
        if first is None:
            owner[target["irq"]] = target
            kept.append(target)
            continue
        if first["device"] == target["device"] and first["cpus"] == target["cpus"]:
            continue
        warnings.append(
            "IRQ %d is shared by %s (%s) and %s (%s): it stays with %s on CPU %s; %s's IRQ CPU "
            "%s is not used for it"
            % (
                target["irq"],
                first["device"],
                first["role"],
                target["device"],
                target["role"],
                first["device"],
                cpulist.format(first["cpus"]),
                target["device"],
                cpulist.format(target["cpus"]),
            )
        )
    return kept


def _affinity_path(irq):
    return "/proc/irq/%d/smp_affinity_list" % irq


def apply_targets(targets, host_root="/", check_mode=False):
    """Set each target IRQ's ``smp_affinity_list`` where it differs.

    Returns ``[{irq, device, role, before, after, changed}]``. Every file is read and every
    needed write checked before the first write; a failed write rolls back the ones done.
    Files are read and written through directory fds (``fileops``): no symlink is followed
    and a file that is not a regular single-link file is refused (a hard link under a sandbox
    ``host_root`` could lead outside it).
    """
    results = []
    for target in targets:
        irq = irq_number(target["irq"], "IRQ")
        path = _affinity_path(irq)
        try:
            current = fileops.read_host_text(host_root, path)
        except (IOError, OSError, UnsafePathError) as err:
            raise IrqError("IRQ %d: %s cannot be read (%s)" % (irq, path, err))
        if current is None:
            raise IrqError("IRQ %d (%s %s): %s does not exist" % (irq, target["device"], target["role"], path))
        try:
            before = cpulist.parse(current.strip(), path)
        except ParseError as err:
            raise IrqError(str(err))
        after = sorted(set(target["cpus"]))
        results.append(
            {
                "irq": irq,
                "device": target["device"],
                "role": target["role"],
                "before": cpulist.format(before),
                "after": cpulist.format(after),
                "changed": before != after,
                "_path": path,
            }
        )
    todo = [r for r in results if r["changed"]]
    blocked = [r for r in todo if not fileops.writable(host_root, r["_path"])]
    if blocked and not check_mode:
        raise IrqError(
            "/proc/irq is not writable (%s): nothing was written. In a container, "
            "run privileged or set IRQ affinity on the host." % ", ".join(_affinity_path(r["irq"]) for r in blocked)
        )
    if not check_mode:
        done = []
        for result in todo:
            try:
                _write(host_root, result["_path"], result["after"])
            except (IOError, OSError, UnsafePathError) as err:
                for undo in reversed(done):
                    try:
                        _write(host_root, undo["_path"], undo["before"])
                    except (IOError, OSError, UnsafePathError):
                        pass
                raise IrqError(
                    "IRQ %d: writing %s to %s failed (%s); the %d IRQs already "
                    "written were restored"
                    % (result["irq"], result["after"], _affinity_path(result["irq"]), err, len(done))
                )
            done.append(result)
    for result in results:
        del result["_path"]
    return results


def _write(host_root, path, value):
    # procfs files cannot be replaced by rename: written in place, one value per open
    fileops.write_in_place(host_root, path, value + "\n")


def blocked_irqs(targets, host_root="/"):
    """IRQs whose affinity file is not writable (for a check-mode warning)."""
    out = []
    for target in targets:
        path = _affinity_path(target["irq"])
        if fileops.stat_host(host_root, path) is not None and not fileops.writable(host_root, path):
            out.append(target["irq"])
    return out


def irqbalance_config_path(host_root="/", unit_files=None):
    """The irqbalance environment file to edit: the one the unit reads last (a later
    EnvironmentFile overrides an earlier one; the one under /etc when the list ends with a
    packaged default), as systemd reports it in ``unit_files``; without that (a sandbox, no
    systemd) the existing distribution file, else the distribution's default."""
    files = [f for f in (unit_files or []) if not f.startswith("/usr/")] or list(unit_files or [])
    if files:
        return files[-1]
    for path in IRQBALANCE_CONFIGS:
        st = fileops.stat_host(host_root, path)
        if st is not None and stat.S_ISREG(st.st_mode):
            return path
    st = fileops.stat_host(host_root, "/etc/sysconfig")
    if st is not None and stat.S_ISDIR(st.st_mode):
        return IRQBALANCE_CONFIGS[0]
    return IRQBALANCE_CONFIGS[1]
