# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gather(io, timeout)``: walk one host through a HostIO and build the topology facts
(``ansible_facts.npu_topology``, schema 2; see docs/dev/facts-schema.md).

Every command runs concurrently (``io.run_many``), each under ``timeout``: npu-smi takes
0.5-2 s per call on real hosts and a wedged driver must not hang the play. A source that
fails lands in ``errors`` with its reason; only a host where nothing usable was read raises.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import facts as kubelet
from ansible_collections.npuops.fleet.plugins.module_utils.model import cpu_facts, device_nodes, rules
from ansible_collections.npuops.fleet.plugins.module_utils.model import cpu_partition_facts, inventory
from ansible_collections.npuops.fleet.plugins.module_utils.model import vllm_version
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.model import version as vllm_ascend_version
from ansible_collections.npuops.fleet.plugins.module_utils.parse import (
    cgroup,
    cpu_topology,
    device_type,
    interrupts,
    irqbalance_conf,
    npu_smi,
    nvidia_query,
    nvidia_topo,
    pci,
    rdma,
    rocm_smi,
)

SCHEMA_VERSION = 2

COMMANDS = (
    ("npu_info", npu_smi.INFO_ARGV),
    ("npu_map", npu_smi.MAP_ARGV),
    ("npu_topo", npu_smi.TOPO_ARGV),
    ("lscpu", cpu_topology.LSCPU_ARGV),
    ("lscpu_e", cpu_topology.LSCPU_E_ARGV),
    ("nvidia_topo", ["nvidia-smi", "topo", "-m"]),
    ("nvidia_query", ["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"]),
    ("nvidia_gpus", nvidia_query.ARGV),  # model and health (absent from older snapshots)
    ("irqbalance", ["systemctl", "is-active", "irqbalance"]),
    ("rocm_topo", ["rocm-smi", "--showtopo"]),
    ("rocm_bus", ["rocm-smi", "--showbus"]),
    ("rocm_inventory", rocm_smi.INVENTORY_ARGV),  # model, VBIOS, driver (model/inventory)
)
TOOLS = ("npu-smi", "nvidia-smi", "migratepages", "taskset", "systemctl")
ENV = ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
PCI = "/sys/bus/pci/devices/"


class _Sources(object):
    """Command results by name, with failures collected as ``errors`` entries."""

    def __init__(self, io, timeout):
        results = io.run_many([argv for _name, argv in COMMANDS], timeout=timeout)
        self.results = dict((name, res) for (name, _argv), res in zip(COMMANDS, results))
        self.errors = []
        self.warnings = []

    def error(self, source, msg):
        self.errors.append({"source": source, "msg": msg})

    def text(self, name, report_missing=False):
        """stdout of a command that succeeded, else None (failure noted unless missing)."""
        res = self.results[name]
        if res.ok:
            return res.stdout
        if not res.missing or report_missing:
            self.error(res.key, res.failure())
        return None

    def parse(self, name, parser, report_missing=False):
        text = self.text(name, report_missing)
        if text is None:
            return None
        try:
            return parser(text)
        except ParseError as err:
            self.error(self.results[name].key, err.msg)
            return None


