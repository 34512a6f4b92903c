# -*- coding: utf-8 -*-
"""cpu_topology.py on the reference's samples, bad input and fuzzed real lscpu text; every real
lscpu fixture is a case in cases/cpu_topology.yml (run by test_fixture_cases.py)."""

import glob
import os

import pytest
from hypothesis import given, settings, strategies as st

from npuops_testing import FIXTURES, cases, fixture_text
from ansible_collections.npuops.fleet.plugins.module_utils.parse import cpu_topology
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

# the lscpu fixture -> expected values table: cases/cpu_topology.yml (test_fixture_cases.py)
LSCPU = [
    case.fixture
    for case in cases.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "cpu_topology.yml"))
    if case.function == "parse_lscpu"
]


def test_every_lscpu_fixture_is_in_the_table():
    found = set(os.path.relpath(p, FIXTURES) for p in glob.glob(os.path.join(FIXTURES, "*", "*lscpu*")))
    assert found == set(LSCPU)


@pytest.mark.parametrize(
    "text, tpc",
    [
        ("CPU(s): 384\nThread(s) per core: 1\n", 1),
        ("Thread(s) per core: 2\nCore(s) per socket: 96\n", 2),
        ("CPU(s): 384\n", None),
    ],
)
def test_lscpu_threads_samples_of_the_reference(text, tpc):
    assert cpu_topology.parse_lscpu(text)["threads_per_core"] == tpc


def test_lscpu_non_contiguous_node_ids():
    got = cpu_topology.parse_lscpu("NUMA node(s): 2\nNUMA node0 CPU(s): 0-3\nNUMA node2 CPU(s): 4-7\n")
    assert got["numa_nodes"] == {"0": "0-3", "2": "4-7"}


@pytest.mark.parametrize(
    "text, nodes",
    [
        ("0 0\n1 1\n2 0\n3 1", {"0": "0,2", "1": "1,3"}),
        ("CPU NODE\n\n0 0\n1 1", {"0": "0", "1": "1"}),
        ("CPU NODE\n0 0\n1 0\n2 3\n3 3\n", {"0": "0-1", "3": "2-3"}),
    ],
)
def test_lscpu_e(text, nodes):
    assert cpu_topology.parse_lscpu_e(text) == nodes


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "no NUMA node"),
        ("CPU NODE\n", "no NUMA node"),
        ("CPU NODE\n0 0 0\n", "line 2"),
        ("CPU NODE\n0 -\n", "line 2"),
    ],
)
def test_lscpu_e_bad(text, words):
    with pytest.raises(ParseError) as err:
        cpu_topology.parse_lscpu_e(text)
    assert words in str(err.value) and "lscpu -e=CPU,NODE" in str(err.value)


@pytest.mark.parametrize(
    "text, allowed",
    [
        ("Name:\tpython3\nCpus_allowed:\tff\nCpus_allowed_list:\t0-23,48-71\n", "0-23,48-71"),
        ("Cpus_allowed_list:\t0-2, 4, 6-8\n", "0-2,4,6-8"),
        ("Cpus_allowed_list:\t5\n", "5"),
    ],
)
def test_status(text, allowed):
    assert cpu_topology.parse_status(text) == allowed


@pytest.mark.parametrize(
    "text, words",
    [
        ("Name: x\n", "no Cpus_allowed_list"),
        ("Cpus_allowed_list:\n", "empty"),
        ("Cpus_allowed_list:\t0-x\n", "invalid cpulist"),
    ],
)
def test_status_bad(text, words):
    with pytest.raises(ParseError) as err:
        cpu_topology.parse_status(text)
    assert words in str(err.value) and "/proc/self/status" in str(err.value)


def test_cpulist_files_and_node_ids():
    assert cpu_topology.parse_cpulist_file("0-191\n") == "0-191"
    assert cpu_topology.parse_cpulist_file("\n") == ""
    assert cpu_topology.node_ids(["node3", "possible", "node0", "node10", "has_cpu"]) == [0, 3, 10]


def test_lscpu_garbage():
    with pytest.raises(ParseError, match="lscpu"):
        cpu_topology.parse_lscpu("hello\nworld\n")


_real = st.sampled_from([fixture_text(n) for n in sorted(LSCPU)])
_texts = st.one_of(
    st.text(max_size=200),
    st.tuples(_real, st.integers(0, 3000)).map(lambda t: t[0][: t[1]]),
    st.tuples(_real, st.integers(0, 3000), st.text(max_size=4)).map(lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 2 :]),
)


@settings(max_examples=120, deadline=None)
@given(_texts)
def test_fuzz_only_parse_error_escapes(text):
    for parser in (
        cpu_topology.parse_lscpu,
        cpu_topology.parse_lscpu_e,
        cpu_topology.parse_status,
        cpu_topology.parse_cpulist_file,
        cpu_topology.parse_numactl_distances,
    ):
        try:
            parser(text)
        except ParseError:
            pass
    for parser in (cpu_topology.parse_distance_row, cpu_topology.parse_kernel_cpulist):
        try:
            parser(text, "src")
        except ParseError:
            pass


# ---- schema 2: distances, kernel cpulists --------------------------------------------------


def test_distance_rows_and_table():
    rows = {0: cpu_topology.parse_distance_row("10 11\n", "n0"), 2: cpu_topology.parse_distance_row("11 10", "n2")}
    # column k is the k-th node id: non-contiguous ids map in order
    expected = {"0": {"0": 10, "2": 11}, "2": {"0": 11, "2": 10}}
    assert cpu_topology.distance_table(rows, "sysfs") == expected
    with pytest.raises(ParseError, match="node 0 lists 1 distances for 2 nodes"):
        cpu_topology.distance_table({0: [10], 1: [20, 10]}, "sysfs")
    for bad in ("", "10 x", "-1 10"):
        with pytest.raises(ParseError):
            cpu_topology.parse_distance_row(bad, "n0")


@pytest.mark.parametrize(
    "text, message",
    [
        ("available: 1 nodes (0)\n", "no 'node distances:' block"),
        ("node distances:\nnode 0 1\n  0: 10 21\n", r"no distance row for node\(s\) \[1\]"),
        ("node distances:\nnode 0 1\n  0: 10\n  1: 21 10\n", "node 0: expected 2 distances"),
        ("node distances:\nnode 0 0\n", "node listed twice"),
        ("node distances:\ncpu 0 1\n", "bad distance header"),
    ],
)
def test_numactl_distances_errors(text, message):
    with pytest.raises(ParseError, match=message):
        cpu_topology.parse_numactl_distances(text)


@pytest.mark.parametrize("text, expected", [("\n", ""), ("(null)\n", ""), ("2-3,8\n", "2-3,8"), ("8,2-3", "2-3,8")])
def test_kernel_cpulist(text, expected):
    assert cpu_topology.parse_kernel_cpulist(text, "isolated") == expected
