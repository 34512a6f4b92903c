# -*- coding: utf-8 -*-
"""The rail majority vote (plugins/plugin_utils/rail_majority.py)."""

from hypothesis import given, strategies as st

from ansible_collections.npuops.fleet.plugins.plugin_utils import rails as rail_majority

RAILS = {"0": "mlx5_0", "1": "mlx5_1"}
SWAPPED = {"0": "mlx5_1", "1": "mlx5_0"}


def test_majority_counts_hosts_and_reports_no_tie():
    assert rail_majority.majority([RAILS, SWAPPED, dict(RAILS)]) == (RAILS, 2, False)


def test_a_tie_goes_to_the_smallest_mapping_text_whatever_the_order():
    assert rail_majority.majority([SWAPPED, RAILS]) == (RAILS, 1, True)
    assert rail_majority.majority([RAILS, SWAPPED]) == (RAILS, 1, True)


def test_differences_in_sort_key_order_with_missing_gpus_as_none():
    mapping = {"10": "mlx5_9", "2": "mlx5_1", "0": "mlx5_0"}
    expected = {"0": "mlx5_0", "2": "mlx5_2", "3": "mlx5_3"}
    assert rail_majority.differences(mapping, expected, int) == [
        ("2", "mlx5_2", "mlx5_1"),
        ("3", "mlx5_3", None),
        ("10", None, "mlx5_9"),
    ]
    assert rail_majority.differences(expected, expected, int) == []


MAPPING = st.dictionaries(st.sampled_from("0123"), st.sampled_from(["mlx5_0", "mlx5_1", None]), min_size=1)


@given(st.lists(MAPPING, min_size=1, max_size=8))
def test_majority_is_one_of_the_mappings_and_none_is_shared_by_more(mappings):
    majority, count, tie = rail_majority.majority(mappings)
    assert majority in mappings
    assert count == mappings.count(majority)
    assert all(mappings.count(m) <= count for m in mappings)
    assert tie == any(mappings.count(m) == count for m in mappings if m != majority)
    assert rail_majority.majority(list(reversed(mappings))) == (majority, count, tie)