def _npus(io, src, timeout):
    """NPU entries, the raw ``-m`` map and the device-type evidence inputs."""
    info = src.parse("npu_info", npu_smi.parse_info)
    mapped = src.parse("npu_map", npu_smi.parse_map)
    topo = None
    if info is not None or mapped is not None:
        topo = src.parse("npu_topo", npu_smi.parse_topo)
    raw_map = mapped["map"] if mapped else {}
    chips = list(info["chips"]) if info else []
    map_rows = [r for r in (mapped["rows"] if mapped else []) if r["logic_id"] is not None]
    if not chips:
        # No device table (driver trouble, or only -m answered): chips from the map rows.
        chips = [
            {
                "npu_id": r["npu_id"],
                "chip_id": r["chip_id"],
                "phy_id": r["phy_id"],
                "name": device_type.normalise_name(r["name"]) or r["name"],
                "health": None,
                "bus_id": None,
                "hbm_used_mb": None,
                "hbm_total_mb": None,
            }
            for r in map_rows
        ]
    by_key = dict(((r["npu_id"], r["chip_id"]), r) for r in map_rows)
    processes = info["processes"] if info else []
    layout = info["process_layout"] if info else None
    chips_per_npu = {}
    for chip in chips:
        chips_per_npu.setdefault(chip["npu_id"], []).append(chip)
    topo_by_npu = device_nodes.topo_by_npu_id(topo, chips, by_key, map_rows, src.warnings)
    irq_table = None
    npus = []
    seen, duplicates = set(), []
    for position, chip in enumerate(chips):
        row = by_key.get((chip["npu_id"], chip["chip_id"]))
        logic = row["logic_id"] if row else (position if not map_rows else None)
        if logic is None:
            src.error("npu-smi info -m", "NPU %s chip %s has no logic id" % (chip["npu_id"], chip["chip_id"]))
            continue
        # one entry per chip and per logic id: a repeated row (4,096 times NPU 0) is one NPU
        if ("chip", chip["npu_id"], chip["chip_id"]) in seen or ("logic", logic) in seen:
            duplicates.append("%s/%s" % (chip["npu_id"], chip["chip_id"]))
            continue
        seen.update((("chip", chip["npu_id"], chip["chip_id"]), ("logic", logic)))
        phy = chip.get("phy_id")
        if phy is None and row:
            phy = row["phy_id"]
        bus = chip["bus_id"]
        numa_node, irqs = None, {"sq": None, "cq": None}
        if bus:
            numa_node = cpu_facts.int_file(io, PCI + bus + "/numa_node")
            msi = interrupts.msi_irq_numbers(io.listdir(PCI + bus + "/msi_irqs"))
            if msi:
                if irq_table is None:
                    irq_table = _interrupts(io, src)
                found = interrupts.npu_irqs(irq_table, msi)
                # every completion vector: the driver registers CQ_UPDATE_IRQ_NUM (16) per device
                irqs = {"sq": found["sq"], "cq": found["cq"], "cq_all": found["cq_all"]}
        if layout == "npu_id":
            own = [p for p in processes if p["npu_id"] == chip["npu_id"]]
        else:
            own = [p for p in processes if (p["npu_id"], p["chip_id"]) == (chip["npu_id"], chip["chip_id"])]
        npus.append(
            {
                "npu_id": chip["npu_id"],
                "chip_id": chip["chip_id"],
                "logic_id": logic,
                "phy_id": phy,
                "name": chip["name"],
                "bus_id": bus,
                "numa_node": numa_node,
                "affinity": (topo or {}).get("affinity", {}).get(str(chip["npu_id"] if topo_by_npu else logic)),
                "health": chip["health"],
                "hbm_total_mb": chip["hbm_total_mb"],
                "hbm_used_mb": chip["hbm_used_mb"],
                "processes": [{"pid": p["pid"], "name": p["name"], "memory_mb": p["memory_mb"]} for p in own],
                "irqs": irqs,
            }
        )
    if duplicates:
        src.error(
            "npu-smi info",
            "%d duplicate NPU rows left out (NPU id/chip id %s%s): each "
            "NPU is listed once" % (len(duplicates), ", ".join(duplicates[:5]), ", ..." if len(duplicates) > 5 else ""),
        )
    npus.sort(key=lambda n: n["logic_id"])
    names = [c["name"] for c in chips if c.get("name")]
    names += [r["name"] for r in map_rows if r.get("name")]
    pci_ids = []
    for npu in npus:
        if npu["bus_id"]:
            vendor = (io.read_text(PCI + npu["bus_id"] + "/vendor") or "").strip().lower()
            dev = (io.read_text(PCI + npu["bus_id"] + "/device") or "").strip().lower()
            if vendor == "0x19e5" and dev:
                pci_ids.append(dev)
    board_ids = []
    boards = {}
    if npus and not pci_ids:
        # no PCI id in sysfs: ask the board of the first NPU (the strongest evidence)
        board = boards[npus[0]["npu_id"]] = _board(io, src, npus[0]["npu_id"], timeout)
        if board and board.get("pci_device_id"):
            board_ids.append(board["pci_device_id"])
    groups = list(chips_per_npu.values())
    most = max([len(g) for g in groups] or [0])
    distinct = bool(groups) and all(len(set(c["bus_id"] for c in g)) == len(g) for g in groups if len(g) > 1)
    detected = device_type.detect(
        chip_names=names,
        pci_device_ids=pci_ids,
        phy_id_column="Phy-ID" in ((info or {}).get("chip_column") or ""),
        chips_per_npu=most,
        distinct_bus_per_die=distinct,
        board_device_ids=board_ids,
    )
    if not npus and detected["device_type"] is None:
        detected = {"device_type": None, "evidence": [], "warnings": []}
    detected["warnings"] = list(detected.get("warnings") or []) + [
        "npu-smi info: %s" % w for w in (info or {}).get("warnings", [])
    ]
    # npu-smi printed a table no parser could read: an Ascend host whose NPUs are unknown,
    # never one without NPUs (vendor none, binding skipped)
    unread = not npus and any(
        src.results[name].ok and (src.results[name].stdout or "").strip() and parsed is None
        for name, parsed in (("npu_info", info), ("npu_map", mapped))
    )
    if unread:
        src.error(
            "npu-smi",
            "npu-smi printed a table but no NPU could be read from it (see "
            "its error above): the NPUs of this Ascend host are unknown, no binding can "
            "be planned until the table is read",
        )
    detected["unread"] = unread
    detected["process_layout"] = layout  # vllm-ascend's process-table parsers depend on it
    # the inventory's inputs (model/inventory): the driver of npu-smi's header, boards read
    detected["driver"] = (info or {}).get("version")
    detected["boards"] = boards
    return npus, raw_map, detected


