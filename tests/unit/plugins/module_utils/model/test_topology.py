# -*- coding: utf-8 -*-
"""topology.gather on every host snapshot, record -> replay, failure handling."""

import json
import os

import pytest

from npuops_testing import SNAPSHOTS
from npuops_testing.fake_io import FakeIO
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError

# host -> (arch, vendor, device_type, allowed, numa node count, threads/core, npus, gpus, nics,
#          capacity, error sources)
# Schema 2 adds cpu.numa_distance / packages / smt_siblings: a snapshot of a machine
# whose table, package ids or SMT numbering are not known lacks the file, which is an error.
NO_DIST, NO_PKG, NO_SMT = "cpu.numa_distance", "cpu.packages", "cpu.smt_siblings"
HOSTS = {
    "a2-910b3x8": ("aarch64", "ascend", "A2", "0-191", 8, 1, 8, 0, 0, 800, [NO_PKG]),
    "a2-designdoc": ("aarch64", "ascend", "A2", "0-191", 4, 1, 8, 0, 0, 800, [NO_DIST, NO_PKG, NO_SMT]),
    "a2i-910b4x8": ("aarch64", "ascend", "A2", "0-191", 8, 1, 8, 0, 0, 800, []),
    "a3-16die": ("aarch64", "ascend", "A3", "0-639", 8, 2, 16, 0, 0, 1600, [NO_DIST, NO_SMT]),
    "a5-950": ("aarch64", "ascend", "A5", "0-383", 4, 1, 8, 0, 0, 800, [NO_DIST, NO_PKG, NO_SMT]),
    "a5-950dt-nabus": ("aarch64", "ascend", "A5", "0-383", 4, 1, 4, 0, 0, 400, [NO_DIST, NO_PKG, NO_SMT]),
    "atlas300-310p": ("x86_64", "ascend", "310P", "0-127", 2, 2, 4, 0, 0, 400, [NO_DIST]),
    "a910a-9000": ("aarch64", "ascend", "910A", "0-191", 8, 1, 8, 0, 0, 800, ["npu-smi info -t topo"]),
    "dgx-a100": ("x86_64", "nvidia", None, "0-255", 8, 2, 0, 8, 10, 0, []),
    "h100-numaoff": ("x86_64", "nvidia", None, "0-191", 1, 2, 0, 8, 12, 0, [NO_DIST, NO_PKG, NO_SMT]),
    "h100-cgroup": ("x86_64", "nvidia", None, "1", 2, 1, 0, 8, 6, 0, []),
    "pcie-8gpu": ("x86_64", "nvidia", None, "0-127", 2, 2, 0, 8, 0, 0, [NO_DIST, NO_PKG, NO_SMT]),
    "gb200-4gpu": ("aarch64", "nvidia", None, "0-143", 34, 1, 0, 4, 8, 0, [NO_DIST]),
    "x86-none": ("x86_64", "none", None, "0-127", 2, 2, 0, 0, 0, 0, [NO_DIST]),
    "mi300x-8gpu": ("x86_64", "amd", None, "0-127", 2, 2, 0, 8, 8, 0, [NO_DIST]),
}


def facts(host):
    return topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))


def test_every_snapshot_is_in_the_table():
    assert set(HOSTS) == set(d for d in os.listdir(SNAPSHOTS) if os.path.isdir(os.path.join(SNAPSHOTS, d)))


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_snapshot_facts(host):
    arch, vendor, kind, allowed, nnodes, tpc, nnpu, ngpu, nnic, cap, errs = HOSTS[host]
    got = facts(host)
    assert got["schema_version"] == 2 and got["hostname"] == host
    assert (got["arch"], got["vendor"], got["device_type"]) == (arch, vendor, kind)
    assert got["cpu"]["allowed"] == allowed and got["cpu"]["numa_source"] == "sysfs"
    assert len(got["cpu"]["numa_nodes"]) == nnodes and got["cpu"]["threads_per_core"] == tpc
    assert (len(got["npus"]), len(got["gpus"]), len(got["nics"])) == (nnpu, ngpu, nnic)
    assert got["softshare"]["capacity"] == cap
    assert [e["source"] for e in got["errors"]] == errs
    logic = [n["logic_id"] for n in got["npus"]]
    # ascending and distinct; the 950 host with NPUs 0,1,6,7 keeps its ids (logic id = NPU id)
    assert logic == sorted(set(logic)) and len(logic) == nnpu
    assert logic == (list(range(nnpu)) if host != "a5-950dt-nabus" else [0, 1, 6, 7])
    json.dumps(got)  # plain data only


def test_a2_real_capture_affinities_and_numa():
    """a2-910b3x8 is what the real machine printed: topo pairs NPU0/1, 2/3...; 8 x 24 CPUs."""
    got = facts("a2-910b3x8")
    npus = got["npus"]
    assert [n["affinity"] for n in npus] == ["144-167", "144-167", "96-119", "96-119", "0-23", "0-23", "48-71", "48-71"]
    assert [n["numa_node"] for n in npus] == [6, 6, 4, 4, 0, 0, 2, 2]
    assert got["cpu"]["numa_nodes"] == dict((str(n), "%d-%d" % (24 * n, 24 * n + 23)) for n in range(8))
    assert npus[0]["bus_id"] == "0000:c1:00.0" and npus[0]["hbm_total_mb"] == 65536
    # CQ found by name: a mailbox IRQ sits between SQ and CQ.
    assert npus[0]["irqs"]["cq"] == npus[0]["irqs"]["sq"] + 2


