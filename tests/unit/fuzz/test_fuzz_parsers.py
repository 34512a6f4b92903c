# -*- coding: utf-8 -*-
"""Fuzz: every parser (parse/*, the cpulist readers, the YAML subset) on mutated real outputs
raises its own error (ParseError / SnapshotError) or returns data - never another exception,
never a blow-up. Plus the hostile values that once blew a parser up."""

import inspect
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist, cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset
from ansible_collections.npuops.fleet.plugins.module_utils.parse import (
    cpu_topology,
    interrupts,
    irqbalance_conf,
    npu_smi,
    nvidia_topo,
    rdma,
)
from npuops_testing import FIXTURES, SNAPSHOTS
from npuops_testing.hostile import files_under, fuzz_examples, mutated_text, texts_of

PARSERS = [
    cpu_topology.parse_status,
    cpu_topology.parse_cpulist_file,
    cpu_topology.parse_lscpu_e,
    cpu_topology.parse_lscpu,
    cpu_topology.parse_kernel_cpulist,
    cpu_topology.parse_distance_row,
    cpu_topology.parse_numactl_distances,
    interrupts.parse_interrupts,
    irqbalance_conf.parse_config,
    npu_smi.parse_info,
    npu_smi.parse_map,
    npu_smi.parse_topo,
    npu_smi.parse_board,
    nvidia_topo.parse,
    rdma.parse_port_state,
    rdma.parse_port_rate,
    rdma.parse_link_layer,
    cpulist.parse_ordered,
    cpulist.from_mask,
    cpuset.parse_ordered,
    cpuset.parse_option,
]
TEXTS = texts_of(
    files_under(FIXTURES, (".txt",))
    + [p for p in files_under(SNAPSHOTS) if "/cmd/" in p or p.endswith("snapshot.yml") or "/proc/" in p][:80]
)
# each parser on each example: examples x len(PARSERS) inputs (the counts are reported);
# NPUOPS_FUZZ_EXAMPLES=5000 runs a long campaign
EXAMPLES = fuzz_examples(100)


def _call(parse, text):
    params = inspect.signature(parse).parameters
    if "source" in params and params["source"].default is inspect.Parameter.empty:
        return parse(text, "fuzz")
    return parse(text)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_text(TEXTS))
def test_parsers_raise_only_their_own_error(text):
    for parse in PARSERS:
        start = time.monotonic()
        try:
            _call(parse, text)
        except ParseError:
            pass
        assert time.monotonic() - start < 2.0, parse.__name__


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_text(TEXTS))
def test_yaml_subset_raises_only_snapshot_error(text):
    try:
        yaml_subset.loads(text, "fuzz.yml")
    except NpuopsError:
        pass


@pytest.mark.parametrize(
    "parse, text, words",
    [
        # a 12-byte cpu/online took 100 s; Cpus_allowed_list 0-4294967295 -> MemoryError
        (cpu_topology.parse_cpulist_file, "0-99999999\n", "beyond the kernel's limit \\(8191\\)"),
        (cpu_topology.parse_cpulist_file, "0-19999999\n", "beyond the kernel's limit"),
        (cpu_topology.parse_status, "Cpus_allowed_list:\t0-4294967295\n", "CPU id 4294967295"),
        (cpu_topology.parse_cpulist_file, "0-8191," * 5 + "0", "names more than 32768 CPUs"),
        (cpu_topology.parse_cpulist_file, "9" * 5000, "beyond the kernel's limit"),
        (cpu_topology.parse_lscpu_e, "CPU NODE\n0 " + "9" * 5000 + "\n", "NUMA node id"),
        (cpu_topology.parse_lscpu_e, "CPU NODE\n\u00b2 0\n", "expected 'CPU NODE' integers"),
        (cpu_topology.parse_lscpu, "NUMA node99999 CPU(s): 0-3\n", "NUMA node id"),
        (cpu_topology.parse_distance_row, "10 " + "9" * 5000, "expected node distances"),
        (interrupts.parse_interrupts, "CPU0\n" + "9" * 5000 + ": 1 x\n", "out of range"),
        (cpulist.from_mask, ",".join(["ffffffff"] * 300), "more than 8192 CPUs"),
        (nvidia_topo.parse, "\tGPU0\tGPU" + "9" * 5000 + "\nGPU0\t X \tNV1\n", "out of range"),
    ],
)
def test_regression_values_are_parse_errors(parse, text, words):
    start = time.monotonic()
    with pytest.raises(ParseError, match=words):
        _call(parse, text)
    assert time.monotonic() - start < 1.0


@pytest.mark.parametrize(
    "text, words",
    [
        ("a: " + "[" * 3000 + "]" * 3000, "nested deeper than 32"),
        ("\n".join(" " * i + "k%d:" % i for i in range(3000)), "nested deeper than 32"),
        ('{\n"a": ' + "[" * 100000 + "]" * 100000 + "}", "line 1"),
    ],
)
def test_yaml_nesting_is_bounded(text, words):
    with pytest.raises(NpuopsError, match=words):
        yaml_subset.loads(text)


def test_yaml_long_integers_stay_text():
    # int() is never asked for more than 20 digits (4,300 raised ValueError before)
    doc = yaml_subset.loads("a: %s\nb: 12345\n" % ("9" * 5000))
    assert doc == {"a": "9" * 5000, "b": 12345}


def test_parser_inputs_are_counted():
    """The fuzz budget, for the issue's note: examples x parsers."""
    assert EXAMPLES * len(PARSERS) >= 2000 and len(TEXTS) >= 20, (len(TEXTS), os.getcwd())
    print("parser fuzz: %d texts x %d parsers" % (EXAMPLES, len(PARSERS)))
