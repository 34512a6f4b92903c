# -*- coding: utf-8 -*-
"""parse/cgroup.py: the cgroup mode from /proc/self/mounts, and what confines a vLLM tree there
(systemd enforces AllowedCPUs= only on cgroup v2 with the cpuset controller)."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.parse import cgroup

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "..", "fixtures", "real", "cgroup")

V2 = (
    "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,"
    "memory_recursiveprot 0 0\n"
)
V1 = (
    "tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0\n"
    "cgroup /sys/fs/cgroup/systemd cgroup rw,nosuid,nodev,noexec,relatime,xattr,"
    "name=systemd 0 0\n"
    "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset 0 0\n"
)


def test_the_hybrid_layout_of_this_machine_kind():
    """Recorded on the Firecracker VM the systemd tier runs on: v1 controllers (cpuset among
    them) plus an empty cgroup2 on /sys/fs/cgroup/unified - systemd ignores AllowedCPUs=."""
    with open(os.path.join(FIXTURES, "firecracker-hybrid.mounts")) as handle:
        text = handle.read().split("\n", 1)[1]  # the "# Source:" line off
    mode = cgroup.cgroup_mode(text, None)
    assert mode == {"version": "hybrid", "cpuset_controller": False}
    note = cgroup.confinement_warning(mode)
    assert "hybrid" in note and "AllowedCPUs=" in note and "CPUAffinity=" in note
    assert "reconciler" in note


@pytest.mark.parametrize(
    "mounts,controllers,want",
    [
        (V2, "cpuset cpu io memory hugetlb pids rdma misc\n", {"version": 2, "cpuset_controller": True}),
        (V2, "cpu io memory pids\n", {"version": 2, "cpuset_controller": False}),
        (V2, "", {"version": 2, "cpuset_controller": False}),  # nspawn's unified mode on a v1 host
        (V2, None, {"version": 2, "cpuset_controller": False}),
        (V1, None, {"version": 1, "cpuset_controller": False}),
        ("proc /proc proc rw 0 0\n", None, {"version": None, "cpuset_controller": None}),
        (None, None, {"version": None, "cpuset_controller": None}),
        ("garbage\n\n  \ncgroup2\n", None, {"version": None, "cpuset_controller": None}),
    ],
)
def test_modes(mounts, controllers, want):
    assert cgroup.cgroup_mode(mounts, controllers) == want


def test_only_v2_with_cpuset_confines_and_unknown_says_nothing():
    assert cgroup.confinement_warning({"version": 2, "cpuset_controller": True}) is None
    assert cgroup.confinement_warning({"version": None, "cpuset_controller": None}) is None
    assert cgroup.confinement_warning(None) is None
    assert "without the cpuset controller" in cgroup.confinement_warning({"version": 2, "cpuset_controller": False})
    assert "cgroup v1" in cgroup.confinement_warning({"version": 1, "cpuset_controller": False})


def test_the_input_is_bounded():
    huge = "x y z\n" * (cgroup.MAX_LINES + 10) + "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"
    assert cgroup.cgroup_mode(huge)["version"] is None