def test_a2_snapshot_topo_and_lscpu_are_the_real_outputs_verbatim():
    from npuops_testing import fixture_text
    from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot

    cmds = snapshot.load(os.path.join(SNAPSHOTS, "a2-910b3x8"))["commands"]
    assert cmds["npu-smi info -t topo"]["stdout"] == fixture_text("ascend/a2-910b3x8_npu-smi-info-t-topo.txt")
    assert cmds["lscpu"]["stdout"] == fixture_text(
        "ascend/kunpeng920-192c-8numa_lscpu_via-collect-env_vllm-ascend-198.txt"
    )
    assert cmds["npu-smi info"]["stdout"] == fixture_text("ascend/a2-910b3x8_npu-smi-info_v23.0.7.txt")


def test_a2_design_document_affinities_and_numa():
    """a2-designdoc: the vllm-ascend design document's layout (not a capture), marked so."""
    got = facts("a2-designdoc")
    npus = got["npus"]
    assert [n["affinity"] for n in npus] == ["144-167", "0-23", "144-167", "0-23", "96-119", "48-71", "96-119", "48-71"]
    assert [n["numa_node"] for n in npus] == [3, 0, 3, 0, 2, 1, 2, 1]
    assert got["cpu"]["numa_nodes"] == {"0": "0-47", "1": "48-95", "2": "96-143", "3": "144-191"}
    with open(os.path.join(SNAPSHOTS, "a2-designdoc", "snapshot.yml")) as handle:
        assert handle.readline().startswith("# a2-designdoc: NOT A CAPTURE")


def test_a3_dies_phy_ids_and_processes():
    got = facts("a3-16die")
    npus = got["npus"]
    assert [n["phy_id"] for n in npus] == list(range(16))
    assert [(n["npu_id"], n["chip_id"]) for n in npus[:3]] == [(0, 0), (0, 1), (1, 0)]
    assert all(n["affinity"] is None for n in npus)
    assert [p["pid"] for p in npus[4]["processes"]] == [2268928, 2268921, 2268924, 2268925]
    assert got["npu_map"]["7"] == {"0": "14", "1": "15"}


def test_950_processes_by_npu_id_and_no_affinity():
    npus = facts("a5-950")["npus"]
    assert npus[0]["processes"] == [{"pid": 2018733, "name": "VLLMWorker_TP", "memory_mb": 30212}]
    assert npus[2]["processes"] == [] and npus[0]["affinity"] is None


def test_dgx_gpus_and_nics():
    got = facts("dgx-a100")
    gpu0 = got["gpus"][0]
    assert (gpu0["bus_id"], gpu0["numa_node"], gpu0["affinity"]) == ("0000:07:00.0", 3, "48-63,176-191")
    assert gpu0["links"]["mlx5_0"] == "PXB" and gpu0["links"]["GPU1"] == "NV12"
    assert got["nics"][0] == {
        "name": "mlx5_0",
        "legend": "NIC0",
        "netdev": "ibp12s0",
        "bus_id": "0000:0c:00.0",
        "numa_node": 3,
        "irqs": [1025, 1026, 1027, 1028],  # its mlx5_comp* IRQs
        "card": "0000:0c:00",
        "card_nics": ["mlx5_0"],
        "ports": [{"port": 1, "state": "ACTIVE", "rate": 200, "link_layer": "InfiniBand"}],
        "state": "ACTIVE",
        "rate": 200,
        "link_layer": "InfiniBand",
    }
    storage = dict((n["name"], n) for n in got["nics"] if n["name"] in ("mlx5_8", "mlx5_9"))
    assert storage["mlx5_8"]["card_nics"] == ["mlx5_8", "mlx5_9"]  # two ports of one card
    assert (storage["mlx5_9"]["state"], storage["mlx5_9"]["link_layer"]) == ("DOWN", "Ethernet")
    assert [n["name"] for n in got["nics"]] == sorted(n["name"] for n in got["nics"])


def test_numa_off_and_cgroup_hosts():
    off = facts("h100-numaoff")
    assert off["numa_off"] is True and any("numa=off" in w for w in off["warnings"])
    cg = facts("h100-cgroup")
    assert [g["affinity"] for g in cg["gpus"]] == [None] * 4 + ["1"] * 4
    assert [g["numa_node"] for g in cg["gpus"]] == [0] * 4 + [1] * 4


