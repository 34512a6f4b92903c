# -*- coding: utf-8 -*-
"""Hostile live tools: a fake npu-smi (and friends) that hangs, leaves a child holding its
output pipe, exits leaving a background child, closes its pipes and runs on, prints garbage or
100 MB. Every command returns within its timeout plus a small margin (the only timed
assertions of the suite: they bound hangs), the process group is killed, and the facts list the
failure under the command's name."""

import os
import signal
import stat
import time

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import command, hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

TIMEOUT = 0.5
MARGIN = 1.5  # process start, the group kill and the reap, on a loaded 2-core CI machine

TOOLS = {
    "hang": "exec sleep 30",
    # the child holds stdout: the old code waited for it after killing the tool (30 s)
    "child-holds-pipe": "sleep 30; echo x",
    # exits at once, a background child keeps the pipe open (the old code never returned)
    "leave-background": "echo started; sleep 30 & echo $! > {pids}/bg",
    # a child in its own session: killed with the command (it holds the pipe)
    "escape-session": "setsid sleep 30 & echo $! > {pids}/setsid; echo started",
    "close-and-run": "exec >&- 2>&-; sleep 30",
    "garbage": "head -c 4096 /dev/urandom; exit 0",
    "flood": "head -c 100000000 /dev/zero",
    "flood-stderr": "head -c 100000000 /dev/zero >&2",
    "ignore-term": "trap '' TERM; sleep 30",
}


@pytest.fixture
def tools(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pids = tmp_path / "pids"
    pids.mkdir()
    for name, body in TOOLS.items():
        path = bindir / name
        path.write_text("#!/bin/sh\n" + body.format(pids=pids) + "\n")
        path.chmod(stat.S_IRWXU)
    yield bindir, pids
    for pidfile in pids.iterdir():  # children we started that left their group
        try:
            os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_command_is_bounded(tools, name):
    bindir, dummy = tools
    start = time.monotonic()
    res = command.run([str(bindir / name)], timeout=TIMEOUT)
    elapsed = time.monotonic() - start
    assert elapsed < TIMEOUT + MARGIN, (name, elapsed)
    if name in ("hang", "child-holds-pipe", "close-and-run", "ignore-term"):
        assert res.timed_out and not res.ok and "timed out" in res.failure()
    elif name in ("flood", "flood-stderr"):
        assert not res.ok and "larger than 8 MiB" in res.failure() and res.stdout == ""
    else:
        assert res.ok, res.failure()


def test_the_whole_group_is_killed(tools, tmp_path):
    bindir, pids = tools
    res = command.run([str(bindir / "leave-background")], timeout=TIMEOUT)
    assert res.ok and res.stdout == "started\n"
    bg = int((pids / "bg").read_text())
    for dummy in range(100):
        try:
            with open("/proc/%d/stat" % bg) as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break  # killed, not yet reaped by its new parent
        except (IOError, OSError):
            break  # killed and reaped
        time.sleep(0.02)
    else:
        raise AssertionError("the background child %d is still running" % bg)


@pytest.mark.parametrize("tool", ["hang", "child-holds-pipe", "leave-background", "garbage", "flood", "close-and-run"])
def test_gather_with_hostile_tools_is_bounded(tools, tmp_path, monkeypatch, tool):
    """All eight commands of the facts run concurrently, each one the hostile tool under its
    real name; the gather returns in about one timeout and names every failed command."""
    bindir, dummy = tools
    fake = tmp_path / "path"
    fake.mkdir()
    for name in ("npu-smi", "lscpu", "nvidia-smi", "systemctl"):
        os.symlink(str(bindir / tool), str(fake / name))
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % fake)
    root = tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "status").write_text("Cpus_allowed_list:\t0-3\n")
    start = time.monotonic()
    facts = topology.gather(hostio.LiveHostIO(str(root)), timeout=TIMEOUT)
    assert time.monotonic() - start < TIMEOUT + MARGIN
    assert facts["cpu"]["allowed"] == "0-3"
    failed = dict((e["source"], e["msg"]) for e in facts["errors"])
    if tool in ("hang", "child-holds-pipe", "close-and-run"):
        assert "timed out" in failed["npu-smi info"] and "timed out" in failed["lscpu"]
    elif tool == "flood":
        # eight floods at once on a loaded machine may reach the deadline before the cap; the
        # cap alone is asserted by test_every_command_is_bounded
        assert "larger than 8 MiB" in failed["lscpu"] or "timed out" in failed["lscpu"]


def test_hostile_host_root_reads_stay_inside(tmp_path):
    """Symlinks under a sandbox host_root resolve below it (an absolute target restarts at the
    root, '..' stops there); a FIFO is never opened for reading."""
    root = tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True)
    (root / "sys" / "devices" / "system" / "cpu").mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_text("Cpus_allowed_list:\t0-999\n")
    os.symlink(str(secret), str(root / "proc" / "self" / "status"))
    os.symlink(
        "../../../../../../../../" + str(secret).lstrip("/"),
        str(root / "sys" / "devices" / "system" / "cpu" / "online"),
    )
    os.mkfifo(str(root / "proc" / "interrupts"))
    io = hostio.LiveHostIO(str(root))
    assert io.read_text("/proc/self/status") is None
    assert io.read_text("/sys/devices/system/cpu/online") is None
    assert io.read_text("/proc/interrupts") is None
    assert io.realpath("/proc/self/status") is None
    (root / str(secret.parent).lstrip("/")).mkdir(parents=True)
    (root / str(secret).lstrip("/")).write_text("Cpus_allowed_list:\t0-1\n")
    assert io.read_text("/proc/self/status") == "Cpus_allowed_list:\t0-1\n"
    assert io.realpath("/proc/self/status") == str(secret)
