# -*- coding: utf-8 -*-
"""snapshot.py: the YAML-subset reader/writer and snapshot directories."""

import os

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError

PRODUCT_SAMPLE = """schema: 1
hostname: a2-node-01
captured_at: "2026-11-30T05:00:00Z"
arch: aarch64                      # what `uname -m` printed
env: {ASCEND_RT_VISIBLE_DEVICES: "0,1"}   # optional
commands:                          # argv joined by single spaces -> result
  "npu-smi info": {rc: 0, stdout: "...inline text..."}
  "npu-smi info -m": {rc: 0, stdout_file: cmd/npu-smi-info-m.txt}   # relative path
  "nvidia-smi topo -m": {missing: true}                             # not installed
"""

SUBSET_DOCS = [
    PRODUCT_SAMPLE,
    "a:\n- 1\n- two\n- {x: null, y: true}\n",
    "a:\n  - k: v\n    k2: [1, 2, 'it''s']\n  - - nested\n    - n2\n",
    "lit: |\n  line1\n    line2\n\n  line4\nnext: ~\n",
    "lit: |-\n  no newline\nf: 1.5\nneg: -3\n",
    "lit: |+\n  keep\n\nz: 0\n",
    'q: "tab\\there \\u00e9 \\"q\\""\ns: \'single # not a comment\'\n',
    "empty_map: {}\nempty_list: []\nplain: a b c\nurlish: http://x/y\n",
    "---\nkey: value\n",
    '{"json": {"works": [1, 2]},\n "too": "yes"}\n',
]


