# -*- coding: utf-8 -*-
"""Facts schema 2: the CPUs a service gets, NUMA distances, packages, SMT siblings,
isolated CPUs; a host without CPU data; device type by evidence strength; affinity order."""

import os

import pytest

from npuops_testing import SNAPSHOTS, fixture_text
from npuops_testing.fake_io import FakeIO, cpu_tree
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import rules, topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch

STATUS = "Name:\tpython3\nCpus_allowed_list:\t%s\n"
SLICE = "/sys/fs/cgroup/system.slice/cpuset.cpus.effective"
ROOT_V2 = "/sys/fs/cgroup/cpuset.cpus.effective"
ROOT_V1 = "/sys/fs/cgroup/cpuset/cpuset.effective_cpus"


def snapshot_facts(host):
    return topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))


def two_nodes(**extra):
    files = cpu_tree(
        {0: "0-3", 1: "4-7"},
        online="0-7",
        siblings=dict((c, str(c)) for c in range(8)),
        packages={0: 0, 3: 0, 4: 1, 7: 1},
        distance={0: "10 21", 1: "21 10"},
    )
    files.update({"/sys/devices/system/cpu/isolated": "\n", "/sys/devices/system/cpu/nohz_full": "\n"})
    files.update(extra)
    return files


# ---- cpu.allowed: what a systemd service gets ------------------------------------------------


@pytest.mark.parametrize(
    "cgroup, allowed, source",
    [
        ({SLICE: "0-7\n", ROOT_V2: "0-7\n"}, "0-7", "system.slice"),
        ({ROOT_V2: "0-5\n"}, "0-5", "cgroup root"),
        ({ROOT_V1: "2-7\n"}, "2-7", "cgroup root"),
        ({SLICE: "\n", ROOT_V2: "0-6\n"}, "0-6", "cgroup root"),  # an empty effective set
        ({}, "1", "self"),
    ],
)
def test_allowed_is_the_service_cpuset_and_allowed_self_the_process(cgroup, allowed, source):
    files = two_nodes(**{"/proc/self/status": STATUS % "1"})
    files.update(cgroup)
    got = topology.gather(FakeIO(files))
    cpu = got["cpu"]
    assert (cpu["allowed"], cpu["allowed_self"], cpu["allowed_source"]) == (allowed, "1", source)
    if source != "self":
        # an SSH session in a narrow cpuset: said, and the plan uses the service's CPUs
        assert any("cpu.allowed_self" in w and allowed in w for w in got["warnings"])


def test_allowed_falls_back_to_online_without_status():
    cpu = topology.gather(FakeIO(two_nodes()))["cpu"]
    assert (cpu["allowed"], cpu["allowed_self"], cpu["allowed_source"]) == ("0-7", None, "online")


def test_cut_cpuset_diagnosis_keeps_working():
    # a job's cgroup (the container's root cpuset) smaller than the host: the hint fires
    files = two_nodes(**{"/proc/self/status": STATUS % "0-1", ROOT_V2: "0-1\n"})
    topo = topology.gather(FakeIO(files))
    assert topo["cpu"]["allowed"] == "0-1"
    assert "cpuset of 2 CPUs (the cgroup root cpuset 0-1;" in rules.cpuset_hint(topo)
    # the recorded cgroup-limited host (no cgroup files: the process's own list) as before
    cg = snapshot_facts("h100-cgroup")
    assert (cg["cpu"]["allowed"], cg["cpu"]["allowed_source"]) == ("1", "self")
    assert "Cpus_allowed_list 1" in rules.cpuset_hint(cg)


# ---- distances, packages, siblings, isolated -------------------------------------------------


def test_distance_packages_siblings_from_sysfs():
    cpu = topology.gather(FakeIO(two_nodes()))["cpu"]
    assert cpu["numa_distance"] == {"0": {"0": 10, "1": 21}, "1": {"0": 21, "1": 10}}
    assert cpu["packages"] == {"0": 0, "1": 1}
    assert cpu["smt_siblings"] == [] and cpu["isolated"] == "" and cpu["nohz_full"] == ""


