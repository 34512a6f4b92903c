# -*- coding: utf-8 -*-
"""device_type.py: chip names, PCI ids and A3 shape -> A2|A3|A5|310P|910A|unknown."""

import pytest

from npuops_testing import fixture_text
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type, npu_smi


@pytest.mark.parametrize(
    "name, kind",
    [
        ("910B1", "A2"),
        ("910B2", "A2"),
        ("910B3", "A2"),
        ("910B4", "A2"),
        ("910B4-1", "A2"),
        ("Ascend 910B4", "A2"),
        ("Ascend910B3", "A2"),
        ("A2G1", "A2"),
        ("Ascend910", "A3"),
        ("910", "A3"),
        ("9391", "A3"),
        ("9392", "A3"),
        ("9372", "A3"),
        ("9362", "A3"),
        ("9381", "A3"),
        ("9382", "A3"),
        ("Ascend910_9392", "A3"),
        ("910C", "A3"),
        # vllm-ascend 0.30 (vllm_ascend/device/hardware.py) adds ascend910_9363 to its A3 names
        ("Ascend910_9363", "A3"),
        ("910_9363", "A3"),
        ("9363", "A3"),
        ("Ascend950PR", "A5"),
        ("Ascend950DT", "A5"),
        ("950", "A5"),
        ("310P3", "310P"),
        ("Ascend310P1", "310P"),
        ("I21", "310P"),
        ("910A", "910A"),
        ("Ascend 910A", "910A"),
        ("910ProB", "910A"),
        ("910PremiumA", "910A"),
        ("310B1", "unknown"),
        ("310", "unknown"),
        ("Mcu", None),
        ("xxx", None),
        ("", None),
        (None, None),
    ],
)
def test_type_of_name(name, kind):
    assert device_type.type_of_name(name) == kind


@pytest.mark.parametrize(
    "dev, kind",
    [
        ("0xd801", "910A"),
        ("0xD802", "A2"),
        ("d803", "A3"),
        ("0xd500", "310P"),
        ("0xd100", None),
        ("", None),
        (None, None),
    ],
)
def test_type_of_pci_device(dev, kind):
    assert device_type.type_of_pci_device(dev) == kind


@pytest.mark.parametrize(
    "kwargs, kind, evidence_word",
    [
        ({"chip_names": ["910B3"]}, "A2", "910B3"),
        # The chip name is stronger than the header text: npu-smi prints 'Chip  Phy-ID'
        # for 0xd803, but vllm-ascend's tests hold an A2 table with it.
        ({"chip_names": ["910B3"], "phy_id_column": True}, "A2", "Phy-ID"),
        ({"chip_names": ["xxx"], "chips_per_npu": 2, "distinct_bus_per_die": True}, "A3", "dies"),
        # 310P Duo: two chips per NPU sharing one bus id is not A3.
        ({"chip_names": ["310P3"], "chips_per_npu": 2, "distinct_bus_per_die": False}, "310P", "310P3"),
        ({"pci_device_ids": ["0xd801"]}, "910A", "d801"),
        ({"pci_device_ids": ["0xd803"]}, "A3", "d803"),
        ({"pci_device_ids": ["0xd500"]}, "310P", "d500"),
        ({"chip_names": ["Ascend950DT"], "phy_id_column": True}, "A5", "950"),
        ({"chip_names": ["xxx"]}, "unknown", "match no known type"),
        ({}, None, None),
    ],
)
def test_detect(kwargs, kind, evidence_word):
    got = device_type.detect(**kwargs)
    assert got["device_type"] == kind
    if evidence_word:
        assert any(evidence_word in e for e in got["evidence"])
    else:
        assert got["evidence"] == []


