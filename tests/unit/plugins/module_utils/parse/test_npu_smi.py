# -*- coding: utf-8 -*-
"""npu_smi.py on the vllm-ascend research-note samples, bad input and fuzzed real text.

The real fixtures -> expected values tables (info, -m, -t topo, -t board/health/usages) are
cases/npu_smi.yml, run by test_fixture_cases.py."""

import glob
import os

import pytest
from hypothesis import given, settings, strategies as st

from npuops_testing import FIXTURES, fixture_text
from ansible_collections.npuops.fleet.plugins.module_utils.parse import npu_smi
from ansible_collections.npuops.fleet.plugins.module_utils.parse import pci
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError


def test_info_a3_process_rows():
    got = npu_smi.parse_info(fixture_text("ascend/a3-16die_npu-smi-info_v25.3.rc1.txt"))
    assert got["process_layout"] == "npu_chip"
    assert got["processes"][0] == {"npu_id": 2, "chip_id": 0, "pid": 2268928, "name": "", "memory_mb": 126}
    assert sorted(set((p["npu_id"], p["chip_id"]) for p in got["processes"])) == [
        (2, 0),
        (2, 1),
        (3, 0),
        (3, 1),
        (4, 0),
        (4, 1),
        (5, 0),
        (5, 1),
    ]
    assert got["processes"][-1] == {"npu_id": 5, "chip_id": 1, "pid": 2909355, "name": "", "memory_mb": 52660}


def test_info_without_process_table_has_no_layout():
    got = npu_smi.parse_info(fixture_text("ascend/a2-910b3x8_npu-smi-info_v24.1.rc1.b030.txt"))
    assert got["process_layout"] is None and got["processes"] == []


# vllm-ascend research note section 2.3 process-table samples -> (layout, [(npu, chip, pid, name, mem)])
PROCESS_SAMPLES = [
    (
        "| NPU Chip | Process id |\n| 0 0 | 1234 | vllm | 56000 |\n| 1 0 | 1235 | vllm | 56000 |\n",
        "npu_chip",
        [(0, 0, 1234, "vllm", 56000), (1, 0, 1235, "vllm", 56000)],
    ),
    (
        "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |\n"
        "| 0       0                 | 3428811       | python3.10               | 56600                   |\n"
        "| 1       0                 | 3428818       | python3.10               | 56474                   |\n",
        "npu_chip",
        [(0, 0, 3428811, "python3.10", 56600), (1, 0, 3428818, "python3.10", 56474)],
    ),
    (
        "| NPU ID                    | Process id    | Process name             | Process memory(MB)       |\n"
        "| 0                          | 2018733       | VLLMWorker_TP            | 30212                   |\n"
        "| 1                          | 2018734       | VLLMWorker_TP            | 30212                   |\n",
        "npu_id",
        [(0, None, 2018733, "VLLMWorker_TP", 30212), (1, None, 2018734, "VLLMWorker_TP", 30212)],
    ),
    (
        "ignored before header\n| NPU Chip | Process id |\n| malformed |\n| xx yy | 1001 | vllm |\n"
        "| 0 0 | 1234 | vllm |\n| 0 1 | 2345 | vllm |\n",
        "npu_chip",
        [(0, 0, 1234, "vllm", None), (0, 1, 2345, "vllm", None)],
    ),
]


@pytest.mark.parametrize("text, layout, rows", PROCESS_SAMPLES)
def test_info_process_samples_of_the_reference(text, layout, rows):
    got = npu_smi.parse_info(text)
    assert got["process_layout"] == layout and got["chips"] == []
    assert [(p["npu_id"], p["chip_id"], p["pid"], p["name"], p["memory_mb"]) for p in got["processes"]] == rows