def _board(io, src, npu_id, timeout):
    """``npu-smi info -t board -i <npu>`` parsed, or None (a failure noted unless missing)."""
    argv = list(npu_smi.BOARD_ARGV) + ["-i", str(npu_id)]
    res = io.run(argv, timeout=timeout)
    if not res.ok:
        if not res.missing:
            src.error(res.key, res.failure())
        return None
    try:
        return npu_smi.parse_board(res.stdout)
    except ParseError as err:
        src.error(res.key, err.msg)
        return None


def _interrupts(io, src):
    try:
        text = io.read_text("/proc/interrupts")
    except NpuopsError as err:  # past the read bound (64 MiB): the rest of the facts stand
        src.error("/proc/interrupts", "%s; NPU IRQs are not known" % getattr(err, "msg", err))
        return {}
    if text is None:
        src.error("/proc/interrupts", "not readable")
        return {}
    try:
        return interrupts.parse_interrupts(text)
    except ParseError as err:
        src.error("/proc/interrupts", err.msg)
        return {}


def _gpu_model(found):
    """The model fields of one GPU (None each when nvidia-smi's query did not answer)."""
    found = found or {}
    return {"model": found.get("model"), "memory_mb": found.get("memory_mb"), "health": found.get("health")}


def _gpus(io, src, cpu_nodes=None):
    warnings = []
    text = src.text("nvidia_topo")
    if text is None:
        return [], [], warnings, None, inventory.empty()
    try:
        parsed = nvidia_topo.parse(text)
    except ParseError as err:
        src.error("nvidia-smi topo -m", err.msg)
        return [], [], warnings, None, inventory.empty()
    warnings.extend("nvidia-smi topo -m: %s" % w for w in parsed.get("warnings", []))
    answered = src.results["nvidia_gpus"].ok
    models = src.parse("nvidia_gpus", nvidia_query.parse) or {}
    buses = {}
    query = src.text("nvidia_query")
    for line in (query or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and re.match(r"^[0-9]{1,4}\Z", parts[0]):  # a GPU index, bounded
            bus = pci.normalise_bus_id(parts[1])
            if bus:
                buses[int(parts[0])] = bus
    gpus = []
    for gpu in parsed["gpus"]:
        bus = buses.get(gpu["index"])
        numa_node, memory_nodes = device_nodes.gpu_node(io, gpu, bus, cpu_nodes or {}, parsed.get("numa_off"), warnings)
        gpus.append(
            {
                "index": gpu["index"],
                "name": gpu["name"],
                "bus_id": bus,
                "numa_node": numa_node,
                "affinity": gpu.get("affinity"),
                "links": dict(gpu.get("links") or {}),
            }
        )
        if memory_nodes is not None:
            gpus[-1]["memory_nodes"] = memory_nodes
        gpus[-1].update(_gpu_model(models.get(gpu["index"])))
    gpus.sort(key=lambda g: g["index"])
    versions = inventory.nvidia(gpus, models, answered, warnings)
    legend = dict((n["name"], n["legend"]) for n in parsed.get("nics", []))
    return gpus, legend, warnings, bool(parsed.get("numa_off")), versions


def _amd_gpus(io, src):
    """AMD Instinct GPUs from ``rocm-smi --showtopo`` (NUMA node, XGMI links) and
    ``--showbus`` (bus ids); the NUMA node from sysfs when rocm-smi prints none."""
    parsed = src.parse("rocm_topo", rocm_smi.parse_showtopo)
    if parsed is None:
        return [], [], inventory.empty()
    buses = src.parse("rocm_bus", rocm_smi.parse_showbus) or {}
    gpus = []
    for gpu in parsed["gpus"]:
        bus = buses.get(gpu["index"])
        node = gpu["numa_node"] if gpu["numa_node"] is not None else gpu["numa_affinity"]
        if node is None and bus:
            node = cpu_facts.int_file(io, PCI + bus + "/numa_node")
        gpus.append(
            {
                "index": gpu["index"],
                "name": gpu["name"],
                "bus_id": bus,
                "numa_node": node,
                "affinity": None,
                "links": dict(gpu["links"]),
            }
        )
    warnings = list(parsed["warnings"])
    versions = inventory.amd(gpus, src.parse("rocm_inventory", rocm_smi.parse_inventory), warnings)
    return gpus, warnings, versions


def nic_links_by_numa(gpus, nics):
    """GPU -> NIC cells where the tool prints none (rocm-smi): ``NODE`` on the GPU's NUMA
    node, ``SYS`` on another; no cell when either node is unknown."""
    for gpu in gpus:
        for nic in nics:
            if isinstance(gpu.get("numa_node"), int) and isinstance(nic.get("numa_node"), int):
                gpu["links"][nic["name"]] = "NODE" if gpu["numa_node"] == nic["numa_node"] else "SYS"


def _ports(io, base, errors):
    """``[{port, state, rate, link_layer}]`` of ``<base>/ports/<n>/`` in port order."""
    names = [n for n in (io.listdir(base + "/ports") or []) if re.match(r"^[0-9]{1,4}\Z", n)]
    ports = []
    for name in sorted(names, key=int):
        path = "%s/ports/%s/" % (base, name)
        ports.append(
            {
                "port": int(name),
                "state": cpu_facts.read_file(io, path + "state", rdma.parse_port_state, errors),
                "rate": cpu_facts.read_file(io, path + "rate", rdma.parse_port_rate, errors),
                "link_layer": cpu_facts.read_file(io, path + "link_layer", rdma.parse_link_layer, errors),
            }
        )
    return ports


def read_rdma_nics(io, errors=None):
    """RDMA devices of a host from ``/sys/class/infiniband``, sorted by name.

    Each is ``{name, netdev, bus_id, numa_node, card, card_nics, ports, state, rate,
    link_layer}``: the PCI address is the basename of the resolved ``device`` link (lower
    case), ``numa_node`` -1 or unreadable -> None, ``netdev`` the first entry of
    ``device/net`` or None; ``card`` the PCI slot (``0000:e1:00``) and ``card_nics`` the RDMA
    devices on that card (the ports that share it); ``ports`` the ``ports/<n>/`` attributes
    (``state`` ACTIVE/DOWN..., ``rate`` in Gb/s, ``link_layer`` InfiniBand/Ethernet) and
    ``state``/``rate``/``link_layer`` those of its first ACTIVE port, else of its first port
    (None when unknown). Unparsable port files are added to ``errors`` when given.
    """
    base = "/sys/class/infiniband"
    names = io.listdir(base) or []
    nics = []
    for name in sorted(names):
        device = "%s/%s/device" % (base, name)
        real = io.realpath(device)
        bus_id = real.rstrip("/").rsplit("/", 1)[-1].lower() if real else None
        numa_node = None
        numa_text = io.read_text(device + "/numa_node")
        if numa_text is not None and re.match(r"^\s*-?[0-9]{1,9}\s*\Z", numa_text):
            value = int(numa_text.strip())
            numa_node = value if value >= 0 else None
        netdevs = io.listdir(device + "/net") or []
        ports = _ports(io, "%s/%s" % (base, name), errors)
        first = ([p for p in ports if p["state"] == "ACTIVE"] or ports or [{}])[0]
        nics.append(
            {
                "name": name,
                "netdev": netdevs[0] if netdevs else None,
                "bus_id": bus_id,
                "numa_node": numa_node,
                "card": pci.card_of(bus_id),
                "card_nics": None,
                "ports": ports,
                "state": first.get("state"),
                "rate": first.get("rate"),
                "link_layer": first.get("link_layer"),
            }
        )
    cards = {}
    for nic in nics:
        if nic["card"]:
            cards.setdefault(nic["card"], []).append(nic["name"])
    for nic in nics:
        if nic["card"]:
            nic["card_nics"] = list(cards[nic["card"]])
    return nics


def _nics(io, src, legend):
    """RDMA NICs; ``irqs``: their ``mlx5_comp*`` completion IRQs (what npu_irq_affinity pins
    for a paired GPU), None when /proc/interrupts or the bus id is not known."""
    nics = []
    table = None
    for nic in read_rdma_nics(io, src.errors):
        entry = {
            "name": nic["name"],
            "legend": (legend or {}).get(nic["name"]),
            "netdev": nic["netdev"],
            "bus_id": nic["bus_id"],
            "numa_node": nic["numa_node"],
            "irqs": None,
        }
        for key in ("card", "card_nics", "ports", "state", "rate", "link_layer"):
            entry[key] = nic[key]
        if nic["bus_id"]:
            if table is None:
                table = _interrupts(io, src)
            if table:
                msi = interrupts.msi_irq_numbers(io.listdir(PCI + nic["bus_id"] + "/msi_irqs"))
                entry["irqs"] = interrupts.nic_irqs(table, nic["bus_id"], msi)
        nics.append(entry)
    return sorted(nics, key=lambda n: n["name"])


def _irqbalance(io, src, active):
    """irqbalance state and what its environment file bans (``--banirq``, banned CPUs)."""
    state = {
        "installed": bool(io.which("irqbalance")) or bool(active),
        "active": active,
        "config": None,
        "banned_irqs": [],
        "banned_cpus": None,
    }
    for path in irqbalance_conf.CONFIG_PATHS:  # the one npu_irq_affinity writes: first existing
        text = io.read_text(path)
        if text is None:
            continue
        state["config"] = path
        try:
            parsed = irqbalance_conf.parse_config(text, path)
        except ParseError as err:
            src.error(path, err.msg)
            break
        state["banned_irqs"] = parsed["banned_irqs"]
        state["banned_cpus"] = parsed["banned_cpus"]
        break
    return state


def gather(io, timeout=30, vllm_ascend_paths=None):
    """Topology facts of the host behind ``io`` (schema_version 2).

    A source that fails lands in ``errors``; raises NpuopsError only when nothing usable was
    read (no CPU information, no NPU, no GPU, no RDMA NIC).
    """
    src = _Sources(io, timeout)
    cpu_warnings = []
    cpu, lscpu = cpu_facts.gather_cpu(io, src, timeout, cpu_warnings)
    npus, raw_map, detected = _npus(io, src, timeout)
    gpus, legend, warnings, numa_off, gpu_versions = _gpus(io, src, cpu.get("numa_nodes"))
    warnings[:0] = cpu_warnings + detected.get("warnings", []) + src.warnings
    amd, amd_versions = [], inventory.empty()
    if not gpus:
        amd, amd_warnings, amd_versions = _amd_gpus(io, src)
        warnings.extend(amd_warnings)
    npu_versions = inventory.ascend(io, src, npus, detected.get("driver"), timeout, detected.get("boards"), warnings)
    nics = _nics(io, src, legend)
    if amd:
        nic_links_by_numa(amd, nics)
        gpus = amd
    if cpu["allowed_source"] is None and not (npus or gpus or nics):
        raise NpuopsError(
            "nothing usable could be read from this host: no CPU information, "
            "no NPU, no GPU (%s)" % ("; ".join("%s: %s" % (e["source"], e["msg"]) for e in src.errors))
        )
    tools = dict((name, bool(io.which(name))) for name in TOOLS)
    irq_state = src.results["irqbalance"]
    active = None
    if not irq_state.missing and not irq_state.timed_out:
        active = irq_state.stdout.strip() == "active"
    worker_pids = [p.get("pid") for n in npus for p in n.get("processes") or [] if isinstance(p.get("pid"), int)]
    vendor = "ascend" if npus or detected.get("unread") else ("amd" if amd else ("nvidia" if gpus else "none"))
    facts = {
        "schema_version": SCHEMA_VERSION,
        "hostname": io.hostname,
        "arch": io.arch or (lscpu or {}).get("arch"),
        "vendor": vendor,
        "device_type": detected["device_type"],
        "device_type_evidence": detected["evidence"],
        "cpu": cpu,
        "npus": npus,
        "npu_map": raw_map,
        "npu_process_layout": detected["process_layout"],
        "gpus": gpus,
        "numa_off": numa_off,
        "nics": nics,
        "tools": tools,
        "irqbalance": _irqbalance(io, src, active),
        "visible_devices": dict((name, io.getenv(name)) for name in ENV),
        "vllm_ascend": vllm_ascend_version.gather(io, vllm_ascend_paths, worker_pids, src.errors, warnings)
        if npus
        else None,
        # the same reader and places (the named environments hold vLLM beside vllm-ascend)
        "vllm": vllm_version.gather(io, vllm_ascend_paths, worker_pids, src.errors, warnings),
        "softshare": rules.softshare_capacity(npus, detected["device_type"]),
        "cgroup": cgroup.cgroup_mode(
            io.read_text("/proc/self/mounts"), io.read_text("/sys/fs/cgroup/cgroup.controllers")
        ),
        "kubernetes": kubelet.gather(io),  # None on a host without a kubelet
        "cpu_partition": cpu_partition_facts.gather(io),
        "versions": inventory.merge(npu_versions, gpu_versions, amd_versions),
        "warnings": warnings,
        "errors": src.errors,
    }
    if cpu["allowed"] and cpu["online"]:
        outside = set(cpulist.parse(cpu["allowed"])) - set(cpulist.parse(cpu["online"]))
        if outside:
            warnings.append("allowed CPUs %s are not online" % cpulist.format(outside))
    return facts
