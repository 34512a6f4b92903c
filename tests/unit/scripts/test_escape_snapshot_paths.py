# -*- coding: utf-8 -*-
"""scripts/escape_snapshot_paths.py: an old-style snapshot (':' in fs/ names) is renamed in
place to the escaped form, reads the same before and after, and a second run changes nothing."""

import os

import escape_snapshot_paths

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio


def _old_style(tmp_path):
    snap = tmp_path / "snaps" / "h1"
    dev = snap / "fs" / "sys" / "bus" / "pci" / "devices" / "0000:c1:00.0"
    (dev / "msi_irqs").mkdir(parents=True)
    (dev / "msi_irqs" / "77").write_text("")
    (dev / "numa_node").write_text("3\n")
    (snap / "fs" / "etc").mkdir()
    (snap / "fs" / "etc" / "a:b%c").write_text("x\n")
    (snap / "snapshot.yml").write_text("schema: 1\nhostname: h1\n")
    return snap


def _answers(snap):
    io = hostio.SnapshotHostIO(str(snap))
    return (
        io.listdir("/sys/bus/pci/devices"),
        io.listdir("/sys/bus/pci/devices/0000:c1:00.0/msi_irqs"),
        io.read_text("/sys/bus/pci/devices/0000:c1:00.0/numa_node"),
        io.read_text("/etc/a:b%c"),
        io.listdir("/etc"),
    )


def test_escape_in_place_reads_the_same_and_is_idempotent(tmp_path, capsys):
    snap = _old_style(tmp_path)
    before = _answers(snap)
    top = str(tmp_path / "snaps")
    assert escape_snapshot_paths.main(["--check", top]) == 1
    assert escape_snapshot_paths.main([top]) == 0
    names = [n for dummy, dirs, files in os.walk(str(snap)) for n in dirs + files]
    assert not [n for n in names if ":" in n]
    assert "0000%3Ac1%3A00.0" in names and "a%3Ab%25c" in names
    assert _answers(snap) == before == (["0000:c1:00.0"], ["77"], "3\n", "x\n", ["a:b%c"])
    assert escape_snapshot_paths.main(["--check", top]) == 0
    assert escape_snapshot_paths.main([str(snap)]) == 0
    assert _answers(snap) == before
    assert "0 name(s) escaped" in capsys.readouterr().out
