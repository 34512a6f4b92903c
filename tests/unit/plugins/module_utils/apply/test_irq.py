# -*- coding: utf-8 -*-
"""irq.py: IRQ targets from plan + facts, sandbox writes, irqbalance config."""

import os

import pytest
from npuops_testing import SNAPSHOTS
from npuops_testing.sandbox import irq_sandbox

from ansible_collections.npuops.fleet.plugins.module_utils.apply import irq
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import irqbalance_conf
from ansible_collections.npuops.fleet.plugins.module_utils.render import irqbalance

NPU0_BUS, NPU1_BUS, NIC_BUS = "0000:c1:00.0", "0000:01:00.0", "0000:1a:00.0"

# IRQ layout: NPU0's CQ is NOT SQ+1 (101 is another vector), so "by name" is tested.
INTERRUPTS = """           CPU0       CPU1       CPU2       CPU3
  11:          0          0          0          0   IO-APIC   11-fasteoi   acpi
 100:        120          0          0          3  ITS-MSI 12582912 Edge      sq_send_trigger_irq
 101:          0          0          0          0  ITS-MSI 12582913 Edge      dfx_irq
 102:       4000          0          0          0  ITS-MSI 12582914 Edge      cq_update_irq
 103:          0          0          0          0  ITS-MSI 12582915 Edge      cq_update_irq
 200:          9          0          0          0  ITS-MSI 524288 Edge      sq_send_trigger_irq
 201:          9          0          0          0  ITS-MSI 524289 Edge      cq_update_irq
 300:          0          0          0          0  IR-PCI-MSI 1048576-edge      mlx5_async0@pci:0000:1a:00.0
 301:          0          0          0          0  IR-PCI-MSI 1048577-edge      mlx5_comp0@pci:0000:1a:00.0
 302:          0          0          0          0  IR-PCI-MSI 1048578-edge      mlx5_comp1@pci:0000:1a:00.0
 303:          0          0          0          0  IR-PCI-MSI 1048579-edge      mlx5_comp2@pci:0000:1a:00.0
NMI:          0          0          0          0   Non-maskable interrupts
"""
MSI = {NPU0_BUS: [100, 101, 102, 103], NPU1_BUS: [200, 201], NIC_BUS: [300, 301, 302, 303]}

PLAN = {
    "mode": "topo_affinity",
    "device_type": "A2",
    "skipped": False,
    "numa_nodes": {"0": "0-1", "1": "2-3"},
    "npus": {
        "0": {"pool": "2-3", "numa_nodes": [1], "irq": "2-3", "main": "3", "acl": "3", "release": "3"},
        "1": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "1", "acl": "1", "release": "1"},
    },
}
TOPOLOGY = {
    "npus": [
        {"logic_id": 0, "bus_id": NPU0_BUS, "irqs": {"sq": None, "cq": None}},
        {"logic_id": 1, "bus_id": NPU1_BUS},
    ],
    "nics": [{"name": "mlx5_0", "bus_id": NIC_BUS, "numa_node": 0}],
    "irqbalance": {"installed": True, "active": True},
}
GPU_PLAN = {
    "mode": "gpu_numa",
    "npus": {},
    "gpus": {
        "0": {"pool": "0-1", "numa_node": 0, "nic": "mlx5_0", "link": "PIX"},
        "1": {"pool": "2-3", "numa_node": 1, "nic": "mlx5_0", "link": "SYS"},
    },
}


def make_root(tmp_path, affinity="0-3"):
    return str(irq_sandbox(tmp_path / "root", INTERRUPTS, MSI, affinity))


def affinity(root, number):
    with open(os.path.join(root, "proc", "irq", str(number), "smp_affinity_list")) as handle:
        return handle.read().strip()


def test_targets_found_by_name_not_sq_plus_one(tmp_path):
    root = make_root(tmp_path)
    targets, skipped, warnings = irq.plan_targets(PLAN, TOPOLOGY, root)
    assert skipped is None and warnings == []
    assert targets == [
        {"irq": 100, "device": "NPU0", "role": "sq", "cpus": [2]},
        {"irq": 102, "device": "NPU0", "role": "cq", "cpus": [3]},
        {"irq": 103, "device": "NPU0", "role": "cq1", "cpus": [3]},
        {"irq": 200, "device": "NPU1", "role": "sq", "cpus": [0]},
        {"irq": 201, "device": "NPU1", "role": "cq", "cpus": [1]},
    ]


