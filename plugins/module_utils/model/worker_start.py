# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""In which order an engine starts an instance's workers: the one table where the engine and
its version decide whether spawn order is local-rank order.

The binder places a worker whose title does not carry its ranks yet (``python3``, then a bare
``VLLM::Worker``) by its spawn order only where the engine really starts the workers one by
one in local-rank order (``rank``); where it may start them at once (``concurrent``) or the
engine is not known (``unknown``), such a worker is placed by the device tools' process tables
or left pending until its title carries its ranks (``standalone/binder``). The plan records
the decision (``worker_start``, from the facts' versions) and the binder looks it up again
here, with what the instance's own environment says.

What was read (CONTRIBUTING.md: upstream behaviour is a row, never an ``if``):

- vLLM up to 0.32: ``MultiprocExecutor._init_executor`` (``vllm/v1/executor/
  multiproc_executor.py``) starts each local rank's process in a ``for`` loop over the local
  ranks, each ``proc.start()`` before the next (0.32.0 sdist; the stored revision 00f6c9bf).
- vLLM 0.33.0 and 0.34.0: ``_can_start_workers_concurrently`` (multiproc_executor.py, 0.34.0
  lines 346-360 per the 0.32.0/0.33.0/0.34.0 sdists diffed in the project's upstream notes;
  absent in 0.32.0) starts them from a thread pool when the start method is spawn
  (``inherited_fds is None``), the local world is larger than 1, the platform is not the CPU
  one and ``parallel_config.numa_bind`` is off; vLLM's own unit test of that method (its five
  parametrized cases, read through the code index) is ported in test_worker_start.py.
- vllm-ascend 0.11.0 to 0.30.0rc2: its ``AscendMultiprocExecutor._init_executor``
  (``vllm_ascend/patch/platform/patch_multiproc_executor.py``, tag v0.11.0 and snapshot
  182b75ea) loops over the local ranks the same way; where it is not patched in (from
  vllm-ascend#4351 only with DYNAMIC_EPLB / EXPERT_MAP_RECORD) vLLM's own executor runs, and
  every vllm-ascend release up to 0.30.0rc2 requires a vLLM older than 0.33. No release after
  0.30.0rc2 has been read: a newer one is ``unknown``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

RANK, CONCURRENT, UNKNOWN = "rank", "concurrent", "unknown"
ORDERS = (RANK, CONCURRENT, UNKNOWN)
ENGINES = ("vllm", "vllm-ascend")

# (engine, first version (release numbers), order, what was read)
ROWS = (
    (
        "vllm",
        (0,),
        RANK,
        "vLLM <= 0.32 starts its workers one by one in local-rank order (MultiprocExecutor._init_executor)",
    ),
    (
        "vllm",
        (0, 33),
        CONCURRENT,
        "vLLM >= 0.33 may start its workers at once (MultiprocExecutor._can_start_workers_concurrently)",
    ),
    (
        "vllm-ascend",
        (0,),
        RANK,
        "vllm-ascend <= 0.30 starts its workers one by one in local-rank order "
        "(AscendMultiprocExecutor, or the vLLM < 0.33 it requires)",
    ),
    (
        "vllm-ascend",
        (0, 31),
        UNKNOWN,
        "vllm-ascend newer than 0.30.0rc2, the newest release read: its worker start order is not known",
    ),
)
# What makes a vLLM that may start concurrently start in rank order after all
# (_can_start_workers_concurrently): each is (condition, reason).
SEQUENTIAL_WHEN = (
    ("fork", "VLLM_WORKER_MULTIPROC_METHOD=fork (the fork start method starts them one by one)"),
    ("single", "a local world of one worker"),
    ("cpu", "the CPU platform"),
    ("numa_bind", "--numa-bind on (vLLM's NUMA wrapper starts them one by one)"),
)
_NO_VERSION = {
    "vllm": (UNKNOWN, "the host's vLLM version is not known: its workers may start at once"),
    "vllm-ascend": (
        RANK,
        "every vllm-ascend release read (up to 0.30.0rc2) starts its workers one by one in local-rank order",
    ),
}
_VERSION_RE = re.compile(r"^v?(\d{1,6}(?:\.\d{1,6}){0,5})")
ENGINE_OF_VENDOR = {"ascend": "vllm-ascend", "nvidia": "vllm", "amd": "vllm"}


def release_numbers(version):
    """The release numbers of a version text (``0.34.0rc1`` -> ``(0, 34, 0)``), trailing
    zeros dropped; None when it does not start with one. A pre-release counts as its release:
    vLLM's release candidates carry the release's executor."""
    if not isinstance(version, str):
        return None
    match = _VERSION_RE.match(version.strip())
    if not match:
        return None
    numbers = [int(x) for x in match.group(1).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def decide(engine, version=None, start_method=None, local_world=None, cpu_platform=False, numa_bind=False):
    """``{engine, version, order, reason}``: how ``engine`` at ``version`` starts the workers
    of an instance. ``start_method``: the instance's ``VLLM_WORKER_MULTIPROC_METHOD`` (None:
    unset, which ``vllm serve`` makes spawn); ``local_world``: workers per engine, when known;
    ``numa_bind``: vLLM's ``--numa-bind`` is on."""
    out = {"engine": engine, "version": version}
    if engine not in ENGINES:
        out.update(order=UNKNOWN, reason="engine %r is not one of %s" % (engine, ", ".join(ENGINES)))
        return out
    numbers = release_numbers(version)
    if numbers is None:
        order, reason = _NO_VERSION[engine]
        if version is not None:
            reason = "version %r is not a version: %s" % (version, reason)
        out.update(order=order, reason=reason)
        return out
    order, reason = UNKNOWN, None
    for row_engine, first, row_order, row_reason in ROWS:
        if row_engine == engine and numbers >= first:
            order, reason = row_order, row_reason
    if order == CONCURRENT:
        held = dict(
            fork=start_method == "fork", single=local_world == 1, cpu=bool(cpu_platform), numa_bind=bool(numa_bind)
        )
        for condition, why in SEQUENTIAL_WHEN:
            if held[condition]:
                order, reason = RANK, "%s, but not here: %s" % (reason, why)
                break
    out.update(order=order, reason=reason)
    return out


def of_facts(topology):
    """The decision for a host's facts (``vendor``; ``vllm`` and ``vllm_ascend``:
    ``{version, source}``), with ``source``: where the version was read. Without a vendor
    that runs vLLM: None."""
    vendor = topology.get("vendor")
    if vendor is None and topology.get("npus"):
        vendor = "ascend"  # facts from before the vendor field: npu-smi's NPUs
    engine = ENGINE_OF_VENDOR.get(vendor) if isinstance(vendor, str) else None
    if engine is None:
        return None
    found = topology.get("vllm_ascend" if engine == "vllm-ascend" else "vllm")
    version = source = None
    if isinstance(found, dict) and isinstance(found.get("version"), str):
        version, source = found["version"], found.get("source")
    out = decide(engine, version)
    out["source"] = source if isinstance(source, str) else None
    return out
