# -*- coding: utf-8 -*-
"""Fuzz: recorded snapshots with mutated files, and snapshots laid out to read outside
themselves, replayed through SnapshotHostIO -> topology.gather -> make_plan (both policies) ->
the CPU map. Every outcome is facts and plans or the collection's own error; nothing outside
the snapshot directory is ever read; save_snapshot never writes through a planted link."""

import os
import shutil
import stat
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.module_utils.render import cpumap
from npuops_testing import SNAPSHOTS
from npuops_testing.hostile import SPICE, files_under, fuzz_examples, mutated_text

HOSTS = ("a2-910b3x8", "a3-16die", "atlas300-310p", "dgx-a100", "h100-numaoff", "x86-none")
EXAMPLES = fuzz_examples(50)
SECRET = "root:$6$outside-the-snapshot:19000:0:99999:7:::\n"


def _replay(directory):
    """Everything a module does with a snapshot; returns the facts or the NpuopsError."""
    try:
        facts = topology.gather(hostio.SnapshotHostIO(directory))
    except NpuopsError as err:
        return err
    for policy in ("strict", "vllm_ascend"):
        try:
            plan = dispatch.make_plan(facts, policy=policy)
            cpumap.render_text(plan, facts)
        except NpuopsError:
            pass
    return facts


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    base = tmp_path_factory.mktemp("snapshots")
    out = {}
    for host in HOSTS:
        src = os.path.join(SNAPSHOTS, host)
        if not os.path.isfile(os.path.join(src, "snapshot.yml")):
            continue
        dest = str(base / host)
        shutil.copytree(src, dest, symlinks=True)
        out[host] = (dest, [p for p in files_under(dest) if not p.endswith(snapshot.KEEP)])
    if not out:
        pytest.fail("no recorded host in tests/snapshots")
    return out


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_mutated_snapshots_replay_or_fail_clearly(copies, data):
    host = data.draw(st.sampled_from(sorted(copies)))
    directory, files = copies[host]
    chosen = sorted(set(data.draw(st.lists(st.sampled_from(files), min_size=1, max_size=3))))
    saved = {}
    try:
        for path in chosen:
            with open(path, "rb") as handle:
                saved[path] = handle.read()
            text = saved[path].decode("utf-8", "replace") or data.draw(st.sampled_from(SPICE))
            with open(path, "w") as handle:
                handle.write(data.draw(mutated_text([text])))
        start = time.monotonic()
        _replay(directory)
        assert time.monotonic() - start < 5.0
    finally:
        for path, content in saved.items():
            with open(path, "wb") as handle:
                handle.write(content)


# -- hostile-input regressions: reads outside, special files, blow-ups ---------------------------
def _minimal(tmp_path, commands="", files=None):
    """A small valid snapshot; ``files``: host path -> text."""
    snap = tmp_path / "snap"
    snapshot.save(
        str(snap),
        hostname="h",
        arch="x86_64",
        captured_at="2026-01-01T00:00:00Z",
        commands={"lscpu": {"rc": 0, "stdout": "Architecture: x86_64\nCPU(s): 4\nOn-line CPU(s) list: 0-3\n"}},
        files=dict(
            {
                "/proc/self/status": "Cpus_allowed_list:\t0-3\n",
                "/sys/devices/system/cpu/online": "0-3\n",
                "/sys/devices/system/node/node0/cpulist": "0-3\n",
            },
            **(files or {}),
        ),
    )
    if commands:
        with open(str(snap / "snapshot.yml"), "a") as handle:
            handle.write(commands)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shadow").write_text(SECRET)
    os.chmod(str(outside / "shadow"), 0o600)
    return snap, outside


def _read_everything(directory):
    """Facts of a replay, or the error; and every text the replay could expose."""
    result = _replay(str(directory))
    return result, repr(result)