def test_facts_irqs_used_without_reading_proc(tmp_path):
    topo = {"npus": [{"logic_id": 0, "irqs": {"sq": 7, "cq": "9"}}]}
    targets, _s, _w = irq.plan_targets(PLAN, topo, str(tmp_path / "nothing"), npus=[0])
    assert [(t["irq"], t["cpus"]) for t in targets] == [(7, [2]), (9, [3])]


def test_ascend950_skipped_and_said_so(tmp_path):
    targets, skipped, _w = irq.plan_targets(
        dict(PLAN, mode="ascend950", device_type="A5"), TOPOLOGY, make_root(tmp_path)
    )
    assert targets == [] and "Ascend 950" in skipped


def test_missing_bus_or_msi_is_a_warning(tmp_path):
    topo = {"npus": [{"logic_id": 0, "bus_id": "0000:99:00.0"}, {"logic_id": 1}]}
    targets, _s, warnings = irq.plan_targets(PLAN, topo, make_root(tmp_path))
    assert targets == []
    assert any("msi_irqs not found" in w for w in warnings)
    assert any("NPU1: no PCI bus id" in w for w in warnings)


@pytest.mark.parametrize("bad", ["../../etc", "1;rm", "0x10", " 7", "7\n", "-1"])
def test_hostile_msi_entry_names_rejected(tmp_path, bad):
    root = make_root(tmp_path)
    msi = os.path.join(root, "sys/bus/pci/devices", NPU1_BUS, "msi_irqs")
    if "/" in bad:
        # a name with '/' cannot exist on disk; the facts path is checked instead (the
        # topology's shape, model/schema, before the IRQ rules)
        with pytest.raises(NpuopsError, match="irqs.sq: expected an integer"):
            irq.plan_targets(PLAN, {"npus": [{"logic_id": 1, "irqs": {"sq": bad}}]}, root, npus=[1])
        return
    open(os.path.join(msi, bad), "w").close()
    with pytest.raises(NpuopsError, match="only IRQ numbers"):
        irq.plan_targets(PLAN, TOPOLOGY, root, npus=[1])


@pytest.mark.parametrize("value", ["12; echo", "../1", True, -3, 1.5, None, "１２"])
def test_irq_number_rejects_non_numeric(value):
    with pytest.raises(NpuopsError):
        irq.irq_number(value, "test")


def test_hostile_bus_id_rejected(tmp_path):
    topo = {"npus": [{"logic_id": 0, "bus_id": "../../../etc"}]}
    with pytest.raises(NpuopsError, match="PCI bus id"):
        irq.plan_targets(PLAN, topo, make_root(tmp_path), npus=[0])


def test_unknown_npu_subset():
    with pytest.raises(NpuopsError, match="7 not in the plan"):
        irq.plan_targets(PLAN, TOPOLOGY, "/", npus=[7])


def test_apply_writes_then_unchanged(tmp_path):
    root = make_root(tmp_path)
    targets, _s, _w = irq.plan_targets(PLAN, TOPOLOGY, root)
    results = irq.apply_targets(targets, root)
    # every completion vector of a device (the driver registers 16), not only the first
    assert [(r["irq"], r["before"], r["after"], r["changed"]) for r in results] == [
        (100, "0-3", "2", True),
        (102, "0-3", "3", True),
        (103, "0-3", "3", True),
        (200, "0-3", "0", True),
        (201, "0-3", "1", True),
    ]
    assert affinity(root, 100) == "2" and affinity(root, 102) == "3" and affinity(root, 103) == "3"
    assert affinity(root, 101) == "0-3"  # not ours
    again = irq.apply_targets(targets, root)
    assert not any(r["changed"] for r in again)


def test_check_mode_writes_nothing(tmp_path):
    root = make_root(tmp_path)
    targets, _s, _w = irq.plan_targets(PLAN, TOPOLOGY, root)
    results = irq.apply_targets(targets, root, check_mode=True)
    assert all(r["changed"] for r in results)
    assert affinity(root, 100) == "0-3"


