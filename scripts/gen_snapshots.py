#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build tests/snapshots/<host>/ from the real fixtures in tests/fixtures/real/.

Run from the repository root: ``.venv/bin/python scripts/gen_snapshots.py``. Deterministic:
rerunning rewrites the same files. Where a fixture lacks data (sysfs, /proc, bus ids of
GPUs/NICs, some npu-smi outputs) consistent values are synthesised; tests/snapshots/README.md
lists what is real and what is synthesised for each host.
"""

import os
import re
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
LINK = os.path.join(REPO, ".cache", "collections", "ansible_collections", "npuops", "fleet")
if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), LINK)

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.parse import cpu_topology

FIXTURES = os.path.join(REPO, "tests", "fixtures", "real")
OUT = os.path.join(REPO, "tests", "snapshots")
CAPTURED = "2026-01-15T00:00:00Z"
TOOLS_ALL = {
    "npu-smi": "/usr/local/bin/npu-smi",
    "taskset": "/usr/bin/taskset",
    "systemctl": "/usr/bin/systemctl",
    "migratepages": "/usr/bin/migratepages",
    "irqbalance": "/usr/sbin/irqbalance",
}


def fixture(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        text = handle.read()
    return text.split("\n", 1)[1] if text.startswith("# Source:") else text


def ok(stdout):
    return {"rc": 0, "stdout": stdout}


MISSING = {"missing": True}


class Host(object):
    """Accumulates the files and commands of one synthetic-but-consistent host."""

    def __init__(self, name, arch, nodes, online, allowed=None, tools=None, irqbalance=True, comment=None):
        self.name = name
        self.comment = comment
        self.arch = arch
        self.files = {}
        self.dirs = set()
        self.links = {}
        self.env = {}
        self.commands = {
            "npu-smi info": MISSING,
            "npu-smi info -m": MISSING,
            "npu-smi info -t topo": MISSING,
            "nvidia-smi topo -m": MISSING,
            "nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader": MISSING,
            "systemctl is-active irqbalance": ok("active\n") if irqbalance else {"rc": 3, "stdout": "inactive\n"},
        }
        self.tools = dict(tools if tools is not None else dict((k, v) for k, v in TOOLS_ALL.items() if k != "npu-smi"))
        self.online = online
        self.ncpu = max(cpulist.parse(online)) + 1
        self.files["/sys/devices/system/cpu/online"] = online + "\n"
        self.files["/proc/self/status"] = (
            "Name:\tpython3\nState:\tR (running)\nPid:\t4242\n"
            "Cpus_allowed:\t%s\nCpus_allowed_list:\t%s\nMems_allowed_list:\t%s\n"
            % (
                cpulist.to_mask(cpulist.parse(allowed or online)),
                allowed or online,
                cpulist.format(int(n) for n in nodes) if nodes else "0",
            )
        )
        for node, cpus in nodes.items():
            self.files["/sys/devices/system/node/node%s/cpulist" % node] = cpus + "\n"
        # generic kernel files, synthesised on every host: no isolated / nohz_full CPUs
        self.files["/sys/devices/system/cpu/isolated"] = "\n"
        self.files["/sys/devices/system/cpu/nohz_full"] = "\n"
        self.nodes = nodes
        self.irq_rows = []
        self.next_irq = 1024

    def cpu_topology(self, distance=None, packages=None, siblings=None):
        """sysfs that only a known machine can give: node distance rows (``distance``: the
        ``numactl -H`` text of a table), ``physical_package_id`` of each node's first and last
        CPU (``packages``: {node: id}, -1 for firmware that names none), and
        ``thread_siblings_list`` of the first CPU of every core (``siblings``: a function
        cpu -> its sibling CPUs)."""
        if distance is not None:
            table = cpu_topology.parse_numactl_distances(distance)
            for node in self.nodes:
                row = table[str(node)]
                self.files["/sys/devices/system/node/node%s/distance" % node] = (
                    " ".join(str(row[k]) for k in sorted(row, key=int)) + "\n"
                )
        if packages is not None:
            for node, cpus in self.nodes.items():
                ids = cpulist.parse(cpus)
                for cpu in ids[:1] + ids[-1:]:  # none on a memory-only node
                    self.files["/sys/devices/system/cpu/cpu%d/topology/physical_package_id" % cpu] = (
                        "%d\n" % packages[int(node)]
                    )
        if siblings is not None:
            seen = set()
            for cpu in cpulist.parse(self.online):
                if cpu in seen:
                    continue
                group = sorted(siblings(cpu))
                seen.update(group)
                self.files["/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list" % cpu] = (
                    cpulist.format(group) + "\n"
                )

    def lscpu_e(self, nodes):
        rows = []
        for node, cpus in nodes.items():
            rows.extend((cpu, int(node)) for cpu in cpulist.parse(cpus))
        self.commands["lscpu -e=CPU,NODE"] = ok("CPU NODE\n" + "".join("%3d %4d\n" % r for r in sorted(rows)))

    def pci(self, bus, numa_node, vendor, device, irq_names=()):
        base = "/sys/bus/pci/devices/" + bus
        self.files[base + "/numa_node"] = "%d\n" % numa_node
        self.files[base + "/vendor"] = vendor + "\n"
        self.files[base + "/device"] = device + "\n"
        irqs = []
        for name in irq_names:
            irq = self.next_irq
            self.next_irq += 1
            irqs.append(irq)
            self.files[base + "/msi_irqs/%d" % irq] = ""
            self.irq_rows.append((irq, name))
        return irqs

    def finish(self):
        if self.irq_rows:
            # Counts are single-space separated (the kernel pads to 10 columns) to keep
            # snapshots of 640-CPU hosts small; the parser reads both.
            header = " ".join("CPU%d" % c for c in range(self.ncpu))
            lines = ["           " + header]
            zeros = " ".join(["0"] * self.ncpu)
            for irq, name in sorted(self.irq_rows):
                chip = "ITS-MSI" if self.arch == "aarch64" else "PCI-MSI"
                lines.append("%4d: %s   %s %d Edge      %s" % (irq, zeros, chip, irq * 64, name))
                self.files["/proc/irq/%d/smp_affinity_list" % irq] = self.online + "\n"
            lines.append(" NMI: " + zeros + "   Non-maskable interrupts")
            self.files["/proc/interrupts"] = "\n".join(lines) + "\n"
        target = os.path.join(OUT, self.name)
        if os.path.isdir(target):
            shutil.rmtree(target)
        snapshot.save(
            target,
            hostname=self.name,
            arch=self.arch,
            captured_at=CAPTURED,
            env=self.env,
            commands=self.commands,
            links=self.links,
            tools=self.tools,
            files=self.files,
            dirs=self.dirs,
            comment=self.comment,
        )


def npu_irq_names():
    # One SQ, a mailbox in between (so CQ != SQ + 1), then CQs.
    return ["sq_send_trigger_irq", "trs-mbox0", "cq_update_irq", "cq_update_irq"]


A2_LSCPU = "ascend/kunpeng920-192c-8numa_lscpu_via-collect-env_vllm-ascend-198.txt"
# Real node-distance tables. No public A2 capture of its own table exists: the 4-socket Kunpeng
# table (same 4 x 2-die layout) is PAIRED with the A2 hosts, and the EPYC NPS4 table with the
# DGX-A100-class host (its own table was not published); the snapshots say so.
KUNPENG_4P_DISTANCES = "cpu/kunpeng-4p-8numa_node-distances_opengauss-tpcc-case.txt"
EPYC_NPS4_DISTANCES = "cpu/epyc-2p-nps4-8numa_node-distances_lkml-2019.txt"
PLI_NUMACTL = "cpu/hgx-h100-princeton-pli_2x-xeon8468_ht-off_interleaved-numa_numactl-H.txt"


def no_smt(cpu):
    return [cpu]


def kunpeng_4p(packages=True):
    """Kunpeng 920 4-socket, 8 nodes of 24 CPUs, no SMT: the paired distance table; packages
    node // 2 (two dies per socket, the table's 11-apart pairs), or -1 where the host's lscpu
    prints ``Socket(s): -`` (firmware that names no package)."""
    return {
        "distance": fixture(KUNPENG_4P_DISTANCES),
        "packages": dict((n, n // 2 if packages else -1) for n in range(8)),
        "siblings": no_smt,
    }


A2_TOPO = "ascend/a2-910b3x8_npu-smi-info-t-topo.txt"


def kunpeng_lscpu_4numa():
    """The real 192-CPU Kunpeng 920 lscpu (vllm-ascend#198) with its NUMA lines rewritten
    to the 4 x 48 layout of the vllm-ascend design document."""
    text = fixture(A2_LSCPU)
    lines = [l for l in text.splitlines() if not re.match(r"^NUMA node\d+ CPU", l)]
    out = []
    for line in lines:
        if line.startswith("NUMA node(s):"):
            out.append("NUMA node(s):                       4")
            for n in range(4):
                out.append("NUMA node%d CPU(s):                  %d-%d" % (n, 48 * n, 48 * n + 47))
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def a2_map(name, count=8):
    rows = [
        "        NPU ID                         Chip ID                        Chip Logic ID                  Chip Name                     "
    ]
    for n in range(count):
        rows.append("        %-31d%-31d%-31d%s" % (n, 0, n, name))
        rows.append("        %-31d%-31d%-31s%s" % (n, 1, "-", "Mcu"))
    return "\n".join(rows) + "\n"


def a2_topo(affinity):
    """The real A2 HCCS topo matrix with its CPU Affinity column replaced by ``affinity``."""
    text = fixture(A2_TOPO)
    out = []
    for line in text.splitlines():
        match = re.match(r"^(NPU(\d+)\s.*\s)(\S+)$", line)
        if match:
            line = match.group(1) + affinity[int(match.group(2))]
        out.append(line)
    return "\n".join(out) + "\n"


def ascend_host(
    name,
    info,
    mapped,
    topo,
    lscpu,
    nodes,
    chip_nodes,
    device,
    arch="aarch64",
    tools=None,
    irqbalance=True,
    online=None,
    topo_result=None,
    comment=None,
    cpu=None,
):
    from ansible_collections.npuops.fleet.plugins.module_utils.parse import npu_smi

    online = online or cpulist.format(c for v in nodes.values() for c in cpulist.parse(v))
    host = Host(
        name,
        arch,
        nodes,
        online,
        tools=tools if tools is not None else TOOLS_ALL,
        irqbalance=irqbalance,
        comment=comment,
    )
    host.commands["npu-smi info"] = ok(info)
    host.commands["npu-smi info -m"] = ok(mapped)
    host.commands["npu-smi info -t topo"] = topo_result or ok(topo)
    host.commands["lscpu"] = ok(lscpu)
    host.lscpu_e(nodes)
    host.cpu_topology(**(cpu or {}))
    seen = set()
    for index, chip in enumerate(npu_smi.parse_info(info)["chips"]):
        bus = chip["bus_id"]
        if bus is None:
            continue  # Bus-Id NA (the 950 table of some drivers): no PCI device to write
        if bus in seen:
            # 300I Duo: npu-smi prints one Bus-Id for both 310P chips of a card (public
            # captures; docs/research/ascend_device_plugin.md 4.2), so both chips find the
            # same msi_irqs and IRQs; npu_irq_affinity keeps them for the first chip.
            continue
        seen.add(bus)
        host.pci(bus, chip_nodes[index], "0x19e5", device, npu_irq_names())
    host.finish()


A2_REAL_COMMENT = """a2-910b3x8: Atlas A2, 8x 910B3, Kunpeng 920 192 CPUs, 8 NUMA nodes x 24.
Real outputs, verbatim: npu-smi info 23.0.7 (vllm-ascend#198), npu-smi info -t topo
(ms-swift docs: NPU0/1 144-167, NPU2/3 96-119, NPU4/5 0-23, NPU6/7 48-71) and lscpu
(vllm-ascend#198: node0 0-23 ... node7 168-191).
Synthesised to agree with them: npu-smi info -m, sysfs node cpulists, PCI numa_node
(6,6,4,4,0,0,2,2), msi_irqs, /proc/interrupts (scripts/gen_snapshots.py).
NODE DISTANCES ARE PAIRED, NOT CAPTURED: no public A2 capture of its distance table exists;
node<N>/distance holds the real 4-socket Kunpeng table (openGauss TPCC case: dies of a socket 11
apart, other sockets 24-32) of the same 4 x 2-die layout. physical_package_id is -1 (the lscpu
prints "Socket(s): -"), thread_siblings_list one CPU each (Thread(s) per core: 1)."""

A2I_COMMENT = """a2i-910b4x8: Atlas 800I A2, 8x 910B4, Kunpeng 920 5250 (4 sockets x 48 cores, 8 NUMA nodes).
Real: npu-smi info 25.0.rc1.1, -m, lscpu. Synthesised: topo, sysfs, PCI, IRQs.
NODE DISTANCES ARE PAIRED, NOT CAPTURED: the real 4-socket Kunpeng table (openGauss TPCC case)
of the same 4 x 2-die layout; physical_package_id node // 2 (4 sockets, two dies each)."""

# Xeon Platinum 8462Y+ (the mi300x host's lscpu): 2 sockets, a node each, SMT siblings N and N+64
XEON_8462Y = {"packages": {0: 0, 1: 1}, "siblings": lambda cpu: [cpu % 64, cpu % 64 + 64]}

A2_DESIGNDOC_COMMENT = """a2-designdoc: NOT A CAPTURE. The A2 layout of the vllm-ascend CPU binding design
document: 4 NUMA nodes x 48 CPUs, CPU Affinity NPU0/2 144-167, NPU1/3 0-23,
NPU4/6 96-119, NPU5/7 48-71. On it vllm-ascend's allocator gives NPU0 and NPU1
overlapping pools on 0-23 (the audit's overlap case).
Built from the real a2-910b3x8 outputs with the topo CPU Affinity column and the lscpu
NUMA lines rewritten to the document's values; sysfs, PCI numa_node (3,0,3,0,2,1,2,1)
and IRQs synthesised to agree (scripts/gen_snapshots.py)."""


def build_ascend():
    a2_info = fixture("ascend/a2-910b3x8_npu-smi-info_v23.0.7.txt")
    kp8 = dict((str(n), "%d-%d" % (24 * n, 24 * n + 23)) for n in range(8))
    # The real machine, as it printed: topo and lscpu verbatim.
    ascend_host(
        "a2-910b3x8",
        a2_info,
        a2_map("Ascend 910B3"),
        fixture(A2_TOPO),
        fixture(A2_LSCPU),
        kp8,
        [6, 6, 4, 4, 0, 0, 2, 2],
        "0xd802",
        comment=A2_REAL_COMMENT,
        cpu=kunpeng_4p(packages=False),
    )

    # The vllm-ascend design document's layout (not a capture): 4 x 48, NPU pairs 0/2, 1/3...
    kp4 = dict((str(n), "%d-%d" % (48 * n, 48 * n + 47)) for n in range(4))
    aff = {0: "144-167", 2: "144-167", 1: "0-23", 3: "0-23", 4: "96-119", 6: "96-119", 5: "48-71", 7: "48-71"}
    ascend_host(
        "a2-designdoc",
        a2_info,
        a2_map("Ascend 910B3"),
        a2_topo(aff),
        kunpeng_lscpu_4numa(),
        kp4,
        [3, 0, 3, 0, 2, 1, 2, 1],
        "0xd802",
        comment=A2_DESIGNDOC_COMMENT,
    )

    aff8 = {0: "144-167", 1: "144-167", 2: "96-119", 3: "96-119", 4: "0-23", 5: "0-23", 6: "48-71", 7: "48-71"}
    ascend_host(
        "a2i-910b4x8",
        fixture("ascend/atlas800i-a2-910b4x8_npu-smi-info_v25.0.rc1.1.txt"),
        fixture("ascend/atlas800i-a2-910b4x8_npu-smi-info-m.txt"),
        a2_topo(aff8),
        fixture("ascend/atlas800i-a2-kunpeng920-5250-192c_lscpu.txt"),
        kp8,
        [6, 6, 4, 4, 0, 0, 2, 2],
        "0xd802",
        tools=dict((k, v) for k, v in TOOLS_ALL.items() if k != "migratepages"),
        comment=A2I_COMMENT,
        cpu=kunpeng_4p(),
    )

    kp640 = dict((str(n), "%d-%d" % (80 * n, 80 * n + 79)) for n in range(8))
    a3_map = ["NPU ID  Chip ID  Chip Logic ID  Chip Phy-ID  Chip Name"]
    for npu in range(8):
        for chip in range(2):
            a3_map.append("%-8d%-9d%-15d%-13d%s" % (npu, chip, npu * 2 + chip, npu * 2 + chip, "Ascend910"))
        a3_map.append("%-8d%-9d%-15s%-13s%s" % (npu, 2, "-", "-", "Mcu"))
    labels = ["Phy-ID%d" % n for n in range(16)]
    a3_topo = ["\t" + "\t".join(labels)]
    for row in range(16):
        cells = ["X" if row == col else ("SIO" if row // 2 == col // 2 else "HCCS_SW") for col in range(16)]
        a3_topo.append(labels[row] + "\t" + "\t".join(cells))
    ascend_host(
        "a3-16die",
        fixture("ascend/a3-16die_npu-smi-info_v25.3.rc1.txt"),
        "\n".join(a3_map) + "\n",
        "\n".join(a3_topo) + "\n",
        fixture("ascend/kunpeng920-7285z-640c-8numa_lscpu_via-collect-env_vllm-ascend-5825.txt"),
        kp640,
        [n // 2 for n in range(16)],
        "0xd803",
        # 4 sockets x 2 nodes (lscpu); the SMT numbering and the distances are unknown
        cpu={"packages": dict((n, n // 2) for n in range(8))},
    )

    build_950()
    build_310p()
    build_910a()


def a2_table(version, rows, processes_header, process_rows, hbm=True, chip_header="Chip"):
    """An npu-smi info table in the documented A2 layout (for hosts without a capture)."""
    sep = "+===========================+===============+====================================================+"
    out = [
        "+------------------------------------------------------------------------------------------------+",
        "| npu-smi %-24s Version: %-38s|" % (version, version),
        "+---------------------------+---------------+----------------------------------------------------+",
        "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
        "| %-25s | Bus-Id        | AICore(%%)   Memory-Usage(MB)  %-19s|"
        % (chip_header, "HBM-Usage(MB)" if hbm else ""),
        sep,
    ]
    for npu, name, chip, bus, mem, power in rows:
        out.append("| %-5d %-19s | OK            | %-11s 40                0    / 0             |" % (npu, name, power))
        out.append("| %-25s | %-13s | 0           %-50s|" % (chip, bus, mem))
        out.append(sep)
    out.append("+---------------------------+---------------+----------------------------------------------------+")
    out.append(processes_header)
    out.append(sep)
    out.extend(process_rows)
    out.append(sep)
    return "\n".join(out) + "\n"


def build_950():
    buses = ["0000:%02x:00.0" % b for b in (0x01, 0x02, 0x41, 0x42, 0x81, 0x82, 0xC1, 0xC2)]
    rows = [(n, "Ascend950DT", "0", buses[n], "0    / 0          3100 / 147456", "120.5") for n in range(8)]
    procs = [
        "| 0                          | 2018733       | VLLMWorker_TP            | 30212                   |",
        "| 1                          | 2018734       | VLLMWorker_TP            | 30212                   |",
    ]
    procs += [
        "| No running processes found in NPU %d                                                            |" % n
        for n in range(2, 8)
    ]
    info = a2_table(
        "25.5.0",
        rows,
        "| NPU ID                    | Process id    | Process name             | Process memory(MB)       |",
        procs,
    )
    mapped = "NPU ID  Slot ID  Chip ID  Chip Phy-ID  Chip Name\n" + "".join(
        "%d %d 0 %d Ascend950DT\n" % (n, n, n) for n in range(8)
    )
    labels = ["NPU%d" % n for n in range(8)] + ["NIC0"]
    topo = ["       " + "       ".join(labels)]
    for row in labels:
        topo.append(
            row
            + "       "
            + "       ".join("X" if row == col else ("NA" if "NIC" in row + col else "UB") for col in labels)
        )
    nodes = dict((str(n), "%d-%d" % (96 * n, 96 * n + 95)) for n in range(4))
    lscpu = (
        "Architecture:                       aarch64\nCPU(s):                             384\n"
        "On-line CPU(s) list:                0-383\nVendor ID:                          HiSilicon\n"
        "Model name:                         Kunpeng-920\nThread(s) per core:                 1\n"
        "Core(s) per socket:                 96\nSocket(s):                          4\n"
        "NUMA node(s):                       4\n"
        + "".join("NUMA node%d CPU(s):                  %s\n" % (n, nodes[str(n)]) for n in range(4))
    )
    ascend_host("a5-950", info, mapped, "\n".join(topo) + "\n", lscpu, nodes, [0, 0, 1, 1, 2, 2, 3, 3], "0xd806")

    # the real 950DT table of npu-smi 25.6.rc1: NPU ID column, Bus-Id NA, NPUs 0,1,6,7
    ids = (0, 1, 6, 7)
    mapped = "NPU ID  Slot ID  Chip ID  Chip Phy-ID  Chip Name\n" + "".join(
        "%d %d 0 %d Ascend950DT\n" % (n, n, n) for n in ids
    )
    labels = ["NPU%d" % n for n in ids]
    topo = ["       " + "       ".join(labels)]
    for row in labels:
        topo.append(row + "       " + "       ".join("X" if row == col else "UB" for col in labels))
    ascend_host(
        "a5-950dt-nabus",
        fixture(A5_NA_INFO),
        mapped,
        "\n".join(topo) + "\n",
        lscpu,
        nodes,
        [],
        "0xd806",
        comment=A5_NA_COMMENT,
    )


A5_NA_INFO = "ascend/a5-950dt_npu-smi-info_v25.6.rc1_npu-id-column_NA-bus_non-contiguous-ids_parser-test.txt"
A5_NA_COMMENT = """a5-950dt-nabus: Ascend 950DT, 4 NPUs (ids 0,1,6,7). Real: npu-smi info of npu-smi
25.6.rc1 as another project's parser test holds it (a separate NPU ID column, Bus-Id NA, NPU
Util(%)). Synthesised: -m (950 layout, logic id = NPU id), a UB topo matrix without CPU
Affinity, the a5-950 host's 384-CPU 4-node lscpu; no PCI device (no bus id to name one)."""


def build_310p():
    lscpu = fixture("cpu/mi300x-host_2x-xeon8462y+_interleaved-numa_128cpu_lscpu.txt")
    nodes = {"0": cpulist.format(range(0, 128, 2)), "1": cpulist.format(range(1, 128, 2))}
    buses = ["0000:3b:00.0", "0000:3b:00.0", "0000:86:00.0", "0000:86:00.0"]
    rows = [
        (n // 2, "310P3", "%d     %d" % (n % 2, n), buses[n], "0    / 0          %-31s" % "1720 / 44280", "NA")
        for n in range(4)
    ]
    info = a2_table(
        "23.0.rc3",
        rows,
        "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |",
        [
            "| No running processes found in NPU %d                                                            |" % n
            for n in range(2)
        ],
        hbm=False,
        chip_header="Chip  Device",
    )
    # No HBM column on 310P: the memory pair is DDR.
    info = info.replace("0    / 0          1720 / 44280", "1720 / 44280               ")
    mapped = (
        "NPU ID  Chip ID  Chip Logic ID  Chip Name\n"
        + "".join("%d %d %d Ascend 310P3\n" % (n // 2, n % 2, n) for n in range(4))
        + "0 2 - Mcu\n1 2 - Mcu\n"
    )
    topo = (
        "\t   NPU0       NPU1       NPU2       NPU3       CPU Affinity\n"
        "NPU0       X          PIX        SYS        SYS        %s\n"
        "NPU1       PIX        X          SYS        SYS        %s\n"
        "NPU2       SYS        SYS        X          PIX        %s\n"
        "NPU3       SYS        SYS        PIX        X          %s\n" % (nodes["0"], nodes["0"], nodes["1"], nodes["1"])
    )
    ascend_host(
        "atlas300-310p",
        info,
        mapped,
        topo,
        lscpu,
        nodes,
        [0, 0, 1, 1],
        "0xd500",
        arch="x86_64",
        irqbalance=False,
        cpu=XEON_8462Y,
    )


def build_910a():
    nodes = dict((str(n), "%d-%d" % (24 * n, 24 * n + 23)) for n in range(8))
    order = [
        "0000:61:00.0",
        "0000:60:00.0",
        "0000:3e:00.0",
        "0000:3d:00.0",
        "0000:b1:00.0",
        "0000:b2:00.0",
        "0000:da:00.0",
        "0000:db:00.0",
    ]
    rows = [(n, "910A", "0", order[n], "0    / 0          %-31s" % "2621 / 32768", "70.2") for n in range(8)]
    info = a2_table(
        "23.0.5",
        rows,
        "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |",
        [
            "| No running processes found in NPU %d                                                            |" % n
            for n in range(8)
        ],
    )
    node_of = {
        "0000:61:00.0": 2,
        "0000:60:00.0": 2,
        "0000:3e:00.0": 1,
        "0000:3d:00.0": 1,
        "0000:b1:00.0": 5,
        "0000:b2:00.0": 5,
        "0000:da:00.0": 6,
        "0000:db:00.0": 6,
    }
    ascend_host(
        "a910a-9000",
        info,
        fixture("ascend/atlas800-9000-910a_npu-smi-info-m.txt"),
        "",
        fixture("ascend/atlas800i-a2-kunpeng920-5250-192c_lscpu.txt"),
        nodes,
        [node_of[b] for b in order],
        "0xd801",
        cpu=kunpeng_4p(),
        topo_result={"rc": 255, "stdout": "", "stderr": "This device does not support querying topo.\n"},
    )
    target = os.path.join(OUT, "a910a-9000")
    # Board outputs are real captures a planner or audit may query.
    _add_commands(
        target,
        {
            "npu-smi info -t board -i 0": fixture("ascend/atlas800-9000-910a_npu-smi-info-i0-t-board.txt"),
            "npu-smi info -t board -i 0 -c 0": fixture("ascend/atlas800-9000-910a_npu-smi-info-i0-c0-t-board.txt"),
        },
    )


def _add_commands(target, extra):
    data = snapshot.load(target)
    commands = dict(data["commands"])
    for key, text in extra.items():
        commands[key] = ok(text)
    files = snapshot.fs_files(target)  # host paths (on-disk names are escaped)
    shutil.rmtree(target)
    snapshot.save(
        target,
        hostname=data["hostname"],
        arch=data["arch"],
        captured_at=data["captured_at"],
        env=data["env"],
        commands=commands,
        links=data["links"],
        tools=data["tools"],
        files=files,
    )


def nvidia_host(
    name,
    topo_fixture,
    nodes,
    online,
    lscpu,
    gpu_buses,
    gpu_nodes,
    nics,
    allowed=None,
    tpc=2,
    cpu=None,
    comment=None,
    ports=None,
    arch="x86_64",
    gpu_device="0x20b0",
):
    host = Host(
        name,
        arch,
        nodes,
        online,
        allowed=allowed,
        tools=dict(TOOLS_ALL, **{"nvidia-smi": "/usr/bin/nvidia-smi"}),
        comment=comment,
    )
    host.cpu_topology(**(cpu or {}))
    del host.tools["npu-smi"]
    host.commands["nvidia-smi topo -m"] = ok(fixture(topo_fixture))
    host.commands["nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader"] = ok(
        "".join("%d, 0000%s\n" % (i, b.upper()) for i, b in enumerate(gpu_buses))
    )
    host.commands["lscpu"] = ok(lscpu)
    host.lscpu_e(nodes)
    for bus, node in zip(gpu_buses, gpu_nodes):
        host.pci(bus, node, "0x10de", gpu_device)
    for nic_name, bus, node, netdev in nics:
        host.pci(
            bus,
            node,
            "0x15b3",
            "0x1017",
            ["mlx5_async@pci:" + bus] + ["mlx5_comp%d@pci:%s" % (c, bus) for c in range(4)],
        )
        dev = "/sys/class/infiniband/%s/device" % nic_name
        host.links[dev] = "/sys/devices/pci0000:%s/%s" % (bus[5:7], bus)
        host.files[dev + "/numa_node"] = "%d\n" % node
        host.files[dev + "/net/%s/ifindex" % netdev] = "%d\n" % (10 + int(nic_name.split("_")[1]))
        if ports and nic_name in ports:
            state, rate, layer = ports[nic_name]
            port = "/sys/class/infiniband/%s/ports/1/" % nic_name
            host.files[port + "state"] = state + "\n"
            host.files[port + "rate"] = rate + "\n"
            host.files[port + "link_layer"] = layer + "\n"
    host.finish()


def synth_lscpu(cpus, tpc, sockets, model, nodes):
    return (
        "Architecture:        x86_64\nCPU(s):              %d\nOn-line CPU(s) list: 0-%d\n"
        "Thread(s) per core:  %d\nCore(s) per socket:  %d\nSocket(s):           %d\n"
        "NUMA node(s):        %d\nVendor ID:           GenuineIntel\nModel name:          %s\n"
        % (cpus, cpus - 1, tpc, cpus // tpc // sockets, sockets, len(nodes), model)
        + "".join("NUMA node%s CPU(s):   %s\n" % (k, v) for k, v in nodes.items())
    )


def build_nvidia():
    epyc = dict((str(n), "%d-%d,%d-%d" % (16 * n, 16 * n + 15, 128 + 16 * n, 143 + 16 * n)) for n in range(8))
    dgx_gpus = [
        "0000:07:00.0",
        "0000:0f:00.0",
        "0000:47:00.0",
        "0000:4e:00.0",
        "0000:87:00.0",
        "0000:90:00.0",
        "0000:b7:00.0",
        "0000:bd:00.0",
    ]
    nic_bus = [
        "0000:0c:00.0",
        "0000:0d:00.0",
        "0000:4b:00.0",
        "0000:4c:00.0",
        "0000:8b:00.0",
        "0000:8c:00.0",
        "0000:ba:00.0",
        "0000:bb:00.0",
        "0000:e1:00.0",
        "0000:e1:00.1",
    ]
    nic_nodes = [3, 3, 1, 1, 7, 7, 5, 5, 2, 2]
    nvidia_host(
        "dgx-a100",
        "nvidia/dgx-a100-class_8xA100-SXM_epyc7742-nps4_10nic_drv525_nvidia-smi-topo-m.txt",
        epyc,
        "0-255",
        fixture("cpu/dgx-a100-class_2x-epyc7742_nps4_256cpu_lscpu.txt"),
        dgx_gpus,
        [3, 3, 1, 1, 7, 7, 5, 5],
        [("mlx5_%d" % n, nic_bus[n], nic_nodes[n], "ibp%ds0" % (n + 12)) for n in range(10)],
        cpu={
            "distance": fixture(EPYC_NPS4_DISTANCES),
            "packages": dict((n, n // 4) for n in range(8)),
            "siblings": lambda cpu: [cpu % 128, cpu % 128 + 128],
        },
        comment=DGX_COMMENT,
        ports=DGX_PORTS,
    )

    one = {"0": "0-191"}
    h100_gpus = [
        "0000:18:00.0",
        "0000:2a:00.0",
        "0000:3a:00.0",
        "0000:5d:00.0",
        "0000:9a:00.0",
        "0000:ab:00.0",
        "0000:ba:00.0",
        "0000:db:00.0",
    ]
    h100_nics = ["0000:%02x:00.0" % b for b in (0x19, 0x2B, 0x3B, 0x4C, 0x4D, 0x5E, 0x9B, 0xAC, 0xBB, 0xCC, 0xCD, 0xDC)]
    nvidia_host(
        "h100-numaoff",
        "nvidia/h100-8gpu-12nic_numa-off_host-0007_nvidia-smi-topo-m.txt",
        one,
        "0-191",
        synth_lscpu(192, 2, 2, "Intel(R) Xeon(R) Platinum 8468", one),
        h100_gpus,
        [-1] * 8,
        [("mlx5_%d" % n, h100_nics[n], -1, "ibs%d" % n) for n in range(12)],
    )

    inter = {"0": cpulist.format(range(0, 96, 2)), "1": cpulist.format(range(1, 96, 2))}
    pli_nics = ["0000:1b:00.0", "0000:1b:00.1", "0000:5e:00.0", "0000:9c:00.0", "0000:9c:00.1", "0000:bc:00.0"]
    nvidia_host(
        "h100-cgroup",
        "nvidia/h100-8gpu-6nic_princeton-pli_cgroup-limited-affinity_drv545_nvidia-smi-topo-m.txt",
        inter,
        "0-95",
        fixture("cpu/hgx-h100-princeton-pli_2x-xeon8468_ht-off_interleaved-numa_96cpu_lscpu.txt"),
        [
            "0000:18:00.0",
            "0000:2a:00.0",
            "0000:3a:00.0",
            "0000:5d:00.0",
            "0000:9a:00.0",
            "0000:ab:00.0",
            "0000:ba:00.0",
            "0000:db:00.0",
        ],
        [0, 0, 0, 0, 1, 1, 1, 1],
        [("mlx5_%d" % n, pli_nics[n], [0, 0, 0, 1, 1, 1][n], "ib%d" % n) for n in range(6)],
        allowed="1",
        tpc=1,
        # its real numactl -H distances (10/21); HT off; a socket per node
        cpu={"distance": fixture(PLI_NUMACTL), "packages": {0: 0, 1: 1}, "siblings": no_smt},
    )

    pcie_nodes = {"0": "0-31,64-95", "1": "32-63,96-127"}
    nvidia_host(
        "pcie-8gpu",
        "nvidia/pcie-8gpu_no-nvlink_no-nic_odd-cpu-range_nvidia-smi-topo-m.txt",
        pcie_nodes,
        "0-127",
        synth_lscpu(128, 2, 2, "Intel(R) Xeon(R) Gold 6348", pcie_nodes),
        ["0000:%02x:00.0" % b for b in (0x1A, 0x1B, 0x3D, 0x3E, 0x9C, 0x9D, 0xBC, 0xBD)],
        [0, 0, 0, 0, 1, 1, 1, 1],
        [],
    )

    build_gb200()


GB200_COMMENT = """gb200-4gpu: one GB200 NVL4 compute tray: 4x GB200 (Blackwell) on two Grace CPUs of 72
cores (node0 0-71, node1 72-143), 34 NUMA nodes (2-33 memory-only: GPU HBM or empty).
Real: nvidia-smi topo -m (NUMA Affinity printed as a node list: the CPU node, then the GPU's
memory nodes), the Grace lscpu head (2 sockets x 72 cores). Synthesised: lscpu's NUMA lines
and the sysfs nodes (from the documented layout), GPU bus ids (domains 0008/0009/0018/0019),
GPU numa_node 0,0,1,1 (the CPU node of each), 8 ConnectX NICs (mlx5_0-3 on node 0, 4-7 on
node 1), their IRQs; socket per CPU node; no distance table."""


def build_gb200():
    nodes = dict((str(n), "") for n in range(34))
    nodes["0"], nodes["1"] = "0-71", "72-143"
    lscpu = fixture("cpu/gb200-tray_2x-grace-72c_PARTIAL_lscpu.txt") + (
        "NUMA node(s):                         34\n"
        + "".join("NUMA node%d CPU(s):%s%s\n" % (n, " " * (22 - len(str(n))), nodes[str(n)]) for n in range(34))
    )
    buses = ["0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"]
    nic_bus = [
        "0000:03:00.0",
        "0000:03:00.1",
        "0002:03:00.0",
        "0002:03:00.1",
        "0010:03:00.0",
        "0010:03:00.1",
        "0012:03:00.0",
        "0012:03:00.1",
    ]
    nvidia_host(
        "gb200-4gpu",
        "nvidia/gb200-4gpu-8nic_grace-2socket_numa-affinity-node-list_nvidia-smi-topo-m.txt",
        nodes,
        "0-143",
        lscpu,
        buses,
        [0, 0, 1, 1],
        [("mlx5_%d" % n, nic_bus[n], n // 4, "ibp%ds0" % n) for n in range(8)],
        arch="aarch64",
        gpu_device="0x2941",
        comment=GB200_COMMENT,
        cpu={"packages": dict((n, n) for n in range(2)), "siblings": no_smt},
    )


# RDMA ports (synthesised): 8 compute HCAs HDR 200 Gb/s InfiniBand, the dual-port storage card
# (mlx5_8 / mlx5_9 on 0000:e1:00.0 / .1) Ethernet with its second port down.
DGX_PORTS = dict(
    [("mlx5_%d" % n, ("4: ACTIVE", "200 Gb/sec (4X HDR)", "InfiniBand")) for n in range(8)]
    + [
        ("mlx5_8", ("4: ACTIVE", "100 Gb/sec (2X HDR)", "Ethernet")),
        ("mlx5_9", ("1: DOWN", "40 Gb/sec (4X QDR)", "Ethernet")),
    ]
)

DGX_COMMENT = """dgx-a100: 8x A100 SXM, 2x EPYC 7742 in NPS4 (8 NUMA nodes, SMT siblings N and N+128).
Real: nvidia-smi topo -m and the host's lscpu. Synthesised: bus ids, NIC sysfs, IRQs.
NODE DISTANCES ARE PAIRED, NOT CAPTURED: the real 2-socket EPYC NPS4 table (LKML 2019: 16
within a socket, 32 across); the host's own table was not published."""


AMD_COMMENT = """mi300x-8gpu: 8x AMD Instinct MI300X, 2x Xeon Platinum 8462Y+ (interleaved NUMA: even CPUs
node 0, odd node 1). Real: rocm-smi --showtopo (ROCm 6.2) and the host's lscpu, both from one
vLLM collect_env dump. Synthesised: rocm-smi --showbus (bus ids), GPU and NIC sysfs (4 ConnectX
NICs per NUMA node, as GPUs 0-3 / 4-7), IRQs. rocm-smi reports no GPU<->NIC path: the facts
derive NODE/SYS cells from the sysfs NUMA nodes."""


def build_amd():
    nodes = {"0": cpulist.format(range(0, 128, 2)), "1": cpulist.format(range(1, 128, 2))}
    tools = dict((k, v) for k, v in TOOLS_ALL.items() if k != "npu-smi")
    tools["rocm-smi"] = "/opt/rocm/bin/rocm-smi"
    host = Host("mi300x-8gpu", "x86_64", nodes, "0-127", tools=tools, comment=AMD_COMMENT)
    host.cpu_topology(**XEON_8462Y)
    host.commands["lscpu"] = ok(fixture("cpu/mi300x-host_2x-xeon8462y+_interleaved-numa_128cpu_lscpu.txt"))
    host.lscpu_e(nodes)
    host.commands["rocm-smi --showtopo"] = ok(fixture("amd/mi300x-8gpu_rocm-smi-showtopo_rocm6.2.txt"))
    gpu_buses = ["0000:%02x:00.0" % b for b in (0x05, 0x26, 0x46, 0x65, 0x85, 0xA6, 0xC6, 0xE5)]
    host.commands["rocm-smi --showbus"] = ok(
        "============================ ROCm System Management Interface ============================\n"
        "======================================= PCI Bus ID =======================================\n"
        + "".join("GPU[%d]\t\t: PCI Bus: %s\n" % (i, b) for i, b in enumerate(gpu_buses))
        + "================================== End of ROCm SMI Log ===================================\n"
    )
    for index, bus in enumerate(gpu_buses):
        host.pci(bus, index // 4, "0x1002", "0x74a1")
    for n in range(8):
        bus = "0000:%02x:00.0" % (0x0C + 0x20 * n)
        nic, node = "mlx5_%d" % n, n // 4
        host.pci(
            bus,
            node,
            "0x15b3",
            "0x1021",
            ["mlx5_async@pci:" + bus] + ["mlx5_comp%d@pci:%s" % (c, bus) for c in range(4)],
        )
        dev = "/sys/class/infiniband/%s/device" % nic
        host.links[dev] = "/sys/devices/pci0000:%s/%s" % (bus[5:7], bus)
        host.files[dev + "/numa_node"] = "%d\n" % node
        host.files[dev + "/net/ens%dnp0/ifindex" % (n + 1)] = "%d\n" % (10 + n)
        port = "/sys/class/infiniband/%s/ports/1/" % nic
        host.files[port + "state"] = "4: ACTIVE\n"
        host.files[port + "rate"] = "400 Gb/sec (4X NDR)\n"
        host.files[port + "link_layer"] = "InfiniBand\n"
    host.finish()


def build_none():
    nodes = {"0": cpulist.format(range(0, 128, 2)), "1": cpulist.format(range(1, 128, 2))}
    host = Host(
        "x86-none",
        "x86_64",
        nodes,
        "0-127",
        tools=dict((k, v) for k, v in TOOLS_ALL.items() if k not in ("npu-smi", "migratepages")),
    )
    host.cpu_topology(**XEON_8462Y)
    host.commands["lscpu"] = ok(fixture("cpu/mi300x-host_2x-xeon8462y+_interleaved-numa_128cpu_lscpu.txt"))
    host.lscpu_e(nodes)
    host.finish()


def main():
    build_ascend()
    build_nvidia()
    build_amd()
    build_none()


if __name__ == "__main__":
    main()
