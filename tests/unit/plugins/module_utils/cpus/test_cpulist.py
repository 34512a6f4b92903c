import pytest
from hypothesis import given, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError


@pytest.mark.parametrize(
    "text,expected",
    [
        ("0-2, 4, 6-8", [0, 1, 2, 4, 6, 7, 8]),  # vllm-ascend test 16
        ("0-23,48-71", list(range(24)) + list(range(48, 72))),
        ("", []),
        ("5", [5]),
        ("0-7:2/4", [0, 1, 4, 5]),
    ],
)
def test_parse_ordered(text, expected):
    assert cpulist.parse_ordered(text) == expected


def test_parse_ordered_keeps_order_and_parse_sorts():
    assert cpulist.parse_ordered("48-49,0-1") == [48, 49, 0, 1]
    assert cpulist.parse("48-49,0-1,0") == [0, 1, 48, 49]


@pytest.mark.parametrize("bad", ["a", "1-", "3-1", "1,,2", "-1", "0x3"])
def test_parse_rejects_with_source(bad):
    with pytest.raises(ParseError) as err:
        cpulist.parse(bad, source="/proc/self/status")
    assert "/proc/self/status" in str(err.value)


def test_format_and_masks():
    assert cpulist.format([5, 0, 1, 2, 2]) == "0-2,5"
    assert cpulist.format([]) == ""
    assert cpulist.format_ordered([48, 49, 0, 1]) == "48-49,0-1"
    assert cpulist.to_mask([3]) == "00000008"  # vllm-ascend test 40
    assert cpulist.to_mask([35]) == "00000008,00000000"
    assert cpulist.to_mask([600]) == "01000000," + ",".join(["00000000"] * 18)
    assert cpulist.from_mask("00000008,00000000") == [35]


@given(st.sets(st.integers(min_value=0, max_value=2048), max_size=200))
def test_format_parse_roundtrip(cpus):
    assert cpulist.parse(cpulist.format(cpus)) == sorted(cpus)


@given(st.sets(st.integers(min_value=0, max_value=700), min_size=1, max_size=64))
def test_mask_roundtrip(cpus):
    assert cpulist.from_mask(cpulist.to_mask(cpus)) == sorted(cpus)


@given(st.text(max_size=40))
def test_parse_never_crashes(text):
    try:
        cpulist.parse(text)
    except ParseError:
        pass


def test_runs_keep_order_and_duplicates():
    assert cpulist.runs([0, 1, 2, 5, 3]) == [(0, 2), (5, 5), (3, 3)]
    assert cpulist.runs([1, 1]) == [(1, 1), (1, 1)]
    assert cpulist.runs([]) == []
    assert cpulist.format_runs([(0, 3), (8, 8)]) == "0-3,8"
    assert cpulist.format_runs([(4, 4)]) == "4"
    assert cpulist.format_runs([]) == ""


@given(st.lists(st.integers(min_value=0, max_value=300), max_size=60))
def test_format_ordered_roundtrip(cpus):
    assert cpulist.parse_ordered(cpulist.format_ordered(cpus)) == cpus
    assert cpulist.format_ordered(sorted(set(cpus))) == cpulist.format(cpus)