def test_not_writable_writes_nothing(tmp_path):
    root = make_root(tmp_path)
    targets, _s, _w = irq.plan_targets(PLAN, TOPOLOGY, root)
    os.chmod(os.path.join(root, "proc/irq/201/smp_affinity_list"), 0o444)
    with pytest.raises(NpuopsError, match="/proc/irq is not writable.*201.*nothing was written"):
        irq.apply_targets(targets, root)
    assert [affinity(root, n) for n in (100, 102, 200, 201)] == ["0-3"] * 4
    assert irq.blocked_irqs(targets, root) == [201]


def test_failed_write_rolls_back(tmp_path, monkeypatch):
    root = make_root(tmp_path)
    targets, _s, _w = irq.plan_targets(PLAN, TOPOLOGY, root)
    real_write = irq._write

    def write(host_root, path, value):
        # the kernel refuses IRQ 200 (ENOSPC: vectors exhausted, irqbalance #303)
        if "/irq/200/" in path and value != "0-3":
            raise OSError(28, "No space left on device")
        real_write(host_root, path, value)

    monkeypatch.setattr(irq, "_write", write)
    with pytest.raises(NpuopsError, match="IRQ 200.*No space left.*3 IRQs already written were restored"):
        irq.apply_targets(targets, root)
    assert [affinity(root, n) for n in (100, 102, 103, 200, 201)] == ["0-3"] * 5


def test_unreadable_affinity_is_a_message(tmp_path):
    root = make_root(tmp_path)
    path = os.path.join(root, "proc/irq/200/smp_affinity_list")
    os.unlink(path)
    os.mkdir(path)
    targets, _s, _w = irq.plan_targets(PLAN, TOPOLOGY, root)
    with pytest.raises(NpuopsError, match="IRQ 200: .* cannot be read"):
        irq.apply_targets(targets, root)


def test_symlinked_irq_dir_refused(tmp_path):
    root = make_root(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "smp_affinity_list").write_text("0-3\n")
    os.rename(os.path.join(root, "proc/irq/100"), str(tmp_path / "old100"))
    os.symlink(str(target), os.path.join(root, "proc/irq/100"))
    targets, _s, _w = irq.plan_targets(PLAN, TOPOLOGY, root)
    with pytest.raises(NpuopsError, match="symlink"):
        irq.apply_targets(targets, root)
    assert (target / "smp_affinity_list").read_text() == "0-3\n"


SHARED_TOPOLOGY = {"npus": [{"logic_id": 0, "bus_id": NPU1_BUS}, {"logic_id": 1, "bus_id": NPU1_BUS}]}


@pytest.mark.parametrize("npus", [None, [0, 1], [1, 0]])
def test_npus_sharing_one_pci_function_keep_the_first_and_warn(tmp_path, npus):
    """Two chips behind one Bus-Id (300I Duo as npu-smi reports it) resolve to the same IRQs:
    the lowest logic id keeps them, the other is named in a warning, nothing fails."""
    root = make_root(tmp_path)
    targets, skipped, warnings = irq.plan_targets(PLAN, SHARED_TOPOLOGY, root, npus=npus)
    assert skipped is None
    assert targets == [
        {"irq": 200, "device": "NPU0", "role": "sq", "cpus": [2]},
        {"irq": 201, "device": "NPU0", "role": "cq", "cpus": [3]},
    ]
    assert warnings == [
        "IRQ 200 is shared by NPU0 (sq) and NPU1 (sq): it stays with NPU0 on CPU 2; NPU1's IRQ "
        "CPU 0 is not used for it",
        "IRQ 201 is shared by NPU0 (cq) and NPU1 (cq): it stays with NPU0 on CPU 3; NPU1's IRQ "
        "CPU 1 is not used for it",
    ]
    results = irq.apply_targets(targets, root)
    assert [(r["irq"], r["after"]) for r in results] == [(200, "2"), (201, "3")]
    assert not any(r["changed"] for r in irq.apply_targets(targets, root))


def test_same_irq_same_cpu_from_facts_is_kept_once():
    topo = {"npus": [{"logic_id": 0, "irqs": {"sq": 7, "cq": 7}}]}
    plan = dict(PLAN, npus={"0": dict(PLAN["npus"]["0"], irq="2")})
    targets, _s, warnings = irq.plan_targets(plan, topo, "/", npus=[0])
    assert targets == [{"irq": 7, "device": "NPU0", "role": "sq", "cpus": [2]}]
    assert warnings == []


