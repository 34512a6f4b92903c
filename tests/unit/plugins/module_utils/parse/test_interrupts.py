# -*- coding: utf-8 -*-
"""interrupts.py: /proc/interrupts parsing, NPU SQ/CQ IRQs by name, mlx5 completion IRQs."""

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.parse import interrupts
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

SAMPLE = """           CPU0       CPU1       CPU2       CPU3
  1:          0          0          0          0     GICv3  25 Level     vgic
 11:       4211       1200         30          0     GICv3  30 Level     arch_timer
2753:          5          0          0          0   ITS-MSI 524288 Edge      sq_send_trigger_irq
2754:          0          0          7          0   ITS-MSI 524289 Edge      trs-mbox0
2755:          0          0          0          9   ITS-MSI 524290 Edge      cq_update_irq
2756:          0          0          0          0   ITS-MSI 524291 Edge      cq_update_irq
2801:          1          0          0          0   ITS-MSI 1572864 Edge      sq_send_trigger_irq
2802:          0          0          0          0   ITS-MSI 1572865 Edge      cq_update_irq
 90:         12          0          0          0   PCI-MSI 9437184-edge      mlx5_async@pci:0000:18:00.0
 91:          0         33          0          0   PCI-MSI 9437185-edge      mlx5_comp0@pci:0000:18:00.0
 92:          0          0         44          0   PCI-MSI 9437186-edge      mlx5_comp1@pci:0000:18:00.0
 93:          0          0          0          1   PCI-MSI 9439232-edge      mlx5_comp0@pci:0000:19:00.0
IPI0:     100 100 100 100   Rescheduling interrupts
ERR:          0
"""


def test_parse_sample():
    parsed = interrupts.parse_interrupts(SAMPLE)
    assert parsed[2753] == {
        "name": "sq_send_trigger_irq",
        "desc": "ITS-MSI 524288 Edge sq_send_trigger_irq",
        "total": 5,
    }
    assert parsed[11]["total"] == 5441 and parsed[11]["name"] == "arch_timer"
    assert sorted(parsed) == [1, 11, 90, 91, 92, 93, 2753, 2754, 2755, 2756, 2801, 2802]


def test_reference_test_sample_row():
    # vllm-ascend's own test line (4 CPUs).
    parsed = interrupts.parse_interrupts("CPU0 CPU1 CPU2 CPU3\n123: 0 0 0 0 sq_send_trigger_irq\n")
    assert interrupts.irqs_named(parsed, "sq_send_trigger_irq") == [123]


@pytest.mark.parametrize(
    "msi, expected",
    [
        # The CQ is found by name: 2754 (SQ+1) is a mailbox IRQ, not the CQ.
        ([2753, 2754, 2755, 2756], {"sq": 2753, "cq": 2755, "cq_all": [2755, 2756]}),
        ([2801, 2802], {"sq": 2801, "cq": 2802, "cq_all": [2802]}),
        ([2754], {"sq": None, "cq": None, "cq_all": []}),
        ([], {"sq": None, "cq": None, "cq_all": []}),
        (None, {"sq": None, "cq": None, "cq_all": []}),
    ],
)
def test_npu_irqs_by_name_within_the_device(msi, expected):
    parsed = interrupts.parse_interrupts(SAMPLE)
    assert interrupts.npu_irqs(parsed, msi) == expected


def test_msi_irq_numbers_sorts_numerically():
    assert interrupts.msi_irq_numbers(["2755", "99", "2753", ".snapshot-keep"]) == [99, 2753, 2755]
    assert interrupts.msi_irq_numbers(None) == []


@pytest.mark.parametrize(
    "bus, msi, expected",
    [
        ("0000:18:00.0", None, [91, 92]),
        ("0000:18:00.0".upper(), None, [91, 92]),
        ("0000:19:00.0", None, [93]),
        ("0000:aa:00.0", [91], []),
        (None, [92, 93], [92, 93]),
    ],
)
def test_nic_irqs(bus, msi, expected):
    parsed = interrupts.parse_interrupts(SAMPLE)
    assert interrupts.nic_irqs(parsed, bus_id=bus, msi_irqs=msi) == expected


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("garbage\n1: 2 3\n", "header"),
        ("CPU0 CPU1\n 5: x y name\n", "no per-CPU counts"),
    ],
)
def test_bad_text(text, words):
    with pytest.raises(ParseError) as err:
        interrupts.parse_interrupts(text)
    assert words in str(err.value) and "/proc/interrupts" in str(err.value)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.integers(0, len(SAMPLE)).map(lambda n: SAMPLE[:n])))
def test_fuzz_only_parse_error_escapes(text):
    try:
        interrupts.parse_interrupts(text)
    except ParseError:
        pass
