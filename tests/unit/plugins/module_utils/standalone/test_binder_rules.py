# -*- coding: utf-8 -*-
"""The binder runs without the collection and keeps its own copies of a few rules; each copy
must agree with the collection's one on the same inputs."""

from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import pci
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import rules as binder

BUS_IDS = ["0000:c1:00.0", "0000:C1:00.0", "c1:00.0", "C1:00.0", "00000000:18:00.0",
           "00000001:18:00.0", " 0000:3d:00.1 ", "0000:c1:00", "NA", "-", "", None, "1:2:3.4",
           "0001:c1:00.0", "0000:g1:00.0", "0000:c1:00.0\n", "0000:c1:00.10"]


def test_bus_id_normalisation_agrees_on_real_and_broken_forms():
    for text in BUS_IDS:
        assert binder.normalise_bus_id(text) == pci.normalise_bus_id(text), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789abcdefABCDEF:. x", max_size=20))
def test_bus_id_normalisation_agrees_on_any_text(text):
    assert binder.normalise_bus_id(text) == pci.normalise_bus_id(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=600), max_size=40))
def test_cpulist_format_and_parse_agree(cpus):
    text = cpulist.format(cpus)
    assert binder.format_cpulist(cpus) == text
    assert binder.parse_cpulist(text) == cpulist.parse(text)


_ITEM = st.one_of(st.integers(min_value=0, max_value=999).map(str),
                  st.tuples(st.integers(0, 999), st.integers(0, 999)).map(lambda r: "%d-%d" % r),
                  st.sampled_from(["", " ", "x", "-", "3-", "-3", "1--2", "01"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_ITEM, min_size=1, max_size=6).map(",".join))
def test_cpulist_parse_agrees_or_both_refuse(text):
    """Small ids only: how large an id may be is the parsers' bound, tested with them."""
    try:
        expected = cpulist.parse(text)
    except ParseError:
        expected = "refused"
    try:
        got = binder.parse_cpulist(text)
    except binder.BindError:
        got = "refused"
    assert got == expected, text
