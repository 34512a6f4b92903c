# -*- coding: utf-8 -*-
"""hostio.py: LiveHostIO.which, SnapshotHostIO replay, RecordingHostIO record -> save -> replay."""

import os
import sys

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, SnapshotError, UnsafePathError


def _make_snapshot(tmp_path):
    snapshot.save(
        str(tmp_path),
        hostname="node-7",
        arch="aarch64",
        captured_at="2026-01-01T00:00:00Z",
        env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"},
        commands={
            "npu-smi info -m": {"rc": 0, "stdout": "NPU ID  Chip ID\n0 0\n"},
            "broken": {"rc": 2, "stdout": "", "stderr": "driver wedged"},
            "gone": {"missing": True},
        },
        links={"/sys/class/infiniband/mlx5_0/device": "/sys/devices/pci0000:17/0000:18:00.0"},
        tools={"taskset": "/usr/bin/taskset", "migratepages": None},
        files={"/proc/self/status": "Cpus_allowed_list:\t0-3\n", "/sys/bus/pci/devices/0000:18:00.0/msi_irqs/77": ""},
        dirs=["/sys/class/empty"],
    )
    return hostio.SnapshotHostIO(str(tmp_path))


def test_snapshot_replay_answers(tmp_path):
    io = _make_snapshot(tmp_path)
    assert (io.hostname, io.arch) == ("node-7", "aarch64")
    assert io.read_text("/proc/self/status") == "Cpus_allowed_list:\t0-3\n"
    assert io.read_text("/proc/interrupts") is None
    assert io.listdir("/sys/bus/pci/devices/0000:18:00.0/msi_irqs") == ["77"]
    assert io.listdir("/sys/class/empty") == []
    assert io.listdir("/sys/class/none") is None
    assert io.exists("/proc/self/status") and not io.exists("/etc/passwd")
    assert io.realpath("/sys/class/infiniband/mlx5_0/device") == "/sys/devices/pci0000:17/0000:18:00.0"
    assert (
        io.realpath("/sys/class/infiniband/mlx5_0/device/numa_node") == "/sys/devices/pci0000:17/0000:18:00.0/numa_node"
    )
    assert io.realpath("/proc/self/status") == "/proc/self/status"
    assert io.realpath("/nope") is None
    assert io.getenv("ASCEND_RT_VISIBLE_DEVICES") == "0,1" and io.getenv("X") is None
    assert io.which("taskset") == "/usr/bin/taskset"
    assert io.which("migratepages") is None and io.which("npu-smi") is None
    ok = io.run(["npu-smi", "info", "-m"])
    assert ok.ok and ok.stdout.startswith("NPU ID")
    bad = io.run(["broken"])
    assert not bad.ok and bad.failure() == "exit code 2: driver wedged"
    for argv in (["gone"], ["never", "recorded"]):
        res = io.run(argv)
        assert res.missing and res.failure() == "command not found"
    assert [r.ok for r in io.run_many([["npu-smi", "info", "-m"], ["gone"]])] == [True, False]


@pytest.mark.parametrize("path", ["/../etc/passwd", "/proc/../../x", "relative/path", "/a/./b"])
def test_snapshot_refuses_escaping_paths(tmp_path, path):
    io = _make_snapshot(tmp_path)
    with pytest.raises(NpuopsError):
        io.read_text(path)


def test_snapshot_refuses_symlinks_inside_the_snapshot(tmp_path):
    io = _make_snapshot(tmp_path)
    os.symlink("/etc", str(tmp_path / "fs" / "etc"))
    with pytest.raises(SnapshotError, match="symlink"):
        io.read_text("/etc/hostname")


def test_snapshot_missing_dir_is_a_clear_error(tmp_path):
    with pytest.raises(SnapshotError, match="does not exist"):
        hostio.SnapshotHostIO(str(tmp_path / "nope"))


def test_live_which_finds_python_and_not_nonsense():
    live = hostio.LiveHostIO()
    assert live.which(os.path.basename(sys.executable)) or live.which("sh")
    assert live.which("definitely-not-installed-npuops") is None


