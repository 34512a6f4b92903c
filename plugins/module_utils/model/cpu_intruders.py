# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Processes outside the vLLM trees that may run on the workers' isolated CPUs.

On a partitioned host (``npu_cpu_partition``) nothing but the instances' trees should be
allowed on the isolated CPUs. ``scan(io, isolated)`` reads ``/proc`` through a HostIO and
returns every user-space process whose ``Cpus_allowed_list`` reaches an isolated CPU and whose
cgroup is not a vLLM tree (``npuops-vllm.slice``, or an instance service not moved yet), each
named with its unit (from ``/proc/<pid>/cgroup``) and the CPU it last ran on
(``/proc/<pid>/stat`` field 39, proc(5)). Kernel threads (``PF_KTHREAD``) are left out: the
per-CPU ones belong on every CPU. ``isolated_cpus(io)`` reads the isolated CPUs the partition
recorded in its state file.

The drift kind ``cpu_intruder`` (``model/binding.drift``) and the reconciler's
``npuops_cpu_intruders`` metric (``standalone/binder``, through a reader over its own /proc
reads) come from here. Nothing here raises. Python 3.7, stdlib only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

# defined here, not in cpu_partition_facts: the binder imports this file, and its zipapp
# carries only what it imports (cpus/cpulist and errors beside this file)
STATE_FILE = "/var/lib/npuops/cpu_partition.json"
# the slice the instances' services run in once the host is partitioned
VLLM_SLICE = "npuops-vllm.slice"

MAX_PIDS = 65536
PF_KTHREAD = 0x00200000  # include/linux/sched.h
_VLLM_UNIT = re.compile(r"/vllm-[^/\n]*\.service(/|$)", re.M)
_UNIT = re.compile(r"([^/\n]+\.(?:service|scope))(?:/[^/\n]*)*$")


def isolated_cpus(io):
    """The isolated CPUs of the partition applied on this host, or None."""
    text = io.read_text(STATE_FILE)
    if not text:
        return None
    try:
        doc = json.loads(text[: 1 << 16])
        return set(cpulist.parse(str(doc.get("isolated") or ""), STATE_FILE)) or None
    except (ValueError, AttributeError, ParseError):
        return None


def _stat(text):
    """``(comm, flags, last cpu)`` from /proc/<pid>/stat text, or None."""
    if not text or ")" not in text:
        return None
    comm = text[text.find("(") + 1 : text.rfind(")")]
    rest = text[text.rfind(")") + 2 :].split()
    try:
        return comm, int(rest[6]), int(rest[36])
    except (IndexError, ValueError):
        return None


def unit_of(cgroup_text):
    """The unit a process runs in, from its /proc/<pid>/cgroup (v2 line first), or None."""
    lines = (cgroup_text or "").splitlines()
    lines.sort(key=lambda line: not line.startswith("0::"))
    for line in lines:
        path = line.split(":", 2)[-1].strip()
        match = _UNIT.search(path)
        if match:
            return match.group(1)
    return None


def in_vllm_tree(cgroup_text):
    text = cgroup_text or ""
    return "/%s/" % VLLM_SLICE in text or bool(_VLLM_UNIT.search(text))


def scan(io, isolated, limit=MAX_PIDS):
    """``[{pid, comm, unit, cpus, last_cpu}]`` of the processes outside the vLLM trees allowed
    on ``isolated`` (a set of CPU ids), by pid."""
    isolated = set(isolated or ())
    if not isolated:
        return []
    pids = sorted(int(n) for n in (io.listdir("/proc") or []) if n.isdigit())[:limit]
    out = []
    for pid in pids:
        stat = _stat(io.read_text("/proc/%d/stat" % pid))
        if stat is None or stat[1] & PF_KTHREAD:
            continue
        cgroup = io.read_text("/proc/%d/cgroup" % pid)
        if in_vllm_tree(cgroup):
            continue
        allowed = None
        for line in (io.read_text("/proc/%d/status" % pid) or "").splitlines():
            if line.startswith("Cpus_allowed_list:"):
                try:
                    allowed = set(cpulist.parse(line.split(":", 1)[1].strip()))
                except ParseError:
                    allowed = None
        reach = (allowed or set()) & isolated
        if reach:
            out.append(
                {
                    "pid": pid,
                    "comm": stat[0],
                    "unit": unit_of(cgroup),
                    "cpus": cpulist.format(reach),
                    "last_cpu": stat[2],
                }
            )
    return out
