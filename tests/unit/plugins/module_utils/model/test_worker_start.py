# -*- coding: utf-8 -*-
"""model/worker_start: which engine and version start an instance's workers in local-rank
order (the binder's spawn-order fallback) and which may start them at once."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.model import worker_start as ws
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from npuops_testing import cpu_hosts

# vLLM's own unit test of MultiprocExecutor._can_start_workers_concurrently (its parametrized
# table, 0.34), the five cases as data: (start method, local world, CPU platform, numa_bind,
# starts concurrently)
VLLM_CONCURRENT_CASES = [
    ("spawn", 8, False, False, True),  # spawn on a GPU: at once
    ("fork", 8, False, False, False),  # fork carries fds from one worker to the next
    ("spawn", 1, False, False, False),  # one worker: nothing to overlap
    ("spawn", 8, True, False, False),  # the CPU platform sets OpenMP per worker
    ("spawn", 8, False, True, False),  # the NUMA wrapper patches the executable
]


@pytest.mark.parametrize("method, world, cpu, numa_bind, concurrent", VLLM_CONCURRENT_CASES)
def test_vllm_concurrent_start_table_ported(method, world, cpu, numa_bind, concurrent):
    got = ws.decide("vllm", "0.34.0", start_method=method, local_world=world, cpu_platform=cpu, numa_bind=numa_bind)
    assert got["order"] == (ws.CONCURRENT if concurrent else ws.RANK)


@pytest.mark.parametrize(
    "engine, version, order",
    [
        ("vllm", "0.32.0", ws.RANK),
        ("vllm", "0.32.9.post1", ws.RANK),
        ("vllm", "0.11.2", ws.RANK),
        ("vllm", "0.33.0rc1", ws.CONCURRENT),
        ("vllm", "0.33.0", ws.CONCURRENT),
        ("vllm", "v0.34.0", ws.CONCURRENT),
        ("vllm", "1.0.0.dev3+g1", ws.CONCURRENT),
        ("vllm", None, ws.UNKNOWN),
        ("vllm", "main", ws.UNKNOWN),
        ("vllm-ascend", "0.30.0rc2", ws.RANK),
        ("vllm-ascend", "0.18.0", ws.RANK),
        ("vllm-ascend", None, ws.RANK),
        ("vllm-ascend", "0.31.0rc1", ws.UNKNOWN),
        ("sglang", "0.5.0", ws.UNKNOWN),
    ],
)
def test_engine_version_rows(engine, version, order):
    got = ws.decide(engine, version)
    assert got["order"] == order and got["reason"]
    assert got["engine"] == engine and got["version"] == version


def test_fork_on_a_concurrent_vllm_says_why():
    got = ws.decide("vllm", "0.34.0", start_method="fork")
    assert got["order"] == ws.RANK and "VLLM_WORKER_MULTIPROC_METHOD=fork" in got["reason"]


def test_the_plan_records_the_decision_from_the_facts():
    topo = cpu_hosts.a3()
    topo["vllm_ascend"] = {"version": "0.30.0rc2", "source": "/opt/venv/METADATA"}
    plan = dispatch.make_plan(topo, "strict")
    assert plan["worker_start"]["engine"] == "vllm-ascend"
    assert plan["worker_start"]["order"] == ws.RANK
    assert plan["worker_start"]["source"] == "/opt/venv/METADATA"


def test_of_facts_reads_the_gpu_hosts_vllm():
    facts = {"vendor": "nvidia", "vllm": {"version": "0.34.0", "source": "site-packages"}}
    assert ws.of_facts(facts)["order"] == ws.CONCURRENT
    assert ws.of_facts({"vendor": "amd"})["order"] == ws.UNKNOWN
    assert ws.of_facts({"vendor": "none"}) is None