def test_nic_irqs_round_robin_over_gpu_pool_without_spare_cpus(tmp_path):
    targets, _s, warnings = irq.plan_targets(GPU_PLAN, TOPOLOGY, make_root(tmp_path))
    # one warning per host: whether to act, and what to change
    assert len(warnings) == 1
    assert warnings[0].startswith("GPU0/mlx5_0: no spare CPU on the NIC's NUMA node")
    assert "Nothing to do unless RDMA traffic is heavy" in warnings[0]
    assert "npuops_frontend_cpus" in warnings[0]
    # shared NIC follows the lowest GPU (pool 0-1); async vector 300 is left alone
    assert [(t["irq"], t["cpus"]) for t in targets] == [(301, [0]), (302, [1]), (303, [0])]


# irqbalance config ------------------------------------------------------------------------


def test_irqbalance_config_path(tmp_path):
    root = tmp_path / "r"
    (root / "etc" / "sysconfig").mkdir(parents=True)
    assert irq.irqbalance_config_path(str(root)) == "/etc/sysconfig/irqbalance"
    (root / "etc" / "default").mkdir()
    (root / "etc" / "default" / "irqbalance").write_text("")
    assert irq.irqbalance_config_path(str(root)) == "/etc/default/irqbalance"


SNAPSHOT = os.path.join(SNAPSHOTS, "a2-910b3x8")


DUO_SNAPSHOT = os.path.join(os.path.dirname(SNAPSHOT), "atlas300-310p")


def test_atlas300_duo_snapshot_shared_irqs_applied_with_warnings(tmp_path):
    """atlas300-310p: npu-smi reports one Bus-Id per 300I Duo card, so the card's two chips
    find the same IRQs; the lower logic id of each card keeps them (used to fail with
    "IRQ 1024: planned for two CPU sets (NPU1)")."""
    from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

    topo = topology.gather(hostio.SnapshotHostIO(DUO_SNAPSHOT))
    assert [n["bus_id"] for n in topo["npus"]] == ["0000:3b:00.0"] * 2 + ["0000:86:00.0"] * 2
    real = plan.make_plan(topo)
    root = str(tmp_path / "fs")
    snapshot.copy_host_tree(DUO_SNAPSHOT, root)
    targets, skipped, warnings = irq.plan_targets(real, topo, root)
    assert skipped is None
    assert sorted(set(t["device"] for t in targets)) == ["NPU0", "NPU2"]
    # each card: one sq and its two cq vectors of the synthesised snapshot
    assert len(targets) == len(set(t["irq"] for t in targets)) == 6
    assert len(warnings) == 6
    assert all(("by NPU0" in w and "and NPU1" in w) or ("by NPU2" in w and "and NPU3" in w) for w in warnings), warnings
    assert all(r["changed"] for r in irq.apply_targets(targets, root))


def test_snapshot_host_sandbox(tmp_path):
    """Facts gathered from the A2 snapshot, plan from npu_cpu_plan, applied on a copy of its fs."""
    from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

    topo = topology.gather(hostio.SnapshotHostIO(SNAPSHOT))
    real = plan.make_plan(topo)
    root = str(tmp_path / "fs")
    snapshot.copy_host_tree(SNAPSHOT, root)
    # find the IRQs from sysfs + /proc/interrupts, not from the facts
    for npu in topo["npus"]:
        npu["irqs"] = None
    targets, skipped, warnings = irq.plan_targets(real, topo, root)
    assert skipped is None and warnings == []
    # the snapshot's /proc/interrupts: one sq and two cq_update_irq vectors per NPU
    assert len(targets) == 3 * len(real["npus"])
    npu0 = [t for t in targets if t["device"] == "NPU0"]
    assert [(t["role"], t["cpus"]) for t in npu0] == [("sq", [144]), ("cq", [145]), ("cq1", [145])]
    assert npu0[1]["irq"] != npu0[0]["irq"] + 1  # the snapshot puts trs-mbox0 in between
    first = irq.apply_targets(targets, root)
    assert all(r["changed"] for r in first)
    assert affinity(root, npu0[0]["irq"]) == "144"
    assert not any(r["changed"] for r in irq.apply_targets(targets, root))