def test_real_kunpeng_table_paired_with_the_real_a2_host():
    cpu = snapshot_facts("a2-910b3x8")["cpu"]
    # node 6 (NPU0/1) is 11 from its sibling die 7, 25 from node 5 on another socket
    assert cpu["numa_distance"]["6"] == {"0": 24, "1": 25, "2": 24, "3": 25, "4": 24, "5": 25, "6": 10, "7": 11}
    assert cpu["packages"] is None  # physical_package_id -1, as its lscpu's "Socket(s): -"
    assert cpu["smt_siblings"] == []
    assert snapshot_facts("a2i-910b4x8")["cpu"]["packages"] == dict((str(n), n // 2) for n in range(8))


def test_real_siblings_interleaved_and_plus_n():
    assert snapshot_facts("dgx-a100")["cpu"]["smt_siblings"][:2] == ["0,128", "1,129"]
    # the Xeon 8462Y+ host: node 0 holds the even CPUs, siblings N and N + 64
    assert snapshot_facts("x86-none")["cpu"]["smt_siblings"][:2] == ["0,64", "1,65"]
    # adjacent numbering (siblings 0,1): read, never guessed
    files = two_nodes()
    for cpu in range(8):
        files["/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list" % cpu] = "%d-%d\n" % (cpu & ~1, cpu | 1)
    assert topology.gather(FakeIO(files))["cpu"]["smt_siblings"] == ["0-1", "2-3", "4-5", "6-7"]


def test_numactl_fallback_and_missing_sources():
    files = two_nodes()
    for node in (0, 1):
        del files["/sys/devices/system/node/node%d/distance" % node]
    numactl = fixture_text("cpu/hgx-h100-princeton-pli_2x-xeon8468_ht-off_interleaved-numa_numactl-H.txt")
    got = topology.gather(FakeIO(files, {"numactl -H": numactl}))
    assert got["cpu"]["numa_distance"] == {"0": {"0": 10, "1": 21}, "1": {"0": 21, "1": 10}}
    assert got["errors"] == []
    for path in list(files):
        if "thread_siblings" in path or "physical_package" in path or path.endswith("nohz_full"):
            del files[path]
    got = topology.gather(FakeIO(files))
    cpu = got["cpu"]
    assert (cpu["numa_distance"], cpu["packages"], cpu["smt_siblings"], cpu["nohz_full"]) == (None, None, None, None)
    sources = dict((e["source"], e["msg"]) for e in got["errors"])
    assert sources["cpu.numa_distance"].endswith("numactl -H: not installed")
    assert "physical_package_id: not readable" in sources["cpu.packages"]
    assert "/sys/devices/system/cpu/nohz_full" in sources


def test_node_spanning_packages_and_unset_nohz_full():
    files = two_nodes(
        **{
            "/sys/devices/system/cpu/cpu3/topology/physical_package_id": "1\n",
            "/sys/devices/system/cpu/nohz_full": "(null)\n",
            "/sys/devices/system/cpu/isolated": "2-3\n",
        }
    )
    got = topology.gather(FakeIO(files))
    assert got["cpu"]["packages"] == {"0": 0, "1": 1}
    assert "NUMA node 0 spans packages [0, 1]: taken as package 0" in got["warnings"]
    assert (got["cpu"]["nohz_full"], got["cpu"]["isolated"]) == ("", "2-3")


# ---- a host without CPU data, device type, affinity order -----------------------------------

A2_INFO = fixture_text("ascend/a2-910b3x8_npu-smi-info_v23.0.7.txt")


def test_no_cpu_data_still_returns_npu_facts():
    io = FakeIO({}, {"npu-smi info": A2_INFO})
    got = topology.gather(io)
    assert len(got["npus"]) == 8 and got["device_type"] == "A2"
    assert got["cpu"]["allowed"] is None and got["cpu"]["allowed_source"] is None
    assert [e["source"] for e in got["errors"]] == ["cpu"]
    assert "no CPU information could be read from this host" in got["errors"][0]["msg"]
    # a plan then fails with a message naming what is missing (not options never given)
    with pytest.raises(Exception, match="no CPUs known for this host") as err:
        dispatch.make_plan(got)
    assert "reserved_cpus" not in str(err.value)


def test_phy_id_header_over_a2_gives_a2_with_a_warning():
    text = A2_INFO.replace("| Chip                      |", "| Chip  Phy-ID              |", 1)
    files = two_nodes()
    files["/sys/bus/pci/devices/0000:c1:00.0/vendor"] = "0x19e5\n"
    files["/sys/bus/pci/devices/0000:c1:00.0/device"] = "0xd802\n"
    got = topology.gather(FakeIO(files, {"npu-smi info": text}))
    assert got["device_type"] == "A2"
    assert (
        "device type A2 from PCI device 19e5:d802 wins over A3 from 'Chip  Phy-ID' column "
        "(weaker evidence)" in got["warnings"]
    )


def test_board_pci_id_when_sysfs_has_none():
    board = fixture_text("ascend/atlas800-9000-910a_npu-smi-info-i0-t-board.txt")
    got = topology.gather(FakeIO(two_nodes(), {"npu-smi info": A2_INFO, "npu-smi info -t board -i 0": board}))
    # the board's 0xd801 is stronger than the 910B3 chip name (the board is of another host:
    # the test shows the order of evidence, and the warning names both)
    assert got["device_type"] == "910A"
    assert "npu-smi info -t board PCI device 19e5:d801 -> 910A" in got["device_type_evidence"]
    assert any("wins over A2 from chip name '910B3'" in w for w in got["warnings"])


def test_affinity_order_kept_for_the_vllm_ascend_policy():
    topo_text = "\tNPU0\tNPU1\tCPU Affinity\nNPU0\tX\tHCCS\t48-59,0-11\nNPU1\tHCCS\tX\t0-11,48-59\n"
    info = A2_INFO
    files = cpu_tree({0: "0-47", 1: "48-95"}, online="0-95")
    got = topology.gather(FakeIO(files, {"npu-smi info": info, "npu-smi info -t topo": topo_text}))
    assert [n["affinity"] for n in got["npus"][:2]] == ["48-59,0-11", "0-11,48-59"]
    plan = dispatch.make_plan(got, "vllm_ascend", npus=[0])
    entry = plan["npus"]["0"]
    # vllm-ascend's positional split of the unsorted multi-NUMA pool: IRQ 48-49, ACL 10, release 11
    assert (entry["pool_order"], entry["irq"], entry["acl"], entry["release"]) == ("48-59,0-11", "48-49", "10", "11")


def test_device_type_evidence_of_the_real_a2_names_each_source_once():
    got = snapshot_facts("a2-910b3x8")
    assert got["device_type_evidence"] == ["chip name '910B3' -> A2", "PCI device 19e5:d802 -> A2"]
    assert not [w for w in got["warnings"] if "device type" in w]
