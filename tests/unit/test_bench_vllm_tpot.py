# -*- coding: utf-8 -*-
"""bench/bench_vllm_tpot.py's pure parts (npuops_testing.tpot, npuops_testing.real_vllm's
plan and binder command): percentiles, the off/on ratio, the per-token gaps of a stream, the
neighbour's confinement mask from the partition plan."""

import json

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from npuops_testing import real_vllm as rv
from npuops_testing import tpot


@pytest.mark.parametrize(
    "values, fraction, expected",
    [
        ([], 0.5, None),
        ([7], 0.99, 7),
        ([4, 1, 3, 2], 0.5, 2),  # nearest rank: ceil(0.5 * 4) = 2nd smallest
        ([4, 1, 3, 2], 0.75, 3),
        (list(range(1, 101)), 0.99, 99),
        (list(range(1, 101)), 0.5, 50),
        (list(range(1, 201)), 0.99, 198),
        ([5, 5, 5, 100], 0.99, 100),  # one slow token of four is the p99
    ],
)
def test_percentile_is_the_nearest_rank(values, fraction, expected):
    assert tpot.percentile(values, fraction) == expected


@pytest.mark.parametrize(
    "off, on, expected",
    [
        (0.030, 0.010, 3.0),
        (0.010, 0.010, 1.0),
        (0.005, 0.010, 0.5),
        (None, 0.01, None),
        (0.01, None, None),
        (0.01, 0, None),
    ],
)
def test_ratio_is_off_over_on(off, on, expected):
    got = tpot.ratio(off, on)
    assert got == pytest.approx(expected) if expected is not None else got is None


def sse(tokens, choices=True):
    doc = {"choices": [{"text": "x"}] if choices else [], "usage": {"completion_tokens": tokens}}
    return "data: " + json.dumps(doc)


def test_chunk_tokens_reads_the_running_count_only():
    assert tpot.chunk_tokens(sse(3)) == 3
    assert tpot.chunk_tokens(sse(3).encode()) == 3
    assert tpot.chunk_tokens(sse(64, choices=False)) is None  # closing usage-only chunk
    assert tpot.chunk_tokens('data: {"choices": [{"text": "x"}]}') is None  # no usage
    for line in (
        "data: [DONE]",
        "",
        ": keep-alive",
        "data: {not json",
        "event: x",
        'data: {"choices": [{}], "usage": {"completion_tokens": true}}',
    ):
        assert tpot.chunk_tokens(line) is None


def test_token_gaps_leave_out_the_first_token_and_split_multi_token_chunks():
    events = [(10.0, 1), (10.02, 2), (10.05, 3), (10.05, None), (10.09, 5), (10.09, 5), (10.10, 6)]
    gaps = tpot.token_gaps(events)
    assert gaps == pytest.approx([0.02, 0.03, 0.02, 0.02, 0.01])
    assert tpot.token_gaps([(1.0, 1)]) == [] and tpot.token_gaps([]) == []


def test_request_tpot_is_vllms_serving_benchmark_definition():
    """(latency after the first token) / (tokens after the first): bursts do not matter."""
    events = [(10.0, 1), (10.02, 2), (10.05, 3), (10.05, None), (10.09, 5), (10.10, 6), (10.2, None)]
    assert tpot.request_tpot(events) == pytest.approx(0.10 / 5)
    burst = [(1.0, 1), (1.5, 2), (1.5, 3), (1.5, 4)]  # three tokens delivered at once
    assert tpot.request_tpot(burst) == pytest.approx(0.5 / 3)
    assert tpot.request_tpot([(1.0, 1)]) is None and tpot.request_tpot([]) is None
    assert tpot.request_tpot([(1.0, None)]) is None


