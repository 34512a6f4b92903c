# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which NUMA node or CPU affinity row belongs to a device, where the tools print it in a form
that is not one id per device: a Grace GPU's NUMA Affinity node list (the CPU node, then the
GPU's memory-only nodes) and PCIe-card ``npu-smi info -t topo`` rows labelled by card id.

Called by ``model/topology.gather``; reads the host only through the HostIO it is given.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.model import cpu_facts

_PCI = "/sys/bus/pci/devices/"


def gpu_node(io, gpu, bus, cpu_nodes, numa_off, warnings):
    """(NUMA node, memory-only nodes) of one GPU. A single NUMA Affinity id stands (sysfs only
    where it is N/A); a Grace node list (``0,3-9,11-17``) gives the listed node that has CPUs,
    the others are the GPU's memory nodes, and the PCI device's sysfs ``numa_node`` is the
    truth where it disagrees."""
    listed = gpu.get("numa_nodes") or []
    node = gpu.get("numa_node")
    if len(listed) < 2:
        if node is None and bus and not numa_off:
            node = cpu_facts.int_file(io, _PCI + bus + "/numa_node")
        return node, None
    with_cpus = [n for n in listed if cpu_nodes.get(str(n))]
    if with_cpus:
        node = with_cpus[0]
    if len(with_cpus) > 1:
        warnings.append(
            "%s: NUMA Affinity %s lists %d nodes with CPUs: node %d taken"
            % (gpu["name"], ",".join(map(str, listed)), len(with_cpus), node)
        )
    if bus:
        sysfs = cpu_facts.int_file(io, _PCI + bus + "/numa_node")
        if isinstance(sysfs, int) and sysfs >= 0 and sysfs != node:
            warnings.append(
                "%s: NUMA Affinity %s names node %s, the PCI device's numa_node "
                "is %d: node %d taken" % (gpu["name"], ",".join(map(str, listed)), node, sysfs, sysfs)
            )
            node = sysfs
    # the memory-only nodes: those without CPUs (all but the first where no CPU map is known)
    memory = [n for n in listed if n != node and (not cpu_nodes or not cpu_nodes.get(str(n)))]
    return node, memory


def topo_by_npu_id(topo, chips, by_key, map_rows, warnings):
    """True when ``npu-smi info -t topo`` labels its rows by NPU (card) id, not by logic id:
    PCIe cards (Atlas 300) print one row per card, ``NPU2`` ``NPU5``..., whose numbers are not
    logic ids, or are but name fewer rows than there are chips. Their CPU Affinity then goes to
    every chip of that card, the logic ids taken from ``npu-smi info -m``."""
    keys = set((topo or {}).get("affinity") or {})
    if not keys or not map_rows:
        return False
    pairs = [(str(c["npu_id"]), by_key.get((c["npu_id"], c["chip_id"]))) for c in chips]
    logic_ids = set(str(row["logic_id"]) for _npu, row in pairs if row)
    npu_ids = set(npu for npu, _row in pairs)
    if npu_ids == logic_ids or not keys <= npu_ids:
        return False
    if keys <= logic_ids and not (keys == npu_ids and len(npu_ids) < len(logic_ids)):
        return False
    warnings.append(
        "npu-smi info -t topo labels its rows by NPU id (%s), not by logic id: "
        "each chip takes its card's row, the logic ids from npu-smi info -m"
        % ",".join("NPU%s" % k for k in sorted(keys, key=int))
    )
    return True
