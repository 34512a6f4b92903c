# -*- coding: utf-8 -*-
"""host/yaml_subset: what ``dumps`` writes, ``loads`` reads back as the same value and type -
every scalar type the writer accepts (None, bool, int, float, str), in both styles, as a
top-level value, a mapping value, a sequence item and a key. PyYAML (a YAML 1.1 reader, what
Ansible and kubectl users read the files with) must read the floats back as floats too."""

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset

LIMIT = 10**yaml_subset.MAX_INT_DIGITS - 1

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-LIMIT, max_value=LIMIT),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)
keys = st.text(min_size=1, max_size=20)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)


def _same(left, right):
    """Equal, with the same types all the way down (1 is not 1.0 nor True; NaN is NaN)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        if math.isnan(left):
            return math.isnan(right)
        return left == right and math.copysign(1, left) == math.copysign(1, right)
    if isinstance(left, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right))
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    return left == right


@pytest.mark.parametrize(
    "value",
    [
        1e-05,
        -1e-05,
        1e16,
        1.5e300,
        5e-324,
        1e22,
        float("inf"),
        float("-inf"),
        float("nan"),
        0.0,
        -0.0,
        0.1,
        123456789.125,
        1.0,
    ],
)
@pytest.mark.parametrize("flow", [True, False])
def test_every_float_reads_back_as_that_float(value, flow):
    for doc in (value, [value], {"a": value}, {"m": {"a": value, "b": 1}}):
        assert _same(yaml_subset.loads(yaml_subset.dumps(doc, flow=flow)), doc)


@pytest.mark.parametrize("value", [1e-05, 1e16, -2.5e-07, 0.5, float("inf"), float("-inf")])
def test_floats_read_back_as_floats_by_pyyaml_too(value):
    assert yaml.safe_load(yaml_subset.dumps({"a": value}))["a"] == value


def test_nan_reads_back_as_nan_by_pyyaml():
    assert math.isnan(yaml.safe_load(yaml_subset.dumps({"a": float("nan")}))["a"])


def test_an_int_longer_than_the_reader_takes_is_refused_not_written_as_a_string():
    assert yaml_subset.loads(yaml_subset.dumps([LIMIT, -LIMIT])) == [LIMIT, -LIMIT]
    with pytest.raises(SnapshotError, match="digits"):
        yaml_subset.dumps({"a": LIMIT + 1})


@settings(max_examples=400, deadline=None)
@given(documents, st.booleans())
def test_dumps_then_loads_is_the_identity(doc, flow):
    assert _same(yaml_subset.loads(yaml_subset.dumps(doc, flow=flow)), doc)