@pytest.mark.parametrize(
    "fixture, kind",
    [
        ("ascend/a2-910b3x8_npu-smi-info_v23.0.7.txt", "A2"),
        ("ascend/atlas800i-a2-910b4x8_npu-smi-info_v25.0.rc1.1.txt", "A2"),
        ("ascend/a3-16die_npu-smi-info_v25.3.rc1.txt", "A3"),
        ("ascend/a3-softshare-container_npu-smi-info.txt", "A3"),
        ("ascend/atlas800-9000-910a_npu-smi-info-m.txt", "910A"),
        ("ascend/atlas800i-a2-910b4x8_npu-smi-info-m.txt", "A2"),
    ],
)
def test_detect_on_real_fixtures(fixture, kind):
    text = fixture_text(fixture)
    if fixture.endswith("-m.txt"):
        names = [r["name"] for r in npu_smi.parse_map(text)["rows"]]
        got = device_type.detect(chip_names=names)
    else:
        info = npu_smi.parse_info(text)
        got = device_type.detect(
            chip_names=[c["name"] for c in info["chips"]], phy_id_column="Phy-ID" in (info["chip_column"] or "")
        )
    assert got["device_type"] == kind


# ---- evidence by strength: PCI id > chip name > dies per NPU > header text --------


@pytest.mark.parametrize(
    "kwargs, kind, loser",
    [
        # the 910B3 / 0xd802 host whose table carries the 'Chip  Phy-ID' header: A2, not A3
        ({"chip_names": ["910B3"], "pci_device_ids": ["0xd802"], "phy_id_column": True}, "A2", "'Chip  Phy-ID' column"),
        # the PCI id beats the chip name
        ({"chip_names": ["Ascend910"], "pci_device_ids": ["0xd802"]}, "A2", "chip name 'Ascend910'"),
        ({"chip_names": ["910B3"], "board_device_ids": ["0xD803"]}, "A3", "chip name '910B3'"),
        # the chip name beats two dies per NPU
        ({"chip_names": ["910B4"], "chips_per_npu": 2, "distinct_bus_per_die": True}, "A2", "2 dies per NPU"),
        # dies per NPU beat the header text: nothing to warn, both say A3
        ({"chips_per_npu": 2, "distinct_bus_per_die": True, "phy_id_column": True}, "A3", None),
    ],
)
def test_strongest_evidence_wins_and_a_warning_names_both(kwargs, kind, loser):
    got = device_type.detect(**kwargs)
    assert got["device_type"] == kind
    if loser is None:
        assert got["warnings"] == []
    else:
        assert len(got["warnings"]) == 1
        warning = got["warnings"][0]
        assert warning.startswith("device type %s from " % kind) and loser in warning
        assert "wins over" in warning


def test_same_strength_disagreement_is_a_warning():
    got = device_type.detect(pci_device_ids=["0xd802", "0xd803"])
    assert got["device_type"] == "A3"
    assert "same strength disagrees" in got["warnings"][0]


def test_board_device_id_is_pci_evidence():
    text = fixture_text("ascend/atlas800-9000-910a_npu-smi-info-i0-t-board.txt")
    board = npu_smi.parse_board(text)
    got = device_type.detect(chip_names=["xxx"], board_device_ids=[board["pci_device_id"]])
    assert got["device_type"] == "910A"
    assert "npu-smi info -t board PCI device 19e5:d801 -> 910A" in got["evidence"]


def test_a2_table_with_phy_id_header_from_the_real_capture():
    """The real A2 table (910B3, 0xd802) with its 'Chip' header cell rewritten to 'Chip  Phy-ID',
    as in the A2 table of vllm-ascend's tests: the chip name and the PCI id say A2."""
    text = fixture_text("ascend/a2-910b3x8_npu-smi-info_v23.0.7.txt")
    text = text.replace("| Chip                      |", "| Chip  Phy-ID              |", 1)
    info = npu_smi.parse_info(text)
    assert info["chip_column"] == "Chip Phy-ID"
    got = device_type.detect(
        chip_names=[c["name"] for c in info["chips"]],
        pci_device_ids=["0xd802"],
        phy_id_column="Phy-ID" in info["chip_column"],
    )
    assert got["device_type"] == "A2"
    assert got["warnings"] == [
        "device type A2 from PCI device 19e5:d802 wins over A3 from 'Chip  Phy-ID' column (weaker evidence)"
    ]