def test_every_completion_vector_of_the_driver_layout_is_pinned(tmp_path):
    """The driver's real layout (soc_platform.c): per device one sq_send_trigger_irq, then
    CQ_UPDATE_IRQ_NUM = 16 cq_update_irq vectors, with mailbox vectors in the same MSI range."""
    rows = ["           CPU0       CPU1       CPU2       CPU3"]
    msi = []
    number = 400
    for name in ["sq_send_trigger_irq", "trs-mbox0"] + ["cq_update_irq"] * 16 + ["trs-mbox1"]:
        rows.append(
            " %d:          1          0          0          0  ITS-MSI %d Edge      %s"
            % (number, 12582912 + number, name)
        )
        msi.append(number)
        number += 1
    root = str(irq_sandbox(tmp_path / "root", "\n".join(rows) + "\n", {NPU0_BUS: msi}))
    topo = {"npus": [{"logic_id": 0, "bus_id": NPU0_BUS}]}
    targets, dummy, warnings = irq.plan_targets(PLAN, topo, root, npus=[0])
    assert warnings == []
    assert [(t["irq"], t["role"], t["cpus"]) for t in targets][:3] == [
        (400, "sq", [2]),
        (402, "cq", [3]),
        (403, "cq1", [3]),
    ]
    assert len(targets) == 17 and {t["irq"] for t in targets} == {400} | set(range(402, 418))
    irq.apply_targets(targets, root)
    assert affinity(root, 417) == "3" and affinity(root, 401) == "0-3"  # mailbox left alone


def test_the_file_edited_is_the_one_the_unit_reads(tmp_path):
    upstream = "/usr/share/irqbalance/irqbalance.env (ignore_errors=no) /etc/default/irqbalance (ignore_errors=yes)\n"
    files = irqbalance_conf.unit_environment_files(upstream)
    assert files == ["/usr/share/irqbalance/irqbalance.env", "/etc/default/irqbalance"]
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "etc", "sysconfig"))
    with open(os.path.join(root, "etc", "sysconfig", "irqbalance"), "w") as handle:
        handle.write("IRQBALANCE_ARGS=\n")
    # systemd says the unit reads /etc/default/irqbalance: a stray sysconfig file is not it
    assert irq.irqbalance_config_path(root, files) == "/etc/default/irqbalance"
    rhel = irqbalance_conf.unit_environment_files("/etc/sysconfig/irqbalance (ignore_errors=yes)\n")
    assert irq.irqbalance_config_path(root, rhel) == "/etc/sysconfig/irqbalance"
    assert (
        irq.irqbalance_config_path(root, ["/usr/share/irqbalance/irqbalance.env"])
        == "/usr/share/irqbalance/irqbalance.env"
    )
    # without systemd's word (a sandbox): the existing distribution file
    assert irq.irqbalance_config_path(root) == "/etc/sysconfig/irqbalance"


def test_nic_completion_irqs_go_to_spare_cpus_of_the_nics_node(tmp_path):
    root = make_root(tmp_path)
    spare = dict(
        GPU_PLAN,
        numa_nodes={"0": "0-1", "1": "2-3"},
        cpu_budget={"workers": "0-2", "frontend": "", "reserved": "", "spare": "3"},
    )
    topo = dict(TOPOLOGY, nics=[{"name": "mlx5_0", "bus_id": NIC_BUS, "numa_node": 1}])
    targets, dummy, warnings = irq.plan_targets(spare, topo, root)
    assert [(t["irq"], t["cpus"]) for t in targets] == [(301, [3]), (302, [3]), (303, [3])]
    assert warnings == []
    none_spare = dict(spare, cpu_budget={"spare": ""})
    targets, dummy, warnings = irq.plan_targets(none_spare, topo, root)
    assert [t["cpus"] for t in targets] == [[0], [1], [0]]  # the GPU's pool, with a warning
    assert "no spare CPU" in warnings[0]
    doc = irqbalance.state_document(targets)
    assert doc["irqs"][0] == {"irq": 301, "device": 0, "label": "GPU0/mlx5_0", "role": "comp0", "cpus": "0"}