def test_confinement_is_the_partition_plans_housekeeping():
    """The bench's instance plan (device 0 on CPU 1, frontend CPU 0): the neighbour is held on
    CPU 0 - what the partition gives system.slice - and the worker CPU 1 is isolated."""
    plan = rv.gpu_plan("tpot", [0], "0", {0: "1"}, hostname="h", budget=True)
    assert plan["cpu_budget"] == {"workers": "1", "frontend": "0", "reserved": "", "spare": ""}
    assert tpot.confinement(plan) == ([0], [1])
    wide = rv.gpu_plan("tpot", [0, 1], "0-3", {0: "4-5", 1: "6-7"}, hostname="h", budget=True)
    wide["cpu_budget"]["spare"] = "8"
    assert tpot.confinement(wide) == ([0, 1, 2, 3, 8], [4, 5, 6, 7])
    # the kernel's own isolated CPUs are never housekeeping
    assert tpot.confinement(wide, {"isolated": "3"}) == ([0, 1, 2, 8], [4, 5, 6, 7])
    with pytest.raises(PlanError, match="housekeeping"):
        tpot.confinement(wide, min_housekeeping=6)
    assert "cpu_budget" not in rv.gpu_plan("t", [0], "0", {0: "1"}, hostname="h")


def test_binder_argv_is_the_bind_units_execstart_on_the_sandbox(tmp_path):
    unit = tmp_path / "etc/systemd/system/vllm-tiny-bind.service"
    unit.parent.mkdir(parents=True)
    unit.write_text(
        "[Service]\nExecStart=/usr/local/lib/npuops/tiny-bind --unit vllm-tiny.service "
        "--plan /etc/npuops/plan.json --follow 600 --ready-url http://x/health\n"
    )
    argv = rv.binder_argv(str(tmp_path), "tiny", 42, 15)
    assert argv == [
        str(tmp_path / "usr/local/lib/npuops/tiny-bind"),
        "--root-pid",
        "42",
        "--plan",
        str(tmp_path / "etc/npuops/plan.json"),
        "--follow",
        "15",
        "--ready-url",
        "http://x/health",
        "--proc-irq",
        str(tmp_path / "proc/irq"),
        "--json",
    ]


METRICS = """# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_sum{engine="0",model_name="tiny"} %(sum)s
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.001",model_name="tiny"} %(b1)s
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.002",model_name="tiny"} %(b2)s
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="tiny"} %(b3)s
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="tiny"} %(inf)s
vllm:inter_token_latency_seconds_count{engine="0",model_name="tiny"} %(inf)s
vllm:inter_token_latency_seconds_created{engine="0",model_name="tiny"} 1.7e9
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.001",model_name="tiny"} 99.0
"""


def metrics(sum_, b1, b2, b3, inf):
    return METRICS % {"sum": sum_, "b1": b1, "b2": b2, "b3": b3, "inf": inf}


def test_vllm_histogram_quantiles_from_two_reads():
    name = "vllm:inter_token_latency_seconds"
    before = tpot.histogram(metrics(0.5, 10.0, 20.0, 30.0, 30.0), name)
    assert before["buckets"] == {0.001: 10.0, 0.002: 20.0, 0.01: 30.0, float("inf"): 30.0}
    assert (before["sum"], before["count"]) == (0.5, 30.0)
    after = tpot.histogram(metrics(1.5, 10.0, 110.0, 128.0, 130.0), name)
    delta = tpot.histogram_delta(before, after)
    assert delta["count"] == 100.0 and tpot.histogram_mean(delta) == pytest.approx(0.01)
    assert tpot.histogram_quantile(delta, 0.5) == 0.002  # 90 of 100 at <= 2 ms
    assert tpot.histogram_quantile(delta, 0.95) == 0.01  # 98 at <= 10 ms
    assert tpot.histogram_quantile(delta, 0.99) == float("inf")
    both = tpot.histogram_add(delta, delta)
    assert both["count"] == 200.0 and tpot.histogram_quantile(both, 0.5) == 0.002
    assert tpot.histogram_add(None, delta) is delta
    assert tpot.histogram("", name) is None and tpot.histogram_delta(before, None) is None
    assert tpot.histogram_quantile(tpot.histogram_delta(before, before), 0.5) is None


def test_fine_bounds_are_what_vllm_accepts():
    """Strictly increasing, positive, finite (vllm/config/observability.py's check), and
    finer than vLLM's default below 10 ms."""
    bounds = tpot.fine_bounds()
    assert all(b > 0 for b in bounds) and bounds == sorted(set(bounds))
    assert bounds[0] == 0.00025 and 0.01 in bounds and bounds[-1] == 2.5
    assert len([b for b in bounds if b < 0.01]) == 39
