# -*- coding: utf-8 -*-
"""parse/rocm_smi beyond the real-fixture cases (cases/rocm_smi.yml): what is missing, cut or
hostile is a warning or a ParseError naming the source, never another exception."""

import pytest
from hypothesis import given, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import rocm_smi
from npuops_testing import fixture_text
from npuops_testing.gpu_hosts import SHOWPIDGPUS

REAL = fixture_text("amd/mi300x-8gpu_rocm-smi-showtopo_rocm6.2.txt")


def test_no_gpu_is_a_parse_error():
    with pytest.raises(ParseError, match="^rocm-smi --showtopo: no GPU found"):
        rocm_smi.parse_showtopo("=== ROCm System Management Interface ===\nnothing\n")


def test_cut_capture_keeps_what_it_read():
    cut = REAL[: REAL.index("Numa Nodes")]
    parsed = rocm_smi.parse_showtopo(cut)
    assert len(parsed["gpus"]) == 8 and parsed["gpus"][0]["numa_node"] is None
    assert any("no Numa Nodes block" in w for w in parsed["warnings"])


def test_ragged_row_is_a_warning_and_minus_one_is_unknown():
    text = (
        "===== Link Type between two GPUs =====\n"
        "       GPU0         GPU1\n"
        "GPU0   0            XGMI\n"
        "GPU1   XGMI\n"
        "===== Numa Nodes =====\n"
        "GPU[0]\t\t: (Topology) Numa Node: -1\n"
        "GPU[1]\t\t: (Topology) Numa Node: 1\n"
    )
    parsed = rocm_smi.parse_showtopo(text)
    assert [g["numa_node"] for g in parsed["gpus"]] == [None, 1]
    assert parsed["gpus"][0]["links"] == {"GPU1": "XGMI"} and parsed["gpus"][1]["links"] == {}
    assert any("GPU1 has 1 cells for 2 columns" in w for w in parsed["warnings"])


def test_showbus():
    text = "====== PCI Bus ======\nGPU[0]\t\t: PCI Bus: 0000:05:00.0\nGPU[1]\t\t: PCI Bus: 0000:26:00.0\n"
    assert rocm_smi.parse_showbus(text) == {0: "0000:05:00.0", 1: "0000:26:00.0"}
    with pytest.raises(ParseError, match=r"GPU\[0\]: 'x' is not a PCI bus id"):
        rocm_smi.parse_showbus("GPU[0]\t\t: PCI Bus: x\n")


@given(st.integers(0, len(REAL)), st.integers(0, len(REAL)), st.text(max_size=40))
def test_mutated_text_never_crashes(start, end, junk):
    text = REAL[: min(start, end)] + junk + REAL[max(start, end) :]
    try:
        parsed = rocm_smi.parse_showtopo(text)
    except ParseError as err:
        assert str(err).startswith("rocm-smi --showtopo: ")
    else:
        assert all(isinstance(g["index"], int) for g in parsed["gpus"])


# ``rocm-smi --showpidgpus``: no real capture exists; SHOWPIDGPUS follows rocm_smi_lib's
# python_smi_tools/rocm_smi.py (showGpusByPid, printListLog)
def test_showpidgpus_parser():
    text = SHOWPIDGPUS % {"w0": 10, "w1": 11, "both": 12, "idle": 13}
    assert rocm_smi.parse_showpidgpus(text) == {10: [1], 11: [0], 12: [0, 1], 13: []}
    # printListLog wraps a long list over lines
    wrapped = "=== GPUs Indexed by PID ===\nPID 7 is using 3 DRM device(s):\n0 1 \n2 \n"
    assert rocm_smi.parse_showpidgpus(wrapped) == {7: [0, 1, 2]}
    assert rocm_smi.parse_showpidgpus("=== GPUs Indexed by PID ===\nNo KFD PIDs currently running\n=====\n") == {}


@pytest.mark.parametrize(
    "text,message",
    [
        ("PID 7 is using 2 DRM device(s):\n0 \n", "2 GPUs announced, 1 listed"),
        ("PID 7 is using 1 DRM device(s):\n0 1 \n", "more GPUs listed"),
        ("PID 7 is using 1 DRM device(s):\nGPU0 \n", "not a list of GPU indexes"),
        ("PID 7 is using 1 DRM device(s):\n5000 \n", "not a list of GPU indexes"),
        ("KFD process information:\nPID PROCESS NAME GPU(s)\n", "no 'GPUs Indexed by PID' block"),
    ],
)
def test_showpidgpus_refuses_what_it_cannot_read(text, message):
    with pytest.raises(ParseError, match=message):
        rocm_smi.parse_showpidgpus(text)


@given(st.text(alphabet=st.sampled_from(list("PID 0123456789isung DRM device(s):=\n ")), max_size=200))
def test_showpidgpus_raises_only_parse_errors(text):
    try:
        found = rocm_smi.parse_showpidgpus(text)
    except ParseError:
        return
    assert all(isinstance(p, int) and all(isinstance(g, int) for g in gpus) for p, gpus in found.items())
