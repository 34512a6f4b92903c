# -*- coding: utf-8 -*-
"""``npu-smi info -t topo`` of PCIe cards labels its rows by NPU (card) id: the CPU Affinity of
row NPU<n> belongs to every chip of card n, whose logic ids come from ``npu-smi info -m``."""

import os
import shutil

from npuops_testing import SNAPSHOTS
from npuops_testing.module_harness import facts_of
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

EVEN = ",".join(str(c) for c in range(0, 128, 2))
ODD = ",".join(str(c) for c in range(1, 128, 2))


def _cards_2_and_5(tmp_path, topo_rows):
    """The atlas300-310p host (two 300I Duo cards, 4 chips) with its cards numbered 2 and 5,
    as npu-smi numbers cards in the slots they sit in (nvtop#421 shows NPU 2 on a Duo)."""
    path = str(tmp_path / "host")
    shutil.copytree(os.path.join(SNAPSHOTS, "atlas300-310p"), path)
    info = os.path.join(path, "cmd", "npu-smi-info.txt")
    with open(info) as handle:
        lines = handle.read().split("\n")
    out, card = [], {"0": "2", "1": "5"}
    for number, line in enumerate(lines):
        if line.startswith("| 0     310P3") or line.startswith("| 1     310P3"):
            line = "| %s%s" % (card[line[2]], line[3:])
        out.append(line)
    with open(info, "w") as handle:
        handle.write("\n".join(out))
    with open(os.path.join(path, "cmd", "npu-smi-info--m.txt"), "w") as handle:
        handle.write(
            "NPU ID  Chip ID  Chip Logic ID  Chip Name\n2 0 0 Ascend 310P3\n"
            "2 1 1 Ascend 310P3\n5 0 2 Ascend 310P3\n5 1 3 Ascend 310P3\n"
            "2 2 - Mcu\n5 2 - Mcu\n"
        )
    with open(os.path.join(path, "cmd", "npu-smi-info--t-topo.txt"), "w") as handle:
        handle.write("\t   NPU2       NPU5       CPU Affinity\n" + "".join(topo_rows))
    return topology.gather(hostio.SnapshotHostIO(path))


def test_card_rows_give_every_chip_its_cards_affinity(tmp_path):
    facts = _cards_2_and_5(
        tmp_path, ["NPU2       X          SYS        %s\n" % EVEN, "NPU5       SYS        X          %s\n" % ODD]
    )
    got = [(n["npu_id"], n["logic_id"], (n["affinity"] or "")[:6]) for n in facts["npus"]]
    assert got == [(2, 0, "0,2,4,"), (2, 1, "0,2,4,"), (5, 2, "1,3,5,"), (5, 3, "1,3,5,")]
    assert any("labels its rows by NPU id (NPU2,NPU5)" in w for w in facts["warnings"])


def test_logic_id_rows_are_read_as_before():
    facts = facts_of("atlas300-310p")
    assert [n["affinity"][:6] for n in facts["npus"]] == ["0,2,4,", "0,2,4,", "1,3,5,", "1,3,5,"]
    assert not any("labels its rows" in w for w in facts["warnings"])
    a2 = facts_of("a2-910b3x8")
    assert [n["affinity"] for n in a2["npus"]][:2] == ["144-167", "144-167"]