def test_live_run_missing_and_timeout():
    live = hostio.LiveHostIO()
    assert live.run(["definitely-not-installed-npuops"]).missing
    res = live.run([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.3)
    assert res.timed_out and "timed out" in res.failure()


def test_recording_replays_identically(tmp_path):
    src = _make_snapshot(tmp_path / "src")
    rec = hostio.RecordingHostIO(src)
    calls = [
        ("read_text", "/proc/self/status"),
        ("read_text", "/proc/interrupts"),
        ("listdir", "/sys/bus/pci/devices/0000:18:00.0/msi_irqs"),
        ("listdir", "/sys/class/empty"),
        ("listdir", "/sys/none"),
        ("exists", "/proc/self/status"),
        ("exists", "/nope"),
        ("realpath", "/sys/class/infiniband/mlx5_0/device"),
        ("realpath", "/proc/self/status"),
        ("getenv", "ASCEND_RT_VISIBLE_DEVICES"),
        ("getenv", "UNSET"),
        ("which", "taskset"),
        ("which", "migratepages"),
    ]
    before = [getattr(rec, name)(arg) for name, arg in calls]
    runs = [["npu-smi", "info", "-m"], ["broken"], ["gone"]]
    before_runs = [(r.rc, r.stdout, r.stderr, r.missing) for r in rec.run_many(runs)]
    rec.save(str(tmp_path / "out"))
    replay = hostio.SnapshotHostIO(str(tmp_path / "out"))
    assert [getattr(replay, name)(arg) for name, arg in calls] == before
    assert [(r.rc, r.stdout, r.stderr, r.missing) for r in replay.run_many(runs)] == before_runs
    assert (replay.hostname, replay.arch) == ("node-7", "aarch64")


def test_recording_refuses_unsafe_paths():
    rec = hostio.RecordingHostIO(hostio.LiveHostIO())
    with pytest.raises(UnsafePathError):
        rec.read_text("/proc/../etc/shadow")


def test_overlay_reads_what_a_play_wrote_into_the_sandbox_over_the_snapshot(tmp_path):
    """The demo's closed loop: site.yml writes the irqbalance bans into the sandbox root; the
    facts read through the overlay see them, the rest still comes from the snapshot."""
    from npuops_testing import SNAPSHOTS

    snap = hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8"))
    root = tmp_path / "root"
    (root / "etc" / "default").mkdir(parents=True)
    (root / "etc" / "default" / "irqbalance").write_text('IRQBALANCE_ARGS="--banirq=1024"\n')
    overlay = hostio.OverlayHostIO(snap, str(root))
    assert overlay.read_text("/etc/default/irqbalance") == 'IRQBALANCE_ARGS="--banirq=1024"\n'
    assert overlay.read_text("/proc/interrupts") == snap.read_text("/proc/interrupts")
    assert overlay.run(["npu-smi", "info"]).stdout == snap.run(["npu-smi", "info"]).stdout
    assert "default" in overlay.listdir("/etc") and overlay.exists("/etc/default/irqbalance")
    assert overlay.hostname == snap.hostname


def _tree(root):
    """A small host tree: a file, a directory, a link to the directory, a dangling link."""
    (root / "etc" / "conf.d").mkdir(parents=True)
    (root / "etc" / "hostname").write_text("node-9\n")
    os.symlink("/etc/conf.d", str(root / "etc" / "linked"))
    os.symlink("/nowhere", str(root / "etc" / "dangling"))
    return root


def test_live_tree_reads_share_the_rules_of_one_root(tmp_path):
    io = hostio.LiveHostIO(str(_tree(tmp_path)))
    os.mkfifo(str(tmp_path / "etc" / "fifo"))
    assert io.read_text("/etc/hostname") == "node-9\n"
    # a directory, a FIFO and an absent file read as absent; a listing of a file is absent
    assert [io.read_text(p) for p in ("/etc", "/etc/conf.d", "/etc/fifo", "/etc/none")] == [None, None, None, None]
    assert io.listdir("/etc/hostname") is None and io.listdir("/etc/none") is None
    assert io.listdir("/") == ["etc"]
    assert io.listdir("/etc") == ["conf.d", "dangling", "fifo", "hostname", "linked"]
    assert io.listdir("/etc/linked") == []  # a link to a directory lists it
    # exists does not follow the last component: a dangling link exists, its target not
    assert io.exists("/etc/dangling") and not io.exists("/nowhere")
    assert io.exists("/") and io.exists("/etc/linked") and not io.exists("/etc/none/x")
    assert io.realpath("/etc/linked") == "/etc/conf.d" and io.realpath("/etc/none") is None


def test_snapshot_tree_reads_refuse_what_live_reads_as_absent(tmp_path):
    io = _make_snapshot(tmp_path)
    fs_dir = tmp_path / "fs"
    assert io.read_text("/proc/self") is None and io.read_text("/") is None
    assert io.listdir("/proc/self/status") is None
    assert io.exists("/") and io.listdir("/") == ["proc", "sys"]
    os.mkfifo(str(fs_dir / "proc" / "fifo"))
    with pytest.raises(SnapshotError, match="not a regular file"):
        io.read_text("/proc/fifo")
    (fs_dir / "sys" / "class" / "empty" / "a%3Ab").write_text("")  # an escaped name
    assert io.listdir("/sys/class/empty") == ["a:b"]