@pytest.mark.parametrize(
    "layout",
    [
        "cmd file linked outside",
        "cmd dir linked outside",
        "fs dir linked outside",
        "relative ../.. link in fs",
        "status linked outside",
        "snapshot.yml linked outside",
    ],
)
def test_no_symlink_leads_outside(tmp_path, layout):
    snap, outside = _minimal(tmp_path)
    shadow = str(outside / "shadow")
    assert 'stdout_file: "cmd/lscpu.txt"' in (snap / "snapshot.yml").read_text()
    if layout == "cmd file linked outside":
        os.unlink(str(snap / "cmd" / "lscpu.txt"))
        os.symlink(shadow, str(snap / "cmd" / "lscpu.txt"))
    elif layout == "cmd dir linked outside":
        os.unlink(str(snap / "cmd" / "lscpu.txt"))
        shutil.move(str(snap / "cmd"), str(outside / "cmd"))
        os.symlink(shadow, str(outside / "cmd" / "lscpu.txt"))
        os.symlink(str(outside / "cmd"), str(snap / "cmd"))
    elif layout == "fs dir linked outside":
        shutil.move(str(snap / "fs"), str(outside / "fs"))
        os.symlink(str(outside / "fs"), str(snap / "fs"))
    elif layout == "relative ../.. link in fs":
        os.unlink(str(snap / "fs" / "sys" / "devices" / "system" / "cpu" / "online"))
        os.symlink(
            "../../../../../../outside/shadow", str(snap / "fs" / "sys" / "devices" / "system" / "cpu" / "online")
        )
    elif layout == "status linked outside":
        os.unlink(str(snap / "fs" / "proc" / "self" / "status"))
        os.symlink(shadow, str(snap / "fs" / "proc" / "self" / "status"))
    else:
        shutil.move(str(snap / "snapshot.yml"), str(outside / "snapshot.yml"))
        os.symlink(str(outside / "snapshot.yml"), str(snap / "snapshot.yml"))
    result, shown = _read_everything(snap)
    assert isinstance(result, SnapshotError), result
    assert "outside-the-snapshot" not in shown
    assert "symlink" in str(result)


@pytest.mark.parametrize("kind", ["fifo stdout_file", "fifo in fs", "device in fs"])
def test_special_files_refused_without_blocking(tmp_path, kind):
    snap, dummy = _minimal(tmp_path)
    if kind == "fifo stdout_file":
        os.unlink(str(snap / "cmd" / "lscpu.txt"))
        os.mkfifo(str(snap / "cmd" / "lscpu.txt"))
    else:
        target = str(snap / "fs" / "proc" / "self" / "status")
        os.unlink(target)
        if kind == "fifo in fs":
            os.mkfifo(target)
        else:
            try:
                os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero
            except (OSError, PermissionError):
                pytest.skip("cannot create a device node here")
    start = time.monotonic()
    result = _replay(str(snap))
    assert time.monotonic() - start < 5.0
    assert isinstance(result, SnapshotError) and "not a regular file" in str(result), result


@pytest.mark.parametrize(
    "path, text, words",
    [
        # before the read bounds: 100 s / 1.6 GB / MemoryError
        ("/sys/devices/system/cpu/online", "0-99999999\n", "beyond the kernel's limit"),
        ("/sys/devices/system/cpu/online", "0-19999999\n", "beyond the kernel's limit"),
        ("/proc/self/status", "Cpus_allowed_list:\t0-4294967295\n", "CPU id 4294967295"),
    ],
)
def test_huge_cpulists_are_reported_fast(tmp_path, path, text, words):
    snap, dummy = _minimal(tmp_path, files={path: text})
    start = time.monotonic()
    result = _replay(str(snap))
    assert time.monotonic() - start < 2.0
    assert words in repr(result)


@pytest.mark.parametrize(
    "yml, words",
    [
        ("schema: 1\ncommands:\n  lscpu: {rc: 0, stdout: x, seconds: abc}\n", "seconds must be a number"),
        ('schema: 1\ncommands:\n  lscpu: {missing: "no"}\n', "missing must be true or false"),
        ("schema: 1\ncommands:\n  lscpu: {rc: 0, timed_out: 1}\n", "timed_out must be true or false"),
        ("schema: true\n", "unsupported schema True"),
        ("schema: 1\ncommands:\n  lscpu: {rc: %s}\n" % ("9" * 5000), "rc must be an integer"),
        ("schema: 1\nenv: " + "[" * 3000 + "]" * 3000 + "\n", "nested deeper than 32"),
        ('{\n"schema": 1, "hostname": ' + "[" * 5000 + "]" * 5000 + "}", "line 1"),
    ],
)
def test_snapshot_yml_values_are_checked(tmp_path, yml, words):
    (tmp_path / "snapshot.yml").write_text(yml)
    with pytest.raises(SnapshotError, match=words):
        hostio.SnapshotHostIO(str(tmp_path))


