# -*- coding: utf-8 -*-
"""parse/pci: the one bus-id form and the card (PCI slot) of a function."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.parse.pci import card_of, normalise_bus_id


@pytest.mark.parametrize(
    "text,want",
    [
        ("0000:C1:00.0", "0000:c1:00.0"),
        ("c1:00.0", "0000:c1:00.0"),
        ("00000000:18:00.0", "0000:18:00.0"),
        (" 0000:e1:00.1\n", "0000:e1:00.1"),
        ("0001:05:00.0", "0001:05:00.0"),
        ("", None),
        (None, None),
        ("0000:c1:00", None),
        ("0000:g1:00.0", None),
        ("00010000:18:00.0", None),
        ("0000:c1:00.0/../x", None),
        ("0000:c1:00.8x", None),
    ],
)
def test_normalise_bus_id(text, want):
    assert normalise_bus_id(text) == want


def test_card_of():
    assert card_of("0000:E1:00.1") == "0000:e1:00"
    assert card_of("e1:00.0") == "0000:e1:00"
    assert card_of("mlx5_0") is None and card_of(None) is None
