# -*- coding: utf-8 -*-
"""Hostile host output in the facts: a /proc/interrupts past the 64 MiB read bound
gives partial facts with an error entry (it failed the whole gather), and 4,096 repeated NPU
rows of npu-smi are one NPU with an error entry (they were 4,096 NPUs). Recorded snapshots
copied and edited; the real files replayed."""

import os
import re
import shutil


from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from npuops_testing import SNAPSHOTS

A2 = os.path.join(SNAPSHOTS, "a2-910b3x8")


def _copy(tmp_path):
    dest = tmp_path / "snap"
    shutil.copytree(A2, str(dest))
    return dest


def test_a_64_mib_proc_interrupts_gives_partial_facts(tmp_path):
    snap = _copy(tmp_path)
    clean = topology.gather(hostio.SnapshotHostIO(str(snap)))
    path = snap / "fs" / "proc" / "interrupts"
    line = b" 999:          0          0   ITS-MSI 1 Edge      x\n"
    with open(str(path), "ab") as handle:
        handle.write(line * ((64 << 20) // len(line) + 1))
    facts = topology.gather(hostio.SnapshotHostIO(str(snap)))
    (error,) = [e for e in facts["errors"] if e["source"] == "/proc/interrupts"]
    assert "larger than 64 MiB" in error["msg"] and "NPU IRQs are not known" in error["msg"]
    assert [n["logic_id"] for n in facts["npus"]] == [n["logic_id"] for n in clean["npus"]]
    assert facts["cpu"] == clean["cpu"]
    assert all(n["irqs"]["sq"] is None for n in facts["npus"])


def test_repeated_npu_rows_are_one_npu_each(tmp_path):
    snap = _copy(tmp_path)
    info = snap / "cmd" / "npu-smi-info.txt"
    text = info.read_text()
    # the first NPU's two table lines and their separator, 4,096 times
    block = re.search(r"(\| 0 +910B3 .*?\n.*?\n\+=+.*?\n)", text).group(1)
    info.write_text(text.replace(block, block * 4096, 1))
    facts = topology.gather(hostio.SnapshotHostIO(str(snap)))
    assert sorted(n["logic_id"] for n in facts["npus"]) == list(range(8))
    (error,) = [e for e in facts["errors"] if "duplicate NPU rows" in e["msg"]]
    assert error["msg"].startswith("4095 duplicate NPU rows left out (NPU id/chip id 0/0")
