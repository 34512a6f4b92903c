# -*- coding: utf-8 -*-
"""cpu_topology.py on every real lscpu fixture and the reference's samples."""
import glob
import os

import pytest
from hypothesis import given, settings, strategies as st

from helpers import FIXTURES, fixture_text
from ansible_collections.npuops.fleet.plugins.module_utils.parse import cpu_topology
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

EVEN96 = ",".join(str(n) for n in range(0, 96, 2))
ODD96 = ",".join(str(n) for n in range(1, 96, 2))
KP8 = dict((str(n), "%d-%d" % (24 * n, 24 * n + 23)) for n in range(8))

# fixture -> (arch, cpus, online, threads per core, model, numa nodes)
LSCPU = {
    "ascend/atlas800i-a2-kunpeng920-5250-192c_lscpu.txt": (
        "aarch64", 192, "0-191", 1, "Kunpeng-920", KP8),
    "ascend/kunpeng920-192c-8numa_lscpu_via-collect-env_vllm-ascend-198.txt": (
        "aarch64", 192, "0-191", 1, "Kunpeng-920", KP8),
    "ascend/kunpeng920-7285z-640c-8numa_lscpu_via-collect-env_vllm-ascend-5825.txt": (
        "aarch64", 640, "0-639", 2, "Kunpeng 920 7285Z To be filled by O.E.M. CPU @ 3.0GHz",
        dict((str(n), "%d-%d" % (80 * n, 80 * n + 79)) for n in range(8))),
    "cpu/dgx-a100-class_2x-epyc7742_nps4_256cpu_lscpu.txt": (
        "x86_64", 256, "0-255", 2, "AMD EPYC 7742 64-Core Processor",
        dict((str(n), "%d-%d,%d-%d" % (16 * n, 16 * n + 15, 128 + 16 * n, 143 + 16 * n))
             for n in range(8))),
    "cpu/gh200_grace-72c_9-numa-nodes-memory-only_PARTIAL_lscpu.txt": (
        None, None, None, None, None,
        dict([("0", "0-71")] + [(str(n), "") for n in range(1, 9)])),
    "cpu/hgx-h100-princeton-pli_2x-xeon8468_ht-off_interleaved-numa_96cpu_lscpu.txt": (
        "x86_64", 96, "0-95", 1, "Intel(R) Xeon(R) Platinum 8468", {"0": EVEN96, "1": ODD96}),
    "cpu/mi300x-host_2x-xeon8462y+_interleaved-numa_128cpu_lscpu.txt": (
        "x86_64", 128, "0-127", 2, "Intel(R) Xeon(R) Platinum 8462Y+",
        {"0": ",".join(str(n) for n in range(0, 128, 2)),
         "1": ",".join(str(n) for n in range(1, 128, 2))}),
}


def test_every_lscpu_fixture_is_in_the_table():
    found = set(os.path.relpath(p, FIXTURES) for p in glob.glob(os.path.join(FIXTURES, "*", "*lscpu*")))
    assert found == set(LSCPU)


@pytest.mark.parametrize("name", sorted(LSCPU))
def test_lscpu(name):
    arch, cpus, online, tpc, model, nodes = LSCPU[name]
    got = cpu_topology.parse_lscpu(fixture_text(name))
    assert (got["arch"], got["cpus"], got["online"], got["threads_per_core"], got["model"]) == \
        (arch, cpus, online, tpc, model)
    # Cpulists compare in normalised form ("0,2,4" stays a list of singles).
    assert got["numa_nodes"] == dict((k, cpu_topology.parse_cpulist_file(v)) for k, v in nodes.items())
    assert list(got["numa_nodes"]) == sorted(got["numa_nodes"], key=int)


@pytest.mark.parametrize("text, tpc", [
    ("CPU(s): 384\nThread(s) per core: 1\n", 1),
    ("Thread(s) per core: 2\nCore(s) per socket: 96\n", 2),
    ("CPU(s): 384\n", None),
])
def test_lscpu_threads_samples_of_the_reference(text, tpc):
    assert cpu_topology.parse_lscpu(text)["threads_per_core"] == tpc


def test_lscpu_non_contiguous_node_ids():
    got = cpu_topology.parse_lscpu("NUMA node(s): 2\nNUMA node0 CPU(s): 0-3\nNUMA node2 CPU(s): 4-7\n")
    assert got["numa_nodes"] == {"0": "0-3", "2": "4-7"}


@pytest.mark.parametrize("text, nodes", [
    ("0 0\n1 1\n2 0\n3 1", {"0": "0,2", "1": "1,3"}),
    ("CPU NODE\n\n0 0\n1 1", {"0": "0", "1": "1"}),
    ("CPU NODE\n0 0\n1 0\n2 3\n3 3\n", {"0": "0-1", "3": "2-3"}),
])
def test_lscpu_e(text, nodes):
    assert cpu_topology.parse_lscpu_e(text) == nodes


@pytest.mark.parametrize("text, words", [
    ("", "no NUMA node"),
    ("CPU NODE\n", "no NUMA node"),
    ("CPU NODE\n0 0 0\n", "line 2"),
    ("CPU NODE\n0 -\n", "line 2"),
])
def test_lscpu_e_bad(text, words):
    with pytest.raises(ParseError) as err:
        cpu_topology.parse_lscpu_e(text)
    assert words in str(err.value) and "lscpu -e=CPU,NODE" in str(err.value)


@pytest.mark.parametrize("text, allowed", [
    ("Name:\tpython3\nCpus_allowed:\tff\nCpus_allowed_list:\t0-23,48-71\n", "0-23,48-71"),
    ("Cpus_allowed_list:\t0-2, 4, 6-8\n", "0-2,4,6-8"),
    ("Cpus_allowed_list:\t5\n", "5"),
])
def test_status(text, allowed):
    assert cpu_topology.parse_status(text) == allowed


@pytest.mark.parametrize("text, words", [
    ("Name: x\n", "no Cpus_allowed_list"), ("Cpus_allowed_list:\n", "empty"),
    ("Cpus_allowed_list:\t0-x\n", "invalid cpulist"),
])
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
_texts = st.one_of(st.text(max_size=200),
                   st.tuples(_real, st.integers(0, 3000)).map(lambda t: t[0][:t[1]]),
                   st.tuples(_real, st.integers(0, 3000), st.text(max_size=4)).map(
                       lambda t: t[0][:t[1]] + t[2] + t[0][t[1] + 2:]))


@settings(max_examples=120, deadline=None)
@given(_texts)
def test_fuzz_only_parse_error_escapes(text):
    for parser in (cpu_topology.parse_lscpu, cpu_topology.parse_lscpu_e, cpu_topology.parse_status,
                   cpu_topology.parse_cpulist_file):
        try:
            parser(text)
        except ParseError:
            pass