# Research note section 2.2 samples (header spacing as in the reference tests).
MAP_SAMPLES = [
    (
        "NPU ID  Chip ID  Chip Logic ID  Chip Name\n0 0 0 Ascend\n0 1 - Mcu\n1 0 1 Ascend\n",
        {"0": {"0": "0"}, "1": {"0": "1"}},
        [None, None, None],
    ),
    (
        "NPU ID  Chip ID  Chip Logic ID  Chip Phy-ID Chip Name\n0 0 0 0 Ascend\n0 1 1 1 Ascend\n0 2 - - Mcu\n",
        {"0": {"0": "0", "1": "1"}},
        [0, 1, None],
    ),
    (
        "NPU ID  Chip ID  Chip Logic ID  Chip Name\n8 0 0 Ascend\n8 1 - Mcu\n9 0 1 Ascend\n",
        {"8": {"0": "0"}, "9": {"0": "1"}},
        [None, None, None],
    ),
    (
        "NPU ID  Slot ID  Chip ID  Chip Phy-ID  Chip Name\n0 0 0 0 Ascend950DT\n1 1 0 1 Ascend950DT\n"
        "2 2 0 2 Ascend950DT\n",
        {"0": {"0": "0"}, "1": {"0": "1"}, "2": {"0": "2"}},
        [0, 1, 2],
    ),
]


@pytest.mark.parametrize("text, expected, phys", MAP_SAMPLES)
def test_map_reference_samples(text, expected, phys):
    got = npu_smi.parse_map(text)
    assert got["map"] == expected
    assert [r["phy_id"] for r in got["rows"]] == phys


def test_map_950_uses_npu_id_as_logic_and_keeps_slot():
    got = npu_smi.parse_map(MAP_SAMPLES[3][0])
    assert [(r["logic_id"], r["slot_id"], r["name"]) for r in got["rows"]] == [
        (0, 0, "Ascend950DT"),
        (1, 1, "Ascend950DT"),
        (2, 2, "Ascend950DT"),
    ]


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("\n\n", "empty"),
        ("Chip ID  Chip Name\n0 x\n", "NPU ID"),
    ],
)
def test_map_bad(text, words):
    with pytest.raises(ParseError) as err:
        npu_smi.parse_map(text)
    assert words in str(err.value) and "npu-smi info -m" in str(err.value)


# Research note section 2.4 samples.
TOPO_SAMPLES = [
    ("NPU0 X HCCS HCCS HCCS HCCS HCCS HCCS HCCS 0-3\n", {"0": "0-3"}),
    ("HEADER\nNPU Chip Affinity\nnot-an-npu row\nNPU0 x x x 2-3\n", {"0": "2-3"}),
    (
        "       NPU0       NPU1       NIC0\nNPU0       X          UB         NA\n"
        "NPU1       UB         X          NA\nNIC0       NA         NA         X\n",
        {},
    ),
    ("\tPhy-ID0\tPhy-ID1\nPhy-ID0\tX\tSIO\nPhy-ID1\tSIO\tX\n", {}),
]


@pytest.mark.parametrize("text, affinity", TOPO_SAMPLES)
def test_topo_samples(text, affinity):
    assert npu_smi.parse_topo(text)["affinity"] == affinity


def test_topo_950_matrix_links():
    got = npu_smi.parse_topo(TOPO_SAMPLES[2][0])
    assert got["links"]["NPU0"] == {"NPU0": "X", "NPU1": "UB", "NIC0": "NA"}


def test_topo_header_at_column_0_keeps_the_matrix():
    # the real A2 capture with its header row's leading blanks lost (as pasted in some posts)
    lines = fixture_text("ascend/a2-910b3x8_npu-smi-info-t-topo.txt").split("\n")
    header = [i for i, line in enumerate(lines) if line.split()[:2] == ["NPU0", "NPU1"]][0]
    lines[header] = lines[header].lstrip()
    got = npu_smi.parse_topo("\n".join(lines))
    want = npu_smi.parse_topo(fixture_text("ascend/a2-910b3x8_npu-smi-info-t-topo.txt"))
    assert got["columns"] == want["columns"] and got["columns"][:2] == ["NPU0", "NPU1"]
    assert got["links"] == want["links"] and got["links"]["NPU0"]["NPU1"] == "HCCS"
    assert got["affinity"] == want["affinity"]