def test_oversize_file_refused(tmp_path, monkeypatch):
    from ansible_collections.npuops.fleet.plugins.module_utils.host import paths

    snap, dummy = _minimal(tmp_path, files={"/proc/interrupts": "CPU0\n" + "x" * 5000})
    monkeypatch.setattr(paths, "MAX_FILE_BYTES", 1024)
    monkeypatch.setattr(paths.read_at, "__defaults__", (1024, False))
    with pytest.raises(SnapshotError, match="larger than"):
        hostio.SnapshotHostIO(str(snap)).read_text("/proc/interrupts")


# -- save_snapshot ----------------------------------------------------------------------------
def _recorder(tmp_path):
    snap, outside = _minimal(tmp_path)
    rec = hostio.RecordingHostIO(hostio.SnapshotHostIO(str(snap)))
    topology.gather(rec)
    return rec, outside


def test_save_never_writes_through_a_planted_link(tmp_path):
    rec, outside = _recorder(tmp_path)
    dest = tmp_path / "saved"
    (dest / "cmd").mkdir(parents=True)
    (dest / "fs" / "proc" / "self").mkdir(parents=True)
    victim = outside / "shadow"
    os.symlink(str(victim), str(dest / "cmd" / "lscpu.txt"))
    os.symlink(str(victim), str(dest / "fs" / "proc" / "self" / "status"))
    os.symlink(str(victim), str(dest / "snapshot.yml"))
    rec.save(str(dest))
    assert victim.read_text() == SECRET and stat.S_IMODE(victim.stat().st_mode) == 0o600
    for name in ("snapshot.yml", "fs/proc/self/status"):
        assert not os.path.islink(str(dest / name))
    assert hostio.SnapshotHostIO(str(dest)).read_text("/proc/self/status") == "Cpus_allowed_list:\t0-3\n"


@pytest.mark.parametrize("plant", ["cmd", "fs", "fs/proc"])
def test_save_refuses_a_linked_directory(tmp_path, plant):
    rec, outside = _recorder(tmp_path)
    dest = tmp_path / "saved"
    (dest / os.path.dirname(plant)).mkdir(parents=True, exist_ok=True)
    os.symlink(str(outside), str(dest / plant))
    rec.commands["multi"] = hostio.CommandResult(["multi"], stdout="a\nb\nc\n")
    with pytest.raises(SnapshotError, match="is a symlink"):
        rec.save(str(dest))
    assert sorted(os.listdir(str(outside))) == ["shadow"]


def test_save_refuses_a_directory_others_control(tmp_path):
    rec, dummy = _recorder(tmp_path)
    dest = tmp_path / "theirs"
    dest.mkdir()
    os.chown(str(dest), 4242, 4242)
    with pytest.raises(NpuopsError, match="belongs to uid 4242"):
        rec.save(str(dest))
    assert os.listdir(str(dest)) == []


def test_saved_paths_hold_no_colon_and_old_layout_still_reads(tmp_path):
    files = {"/sys/bus/pci/devices/0000:c1:00.0/numa_node": "3\n", "/etc/100%": "x\n"}
    snap, dummy = _minimal(tmp_path, files=files)
    names = [n for dummy_d, dirs, found in os.walk(str(snap)) for n in dirs + found]
    assert not [n for n in names if ":" in n]
    assert "0000%3Ac1%3A00.0" in names and "100%25" in names
    io = hostio.SnapshotHostIO(str(snap))
    assert io.read_text("/sys/bus/pci/devices/0000:c1:00.0/numa_node") == "3\n"
    assert io.listdir("/sys/bus/pci/devices") == ["0000:c1:00.0"]
    assert io.read_text("/etc/100%") == "x\n"
    # an old-style (unescaped) tree reads the same
    os.rename(str(snap / "fs/sys/bus/pci/devices/0000%3Ac1%3A00.0"), str(snap / "fs/sys/bus/pci/devices/0000:c1:00.0"))
    io = hostio.SnapshotHostIO(str(snap))
    assert io.read_text("/sys/bus/pci/devices/0000:c1:00.0/numa_node") == "3\n"
    assert io.listdir("/sys/bus/pci/devices") == ["0000:c1:00.0"]
    assert snapshot.fs_files(str(snap))["/sys/bus/pci/devices/0000:c1:00.0/numa_node"] == "3\n"
