# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each vLLM version accepts and does, in one place: the wrapper picks its flags here.

A row is a flag or a behaviour, the first release that has it, and where that was read in
vLLM's own source (the sdists of the releases named; the first release is the one whose
sdist has it while the release before does not). A flag the host's vLLM lacks is never
passed: vLLM's argument parser exits on an unknown argument.

``state(version, key)`` answers True / False, or None when it cannot be known: no version,
a version that is not one, or a pre-release / dev build of the very release that brought the
row (it may have been built before the change).

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


class Row(object):
    __slots__ = ("key", "since", "what", "source", "platforms")

    def __init__(self, key, since, what, source, platforms=None):
        self.key, self.since, self.what, self.source = key, since, what, source
        self.platforms = platforms


# vLLM's platforms whose processes its NUMA binding (numactl at spawn) wraps: the
# "cuda alike" ones (vllm/utils/numa_utils.py _is_auto_numa_available: is_cuda_alike();
# cuda.py and rocm.py both define get_all_device_numa_nodes, v0.20.0 and v0.34.0). The
# explicit --numa-bind path has no platform gate (configure_subprocess, v0.32.0). vllm-ascend
# resets a truthy numa_bind (vllm_ascend/platform.py, 0.30.0rc2): not Ascend.
NUMA_BIND_VENDORS = ("nvidia", "amd")

NUMA_BIND = "--numa-bind"
NO_NUMA_BIND = "--no-numa-bind"
DEVICE_IDS = "--device-ids"
NUMA_BIND_AUTO = "numa_bind_auto"
CONCURRENT_START = "concurrent_worker_start"

ROWS = (
    Row(
        NUMA_BIND,
        "0.20.0",
        "--numa-bind / --no-numa-bind (argparse.BooleanOptionalAction: a bool field of "
        "ParallelConfig), with --numa-bind-nodes and --numa-bind-cpus",
        "vllm/engine/arg_utils.py and vllm/config/parallel.py (numa_bind: bool = False), "
        "v0.20.0; absent in v0.19.1 (vllm#38635, merged 2026-04-09)",
        platforms=NUMA_BIND_VENDORS,
    ),
    Row(
        DEVICE_IDS,
        "0.24.0",
        "--device-ids: physical device ids, or indices into the visibility variable when it "
        "is set (EngineArgs._resolve_device_ids); the worker of local rank r in DP engine d "
        "gets D'[d*ws + r] (get_physical_gpu_ids_for_local_dp_rank, Worker.init_device)",
        "vllm/engine/arg_utils.py, vllm/v1/engine/utils.py, vllm/v1/worker/gpu_worker.py, "
        "v0.24.0 and v0.32.0-v0.34.0 (the same rule); absent in v0.23.0. vllm-ascend's worker "
        "skips its DP shift when assigned_physical_gpu_ids is set and binds "
        "device_id_to_physical_device_id(local_rank): vllm_ascend/worker/worker.py "
        "_init_device, 0.26.0rc1-0.30.0rc2",
    ),
    Row(
        NUMA_BIND_AUTO,
        "0.34.0",
        "numa_bind unset means auto: vLLM numactl-binds EngineCore and each worker "
        "(--cpunodebind and --preferred) when the launching process may run on every CPU, "
        "numactl is on PATH, the host has 2+ nodes and no --device-ids is given",
        "vllm/config/parallel.py (numa_bind: bool | None = None), "
        "vllm/utils/numa_utils.py configure_subprocess, _can_auto_bind, v0.34.0; "
        "bool = False in v0.32.0 and v0.33.0",
        platforms=NUMA_BIND_VENDORS,
    ),
    Row(
        CONCURRENT_START,
        "0.33.0",
        "workers start concurrently (spawn, local world > 1, not the CPU platform, "
        "numa_bind off): start order is not rank order",
        "vllm/v1/executor/multiproc_executor.py _can_start_workers_concurrently, v0.33.0 and "
        "v0.34.0; absent in v0.32.0",
    ),
)
BY_KEY = dict((row.key, row) for row in ROWS)

_VERSION = re.compile(
    r"^v?(\d{1,6}(?:\.\d{1,6}){0,4})((?:a|b|rc|\.?post|\.?dev)\d{0,6})*"
    r"(?:\+[A-Za-z0-9.]{1,64})?\Z",
    re.IGNORECASE,
)