def test_info_masked_bus_ids_keep_their_chips():
    # the real A2 table with every Bus-Id masked as posts print it: the 8 chips stay, bus None,
    # and the warning names the cell (it used to reject the table as "NPU row without ...")
    import re

    text = re.sub(
        r"0000:[0-9A-Fa-f]{2}:00\.0", "0000:xx:00.0", fixture_text("ascend/a2-910b3x8_npu-smi-info_v23.0.7.txt")
    )
    got = npu_smi.parse_info(text)
    assert [c["npu_id"] for c in got["chips"]] == list(range(8))
    assert all(c["bus_id"] is None and c["name"] == "910B3" for c in got["chips"])
    assert len(got["warnings"]) == 8 and "'0000:xx:00.0' is masked" in got["warnings"][0]


def test_info_unreadable_second_cell_is_named():
    with pytest.raises(ParseError) as err:
        npu_smi.parse_info(
            "| NPU Name | Health | Power |\n| Chip | Bus-Id | AICore |\n| 0 910B3 | OK | 1 |\n| 0 | 00:zz | 1 |\n"
        )
    assert "'00:zz' is neither a Bus-Id nor NA" in str(err.value)


@pytest.mark.parametrize("text", ["", "Legend:\n  X = Self\n"])
def test_topo_without_rows_is_an_error(text):
    with pytest.raises(ParseError, match="npu-smi info -t topo"):
        npu_smi.parse_topo(text)


def test_board_reference_sample():
    assert npu_smi.parse_board("PCIe Bus Info 0000:03:00.0\nx : y\n")["bus_id"] == "0000:03:00.0"


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "no device table"),
        ("+----+\n| npu-smi 23.0.7 Version: 23.0.7 |\n", "no device table"),
        (
            "| NPU Name | Health | Power |\n| Chip | Bus-Id | AICore |\n| 0 910B3 | OK | 1 |\n| 1 910B3 | OK | 1 |\n",
            "without its chip row",
        ),
        (
            "| NPU Name | Health | Power |\n| Chip | Bus-Id | AICore |\n| 0 | 0000:C1:00.0 | 1 |\n",
            "without its NPU row",
        ),
        (
            "| NPU Name | Health | Power |\n| Chip | Bus-Id | AICore |\n| x 910B3 | OK | 1 |\n"
            "| 0 | 0000:C1:00.0 | 1 |\n",
            "not a number",
        ),
    ],
)
def test_info_bad(text, words):
    with pytest.raises(ParseError) as err:
        npu_smi.parse_info(text)
    assert words in str(err.value) and str(err.value).startswith("npu-smi info")


@pytest.mark.parametrize(
    "raw, norm",
    [
        ("0000:C1:00.0", "0000:c1:00.0"),
        ("c1:00.0", "0000:c1:00.0"),
        ("00000000:18:00.0", "0000:18:00.0"),
        ("NA", None),
        ("", None),
        (None, None),
    ],
)
def test_normalise_bus_id(raw, norm):
    assert pci.normalise_bus_id(raw) == norm


ALL_ASCEND = sorted(glob.glob(os.path.join(FIXTURES, "ascend", "*.txt")))
_real = st.sampled_from([fixture_text(os.path.relpath(p, FIXTURES)) for p in ALL_ASCEND])
_texts = st.one_of(
    st.text(max_size=300),
    st.tuples(_real, st.integers(0, 5000)).map(lambda t: t[0][: t[1]]),
    st.tuples(_real, st.integers(0, 5000), st.text(max_size=5)).map(lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 3 :]),
)


@settings(max_examples=120, deadline=None)
@given(_texts)
def test_fuzz_only_parse_error_escapes(text):
    for parser in (npu_smi.parse_info, npu_smi.parse_map, npu_smi.parse_topo, npu_smi.parse_board):
        try:
            parser(text)
        except ParseError:
            pass
