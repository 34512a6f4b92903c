# -*- coding: utf-8 -*-
"""rdma.py: the ports/<n>/ attributes of /sys/class/infiniband; pci.card_of."""

import pytest
from hypothesis import given, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import pci, rdma


@pytest.mark.parametrize(
    "text, state",
    [("4: ACTIVE\n", "ACTIVE"), ("1: DOWN", "DOWN"), ("2: INIT\n", "INIT"), ("5: ACTIVE_DEFER\n", "ACTIVE_DEFER")],
)
def test_port_state(text, state):
    assert rdma.parse_port_state(text, "state") == state


@pytest.mark.parametrize(
    "text, rate",
    [
        ("200 Gb/sec (4X HDR)\n", 200),
        ("2.5 Gb/sec (1X SDR)", 2.5),
        ("400 Gb/sec (4X NDR)\n", 400),
        ("25 Gb/sec (1X EDR)", 25),
    ],
)
def test_port_rate(text, rate):
    got = rdma.parse_port_rate(text, "rate")
    assert got == rate and type(got) is type(rate)


def test_link_layer_and_errors():
    assert rdma.parse_link_layer("InfiniBand\n", "ll") == "InfiniBand"
    for parser, bad in (
        (rdma.parse_port_state, "ACTIVE"),
        (rdma.parse_port_rate, "fast"),
        (rdma.parse_link_layer, "two words"),
        (rdma.parse_link_layer, ""),
    ):
        with pytest.raises(ParseError):
            parser(bad, "src")


@given(st.text(max_size=40))
def test_port_parsers_raise_only_parse_error(text):
    for parser in (rdma.parse_port_state, rdma.parse_port_rate, rdma.parse_link_layer):
        try:
            parser(text, "src")
        except ParseError:
            pass


@pytest.mark.parametrize(
    "bus, card",
    [
        ("0000:e1:00.1", "0000:e1:00"),
        ("E1:00.0", "0000:e1:00"),
        ("00000000:18:00.0", "0000:18:00"),
        ("garbage", None),
        (None, None),
    ],
)
def test_card_of(bus, card):
    assert pci.card_of(bus) == card