# vLLM's parser takes an underscore spelling of every option too (FlexibleArgumentParser)
DEVICE_IDS_FLAGS = ("--device-ids", "--device_ids")
MAX_DEVICE_IDS = 4096
_INDEX = re.compile(r"^[0-9]{1,6}\Z")


def flag_value(argv, names):
    """``(index, value)`` of the one ``--flag value`` / ``--flag=value`` in ``argv``, or None.
    ValueError when it is given twice or has no value."""
    found = []
    index = 1
    while index < len(argv):
        arg = argv[index]
        for name in names:
            if arg == name:
                if index + 1 >= len(argv):
                    raise ValueError("command[%d]: %s has no value" % (index, name))
                found.append((index, argv[index + 1]))
                index += 1
                break
            if isinstance(arg, str) and arg.startswith(name + "="):
                found.append((index, arg[len(name) + 1 :]))
                break
        index += 1
    if len(found) > 1:
        raise ValueError(
            "command: %s is given %d times (at %s); give it once"
            % (names[0], len(found), ", ".join("[%d]" % i for i, _v in found))
        )
    return found[0] if found else None


def device_ids(argv):
    """The ``--device-ids`` of a command as a list of ints, or None when it has none.
    ValueError naming the flag for a value the plan cannot follow."""
    found = flag_value(list(argv or []), DEVICE_IDS_FLAGS)
    if found is None:
        return None
    index, value = found[0], str(found[1])
    parts = [part.strip() for part in value.split(",")]
    if len(parts) > MAX_DEVICE_IDS or not value.strip():
        raise ValueError(
            "command[%d]: --device-ids %r: expected 1 to %d comma-separated "
            "device indexes" % (index, value[:60], MAX_DEVICE_IDS)
        )
    if not all(_INDEX.match(part) for part in parts):
        raise ValueError(
            "command[%d]: --device-ids %r: only device indexes can be followed "
            "by the plan (vLLM also takes UUIDs, which the plan does not know); "
            "give indexes into the instance's devices" % (index, value[:60])
        )
    ids = [int(part) for part in parts]
    if len(set(ids)) != len(ids):
        raise ValueError("command[%d]: --device-ids %s lists an index twice (vLLM refuses duplicates)" % (index, value))
    return ids


def device_order(argv, visible, variable):
    """The devices in rank order: ``visible`` without ``--device-ids``, else
    ``[visible[i] for i in ids]``: vLLM reads the ids as indices into the visibility variable
    (``variable``), which the wrapper sets to ``visible`` (EngineArgs._resolve_device_ids,
    v0.24.0-v0.34.0). ValueError naming the flag for an index out of range."""
    ids = device_ids(argv)
    if ids is None:
        return list(visible)
    out_of_range = [i for i in ids if i >= len(visible)]
    if out_of_range:
        raise ValueError(
            "command: --device-ids %s: index %d is out of range for the "
            "instance's %d devices (%s=%s: vLLM reads the ids as indices into it)"
            % (
                ",".join(str(i) for i in ids),
                out_of_range[0],
                len(visible),
                variable,
                ",".join(str(d) for d in visible),
            )
        )
    return [visible[i] for i in ids]


def release_of(version):
    """``(release tuple without trailing zeros, final)`` of a version string, or None when it
    is not one. ``final`` is False for a pre-release or a dev build (a post release is final)."""
    if not isinstance(version, str):
        return None
    text = version.strip()
    match = _VERSION.match(text)
    if not match:
        return None
    release = tuple(int(x) for x in match.group(1).split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    tail = text[match.end(1) :].split("+")[0].lower()
    final = not re.search(r"(a|b|rc|dev)\d*", tail.replace("post", ""))
    return release, final


def state(version, key):
    """True when vLLM ``version`` has row ``key``, False when it has not, None when unknown."""
    row = BY_KEY[key]
    have = release_of(version)
    if have is None:
        return None
    release, final = have
    since = release_of(row.since)[0]
    if release > since:
        return True
    if release == since:
        return True if final else None
    return False


def applies_to(key, vendor):
    """Whether row ``key`` concerns vLLM on ``vendor``'s platform (every one when unset)."""
    platforms = BY_KEY[key].platforms
    return platforms is None or vendor in platforms


def table():
    """The rows as plain data (docs, the audit)."""
    return [
        {
            "key": r.key,
            "since": r.since,
            "what": r.what,
            "source": r.source,
            "platforms": list(r.platforms) if r.platforms else None,
        }
        for r in ROWS
    ]
