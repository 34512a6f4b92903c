# -*- coding: utf-8 -*-
"""host/yaml_subset: what dumps writes loads reads back (and PyYAML reads the same); anything
outside the subset is a SnapshotError naming the source and line."""

import pytest
import yaml
from hypothesis import given, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset

SNAPSHOT = """\
schema: 1
hostname: a2-node
commands:
  npu-smi info: {rc: 0, stdout_file: cmd/npu-smi-info.txt, timed_out: false}
files:
  /sys/devices/system/node/online: "0-7\\n"
notes: |
  line one
  line two
empty: ~
"""

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.text(max_size=12),
    st.sampled_from(["yes", "no", "on", "0-23", "0x1f", "1e3", "~", "- a", "a: b", "#x"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def test_reads_the_snapshot_forms():
    data = yaml_subset.loads(SNAPSHOT)
    assert data["commands"]["npu-smi info"] == {"rc": 0, "stdout_file": "cmd/npu-smi-info.txt", "timed_out": False}
    assert data["files"]["/sys/devices/system/node/online"] == "0-7\n"
    assert data["notes"] == "line one\nline two\n" and data["empty"] is None
    assert data == yaml.safe_load(SNAPSHOT)


@given(VALUES, st.booleans())
def test_round_trip_and_pyyaml_agrees(value, flow):
    doc = {"root": value}
    text = yaml_subset.dumps(doc, flow=flow)
    assert yaml_subset.loads(text) == doc
    assert yaml.safe_load(text) == doc


@pytest.mark.parametrize(
    "text,where",
    [
        ("a: &anchor 1\n", "line 1"),
        ("a: !!python/object x\n", "line 1"),
        ("a:\n  b: 1\n c: 2\n", "line 3"),
        ("a: [1, 2\n", "line 1"),
        ("a: 'x\n", "line 1"),
    ],
)
def test_outside_the_subset_is_refused_with_the_line(text, where):
    with pytest.raises(SnapshotError) as err:
        yaml_subset.loads(text, source="host1/snapshot.yml")
    assert "host1/snapshot.yml" in str(err.value) and where in str(err.value)


def test_depth_bound():
    deep = "x"
    for dummy in range(yaml_subset.MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(SnapshotError, match="deep|nest|depth"):
        yaml_subset.check_depth({"a": deep}, "facts")
    text = "a: " + "[" * (yaml_subset.MAX_DEPTH + 2) + "]" * (yaml_subset.MAX_DEPTH + 2) + "\n"
    with pytest.raises(SnapshotError):
        yaml_subset.loads(text)


def test_long_digit_runs_stay_strings():
    digits = "1" * (yaml_subset.MAX_INT_DIGITS + 1)
    assert yaml_subset.loads("n: %s\n" % digits) == {"n": digits}
    assert yaml_subset.loads("n: %s\n" % digits[:-1]) == {"n": int(digits[:-1])}
