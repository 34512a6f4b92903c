# -*- coding: utf-8 -*-
"""A child that calls ``setsid`` leaves the command's process group: the timeout's group kill
used to leave it running. Real processes: the command's processes seen while it ran
and every process holding its output pipes are killed with the group."""

import os
import stat
import time

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import command

TOOLS = {
    # the shell exits at once; the setsid child (its own session) holds stdout
    "escape-and-exit": "setsid sleep 60 & echo $! > {pids}/escaped; echo started",
    # the shell stays: the timeout kills the group, the setsid child was seen in the tree
    "escape-and-hang": "setsid sh -c 'exec 1>&- 2>&-; exec sleep 60' & echo $! > {pids}/escaped; sleep 60",
    # a setsid child that closed its pipes and forks a grandchild of its own
    "escape-grandchild": "setsid sh -c 'exec 1>&- 2>&-; sleep 60 & echo $! > {pids}/escaped; wait' & sleep 60",
}


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (IOError, OSError):
        return False


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_a_setsid_child_is_killed_with_the_command(tmp_path, name):
    pids = tmp_path / "pids"
    pids.mkdir()
    tool = tmp_path / name
    tool.write_text("#!/bin/sh\n" + TOOLS[name].format(pids=pids) + "\n")
    tool.chmod(stat.S_IRWXU)
    escaped = None
    try:
        command.run([str(tool)], timeout=1.0)
        for dummy in range(100):
            if (pids / "escaped").is_file() and (pids / "escaped").read_text().strip():
                break
            time.sleep(0.02)
        escaped = int((pids / "escaped").read_text())
        with open("/proc/%d/stat" % os.getpid()) as handle:
            assert handle  # /proc is there: the test means something
        for dummy in range(100):
            if not _alive(escaped):
                break
            time.sleep(0.02)
        assert not _alive(escaped), "pid %d (%s) escaped the kill" % (escaped, name)
    finally:
        if escaped and _alive(escaped):
            os.kill(escaped, 9)


def _session(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[3])
    except (IOError, OSError):
        return None


def test_track_family_finds_a_setsid_descendant():
    import subprocess

    proc = subprocess.Popen(["sh", "-c", "setsid sleep 60 & wait"], start_new_session=True)
    try:
        family, sessions = {}, set()
        for dummy in range(250):
            command.track_family(proc.pid, family)
            # the forked child is in the family before it has called setsid: wait for both
            sessions = set(_session(pid) for pid in family) - set([None])
            if len(family) >= 2 and len(sessions) == 2:
                break
            time.sleep(0.02)
        assert proc.pid in family and len(sessions) == 2  # the shell's session and setsid's
    finally:
        family = command.track_family(proc.pid, {})
        for pid in family:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        proc.wait()