@pytest.mark.parametrize("text", SUBSET_DOCS)
def test_reader_agrees_with_pyyaml_on_the_subset(text):
    assert snapshot.loads(text) == yaml.safe_load(text)


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("a: &anchor 1\n", 1, "unsupported"),
        ("a: *alias\n", 1, "unsupported"),
        ("a: !!str 1\n", 1, "unsupported"),
        ("a: b: c\n", 1, "quote it"),
        ("a:\n\tb: 1\n", 2, "tab"),
        ("a: [1, 2\n", 1, "unterminated"),
        ("a: {x: 1\n", 1, "unterminated"),
        ('a: "\\q"\n', 1, "escape"),
        ('a: "open\n', 1, "unterminated"),
        ("a: 1\na: 2\n", 2, "duplicate"),
        ("  a: 1\n", 1, "column 0"),
        ("a: 1\n  b: 2\n", 2, "indentation"),
        ("a: 1\n- b\n", 2, "sequence item"),
        ("a: >\n  folded\n", 1, "unsupported"),
        ("x\ny: 1\n", 2, "after the document"),
    ],
)
def test_reader_rejects_outside_subset_naming_file_and_line(text, line, words):
    with pytest.raises(SnapshotError) as err:
        snapshot.loads(text, "/snap/snapshot.yml")
    assert "/snap/snapshot.yml line %d" % line in str(err.value)
    assert words in str(err.value)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.text(st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",)), max_size=30),
)
_keys = st.text(st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",)), min_size=1, max_size=15)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=5))
def test_writer_output_reads_back_identically_and_is_yaml(doc):
    text = snapshot.dumps(doc)
    assert snapshot.loads(text) == doc
    assert yaml.safe_load(text) == doc


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_reader_raises_only_snapshot_error(text):
    try:
        snapshot.loads(text)
    except SnapshotError:
        pass


def test_save_then_load_round_trip(tmp_path):
    multi = "line 1\nline 2\n"
    snapshot.save(
        str(tmp_path),
        hostname="h1",
        arch="x86_64",
        captured_at="2026-01-01T00:00:00Z",
        env={"CUDA_VISIBLE_DEVICES": "0,1"},
        commands={
            "npu-smi info": {"rc": 0, "stdout": multi},
            "uname -m": {"rc": 0, "stdout": "x86_64\n"},
            "systemctl is-active irqbalance": {"rc": 3, "stdout": "inactive", "stderr": "x"},
            "nvidia-smi topo -m": {"missing": True},
            "slow": {"rc": -9, "timed_out": True, "seconds": 30.04},
        },
        links={"/sys/class/infiniband/mlx5_0/device": "/sys/devices/pci0000:17/0000:18:00.0"},
        tools={"taskset": "/usr/bin/taskset"},
        files={"/proc/self/status": "Cpus_allowed_list:\t0-3\n"},
        dirs=["/sys/bus/pci/devices/0000:18:00.0/msi_irqs"],
    )
    data = snapshot.load(str(tmp_path))
    assert data["hostname"] == "h1" and data["arch"] == "x86_64"
    assert data["commands"]["npu-smi info"]["stdout"] == multi
    assert os.path.isfile(tmp_path / "cmd" / "npu-smi-info.txt")
    assert data["commands"]["uname -m"]["stdout"] == "x86_64\n"
    assert data["commands"]["systemctl is-active irqbalance"]["rc"] == 3
    assert data["commands"]["nvidia-smi topo -m"]["missing"] is True
    assert data["commands"]["slow"]["timed_out"] is True and data["commands"]["slow"]["seconds"] == 30.0
    assert data["links"]["/sys/class/infiniband/mlx5_0/device"].endswith("0000:18:00.0")
    assert data["tools"] == {"taskset": "/usr/bin/taskset"}
    assert (tmp_path / "fs" / "proc" / "self" / "status").read_text() == "Cpus_allowed_list:\t0-3\n"
    # on disk a ":" is escaped (%3A): no snapshot path holds one
    assert (tmp_path / "fs/sys/bus/pci/devices/0000%3A18%3A00.0/msi_irqs" / snapshot.KEEP).exists()
    assert not any(":" in name for dummy, dirs, files in os.walk(str(tmp_path)) for name in dirs + files)


def test_save_comment_heads_the_file_and_is_skipped_on_load(tmp_path):
    snapshot.save(
        str(tmp_path),
        hostname="h1",
        arch="aarch64",
        comment="NOT a capture: from a design document.\n\nSecond line.",
        commands={"uname -m": {"rc": 0, "stdout": "aarch64\n"}},
    )
    text = (tmp_path / "snapshot.yml").read_text()
    assert text.startswith("# NOT a capture: from a design document.\n#\n# Second line.\nschema: 1\n")
    data = snapshot.load(str(tmp_path))
    assert data["hostname"] == "h1" and data["commands"]["uname -m"]["stdout"] == "aarch64\n"


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "missing"),
        ("schema: 2\n", "unsupported schema"),
        ("- a\n", "must be a mapping"),
        ("schema: 1\ncommands: {a: 1}\n", "must be a mapping like"),
        ("schema: 1\ncommands:\n  a: {rc: 0, stdout_file: ../../etc/passwd}\n", "escapes"),
        ("schema: 1\ncommands:\n  a: {rc: 0, stdout_file: /etc/passwd}\n", "not a relative path"),
        ("schema: 1\ncommands:\n  a: {rc: 0, stdout_file: cmd/none.txt}\n", "cannot read"),
        ("schema: 1\ncommands:\n  a: {rc: x}\n", "rc must be an integer"),
        ("schema: 1\ncommands:\n  a: {rc: 0, stout: x}\n", "unknown fields stout"),
        ("schema: 1\nenv: {A: [1]}\n", "env['A'] must be a string"),
    ],
)
def test_load_rejects_bad_snapshots_clearly(tmp_path, content, words):
    if content is not None:
        (tmp_path / "snapshot.yml").write_text(content)
    with pytest.raises(SnapshotError) as err:
        snapshot.load(str(tmp_path))
    assert words in str(err.value)


def test_load_missing_directory():
    with pytest.raises(SnapshotError, match="does not exist"):
        snapshot.load("/nonexistent/snapshot/dir")
