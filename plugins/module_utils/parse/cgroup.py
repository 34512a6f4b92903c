# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cgroup mode of a host, from ``/proc/self/mounts`` and the unified hierarchy's
``cgroup.controllers``: text -> ``{"version": 1 | 2 | "hybrid" | None, "cpuset_controller":
bool | None}``.

It decides what confines a vLLM instance's process tree. systemd's ``AllowedCPUs=`` is a cgroup
v2 cpuset: only on a unified hierarchy (``cgroup2`` on ``/sys/fs/cgroup``) with the ``cpuset``
controller does the kernel keep every thread of the unit on those CPUs. On cgroup v1 and on the
hybrid layout (v1 controllers, an empty ``cgroup2`` on ``/sys/fs/cgroup/unified``) systemd
ignores ``AllowedCPUs=`` without a word; the tree is then held only by ``CPUAffinity=`` at
start and by the binder and reconciler afterwards.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

MAX_LINES = 65536  # a host has tens of mounts; a bound for a made-up file


def cgroup_mode(mounts, controllers=None):
    """``mounts``: the text of /proc/self/mounts (None: unknown); ``controllers``: the text of
    /sys/fs/cgroup/cgroup.controllers (None: absent)."""
    if mounts is None:
        return {"version": None, "cpuset_controller": None}
    unified_root = unified_other = v1 = False
    for number, line in enumerate(mounts.splitlines()):
        if number >= MAX_LINES:
            break
        fields = line.split()
        if len(fields) < 3:
            continue
        target, fstype = fields[1], fields[2]
        if fstype == "cgroup2":
            if target == "/sys/fs/cgroup":
                unified_root = True
            else:
                unified_other = True
        elif fstype == "cgroup":
            v1 = True
    if unified_root and not v1:
        words = (controllers or "").split()
        return {"version": 2, "cpuset_controller": "cpuset" in words}
    if v1 and (unified_other or unified_root):
        return {"version": "hybrid", "cpuset_controller": False}
    if v1:
        return {"version": 1, "cpuset_controller": False}
    return {"version": None, "cpuset_controller": None}


def confinement_warning(mode):
    """What confines a host-bound instance on this host, as a warning; None on a cgroup v2
    host with the cpuset controller (or when the mode is unknown)."""
    version = (mode or {}).get("version")
    if version is None or (version == 2 and mode.get("cpuset_controller")):
        return None
    what = (
        "cgroup v2 without the cpuset controller"
        if version == 2
        else "cgroup %s" % ("v1" if version == 1 else "hybrid (v1 controllers)")
    )
    return (
        "%s: systemd ignores AllowedCPUs= silently, so nothing keeps the instance's threads "
        "on its CPUs once they call sched_setaffinity; the tree is confined only by "
        "CPUAffinity= at start and by the binder and the reconciler, which pin back what "
        "moved at their next pass" % what
    )