def test_tools_env_irqbalance():
    got = facts("a2i-910b4x8")
    assert got["tools"] == {
        "npu-smi": True,
        "nvidia-smi": False,
        "migratepages": False,
        "taskset": True,
        "systemctl": True,
    }
    # no irqbalance environment file in the snapshot: nothing banned
    assert got["irqbalance"] == {
        "installed": True,
        "active": True,
        "config": None,
        "banned_irqs": [],
        "banned_cpus": None,
    }
    assert got["visible_devices"] == {"ASCEND_RT_VISIBLE_DEVICES": None, "CUDA_VISIBLE_DEVICES": None}
    assert facts("atlas300-310p")["irqbalance"]["active"] is False


def test_failed_and_garbage_sources_go_to_errors():
    io = FakeIO(
        {"/proc/self/status": "no such line\n", "/sys/devices/system/cpu/online": "0-7\n"},
        {
            "npu-smi info": {"rc": 0, "stdout": "garbage"},
            "npu-smi info -m": lambda argv, t: hostio.CommandResult(argv, rc=-9, timed_out=True, seconds=t),
            "lscpu": {"rc": 1, "stderr": "lscpu: failed\n"},
        },
        env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"},
    )
    got = topology.gather(io, timeout=2)
    sources = dict((e["source"], e["msg"]) for e in got["errors"])
    assert "no Cpus_allowed_list" in sources["/proc/self/status"]
    assert "no device table" in sources["npu-smi info"]
    assert sources["npu-smi info -m"] == "timed out after 2.0s"
    assert sources["lscpu"] == "exit code 1: lscpu: failed"
    # npu-smi answered with text no parser reads: an Ascend host whose NPUs are unknown
    assert got["cpu"]["allowed"] == "0-7" and got["vendor"] == "ascend" and got["npus"] == []
    assert "no NPU could be read" in sources["npu-smi"]
    assert got["visible_devices"]["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"


def test_no_cpu_information_raises_a_clear_error():
    with pytest.raises(NpuopsError, match="no CPU information"):
        topology.gather(FakeIO({}, {}))


def test_commands_run_concurrently_with_the_timeout():
    seen = []

    class Spy(FakeIO):
        def run_many(self, argvs, timeout=30):
            seen.append((len(argvs), timeout))
            return super(Spy, self).run_many(argvs, timeout)

    topology.gather(Spy({"/sys/devices/system/cpu/online": "0-3\n"}, {}), timeout=7)
    assert seen == [(len(topology.COMMANDS), 7)]


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_record_replay_identical(host, tmp_path):
    rec = hostio.RecordingHostIO(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))
    first = topology.gather(rec)
    rec.save(str(tmp_path))
    assert topology.gather(hostio.SnapshotHostIO(str(tmp_path))) == first


def test_record_replay_identical_on_this_machine(tmp_path):
    rec = hostio.RecordingHostIO(hostio.LiveHostIO())
    first = topology.gather(rec, timeout=20)
    rec.save(str(tmp_path))
    replayed = topology.gather(hostio.SnapshotHostIO(str(tmp_path)))
    assert replayed == first
    assert first["tools"]["npu-smi"] is False and first["npus"] == []


def _with_files(host, files, tmp_path):
    """The host's snapshot with extra files (a copy; the snapshot stays as recorded)."""
    import shutil

    root = tmp_path / host
    shutil.copytree(os.path.join(SNAPSHOTS, host), str(root))
    for path, body in files.items():
        target = root / "fs" / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    return topology.gather(hostio.SnapshotHostIO(str(root)))


def test_irqbalance_bans_read_from_the_config(tmp_path):
    ours = (
        "IRQBALANCE_BANNED_CPULIST=0-1\n# npuops.fleet banned IRQs: 1024 1026\n"
        'IRQBALANCE_ARGS="--journal --banirq=1024 --banirq=1026"\n'
    )
    got = _with_files("a2-910b3x8", {"/etc/default/irqbalance": ours}, tmp_path)
    assert got["irqbalance"] == {
        "installed": True,
        "active": True,
        "config": "/etc/default/irqbalance",
        "banned_irqs": [1024, 1026],
        "banned_cpus": "0-1",
    }
    # (the A2 capture's firmware names no package: that error is the snapshot's own)
    assert [e["source"] for e in got["errors"]] == [NO_PKG]


def test_irqbalance_sysconfig_first_and_bad_config_is_an_error(tmp_path):
    files = {
        "/etc/sysconfig/irqbalance": "IRQBALANCE_ARGS='-i 7\n",
        "/etc/default/irqbalance": "IRQBALANCE_ARGS=--banirq=9\n",
    }
    got = _with_files("a2-910b3x8", files, tmp_path)
    # the file npu_irq_affinity writes (the first that exists) is the one read
    assert got["irqbalance"]["config"] == "/etc/sysconfig/irqbalance"
    assert got["irqbalance"]["banned_irqs"] == [] and got["irqbalance"]["banned_cpus"] is None
    assert [e["source"] for e in got["errors"]] == [NO_PKG, "/etc/sysconfig/irqbalance"]
    assert "IRQBALANCE_ARGS cannot be parsed" in got["errors"][1]["msg"]


def test_irqbalance_config_of_every_snapshot_defaults_to_nothing_banned():
    for host in HOSTS:
        state = facts(host)["irqbalance"]
        assert (state["config"], state["banned_irqs"], state["banned_cpus"]) == (None, [], None)
