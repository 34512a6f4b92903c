#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: npu_share_dirs
short_description: Prepare the host paths the Ascend device plugin needs for NPU soft share
version_added: 0.1.0
description:
  - Creates the soft-share root (the device plugin's C(-softShareDevConfigDir)) and one
    directory C(<root>/<phy_id>) per physical chip (die on Atlas A3 with single-die mode). This is
    the RFC's C(/share_device/{deviceId}); the shipped plugin creates C(<root>/<phy>/<die>) files
    inside them on demand and mounts each into the container at C(/dev/shm/<die>).
  - Creates C(/etc/enpu/) (mode 0755; the plugin writes each vNPU's C(npu_info.config) below it),
    C(/etc/vnpu.cfg) as an empty file (mode 0644) when absent (the DaemonSet mounts it as hostPath
    type C(File); an existing file is never rewritten) and C(/var/log/mindx-dl/devicePlugin) mode 0750.
  - Every path is checked first - no symlink on the way, no C(..), the right file type, the root's
    parent exists (the plugin checks it) - so a refused run changes nothing.
  - See C(docs/softshare.md) for why each path exists.
options:
  root:
    description: The soft-share root (C(-softShareDevConfigDir)), for example C(/share_device). Absolute; its parent must exist.
    type: path
    required: true
  topology:
    description:
      - The facts C(ansible_facts['npu_topology']); one directory per NPU entry's C(phy_id) (its
        logic id when the physical id is unknown).
      - Exactly one of O(topology) and O(chips).
    type: dict
  chips:
    description: Physical chip ids instead of O(topology).
    type: list
    elements: int
  owner:
    description: Owner of the root and the chip directories.
    type: str
    default: root
  group:
    description:
      - Group of the root and the chip directories.
      - Default C(HwHiAiUser) (the Ascend runtime user's group) when that group exists on the
        host, else C(root).
    type: str
  mode:
    description:
      - Mode of the root and the chip directories (octal string of 3 or 4 digits, for example
        V(0750) or V(1777)).
      - The default lets the runtime group traverse and read; the plugin, as root, writes.
      - The setuid and setgid bits are refused, and so is a world-writable mode without the
        sticky bit (V(0777)) unless O(allow_world_writable=true).
    type: str
    default: '0750'
  allow_world_writable:
    description:
      - Accept a world-writable O(mode) without the sticky bit, where anyone on the host may
        delete or replace the files others put in the directories.
    type: bool
    default: false
  prune:
    description:
      - Remove C(<root>/<number>) directories of chips that are gone, only when empty.
      - Non-empty ones are left in place, reported in RV(kept) with a warning.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details: Reports the same C(changed) and RV(created) without touching the host.
  diff_mode:
    support: full
    details: One C(diff) entry per path created or changed, and per directory removed by O(prune).
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.host_root
notes:
  - The module is idempotent; a second run reports C(changed=false).
  - "Errors name the path and the problem, for example
    C(refusing path /share_device: /share_device is a symlink), or
    C(root /missing/share_device: parent directory /missing does not exist) adding that the device
    plugin requires it."
seealso:
  - module: npuops.fleet.npu_topology_facts
"""

EXAMPLES = r"""
- name: Gather the topology
  npuops.fleet.npu_topology_facts:

- name: Prepare soft-share directories from the gathered facts
  npuops.fleet.npu_share_dirs:
    root: /share_device
    topology: "{{ ansible_facts['npu_topology'] }}"

- name: Prepare them for chips 0-7, removing directories of chips that are gone
  npuops.fleet.npu_share_dirs:
    root: /share_device
    chips: [0, 1, 2, 3, 4, 5, 6, 7]
    prune: true
"""

RETURN = r"""
chips:
  description: Physical chip ids a directory was ensured for.
  returned: always
  type: list
  elements: int
  sample: [0, 1, 2, 3, 4, 5, 6, 7]
paths:
  description: Every host path the module manages.
  returned: always
  type: list
  elements: str
  sample: [/share_device, /share_device/0, /etc/enpu, /etc/vnpu.cfg]
created:
  description: Host paths created by this run (would be created, in check mode).
  returned: always
  type: list
  elements: str
  sample: [/share_device/7]
removed:
  description: Empty chip directories removed by O(prune).
  returned: always
  type: list
  elements: str
kept:
  description: Directories of chips that are gone but not empty, left in place.
  returned: always
  type: list
  elements: str
group:
  description: The group used for the root and chip directories.
  returned: always
  type: str
  sample: HwHiAiUser
"""

import grp
import os

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, UnsafePathError
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import host_path
from ansible_collections.npuops.fleet.plugins.module_utils.softshare import host_dirs

RUNTIME_GROUP = "HwHiAiUser"


def default_group():
    try:
        grp.getgrnam(RUNTIME_GROUP)
        return RUNTIME_GROUP
    except KeyError:
        return "root"


def precheck(host_root, entries):
    """Refuse symlinks, '..' and wrong file types on every path before anything is created."""
    for kind, path, _mode, _owner, _group in entries:
        real = host_path(host_root, path)
        if os.path.lexists(real) and os.path.isdir(real) != (kind == "dir"):
            raise UnsafePathError(path, "exists and is not a %s" % ("directory" if kind == "dir" else "regular file"))


def prune_dirs(host_root, root, chips, check_mode):
    # through directory fds: a symlink swapped in cannot make it remove anything outside
    return fileops.prune_empty_dirs(host_root, root, set(chips), check_mode)


def ensure(host_root, entry, check):
    kind, path, mode, owner, group = entry
    if kind == "dir":
        return fileops.ensure_dir(host_root, path, mode=mode, owner=owner, group=group, check_mode=check)
    return fileops.ensure_file(
        host_root,
        path,
        "",
        mode=mode,
        owner=owner,
        group=group,
        check_mode=check,
        create_parents=True,
        keep_content=True,
    )


def prepare(module):
    params = module.params
    host_root, check = params["host_root"], module.check_mode
    root = host_dirs.normal_root(params["root"])
    chips = host_dirs.chip_ids(params["topology"], params["chips"])
    mode = host_dirs.parse_mode(params["mode"], params["allow_world_writable"])
    group = params["group"] or default_group()
    fileops.resolve_owner(params["owner"], group)
    parent = os.path.dirname(root)
    if not os.path.isdir(host_path(host_root, parent)):
        raise NpuopsError(
            "root %s: parent directory %s does not exist (the device plugin requires it)" % (root, parent)
        )
    entries = host_dirs.layout(root, chips, mode, params["owner"], group)
    precheck(host_root, entries)
    results = [ensure(host_root, entry, check) for entry in entries]
    removed, kept = prune_dirs(host_root, root, chips, check) if params["prune"] else ([], [])
    diff = [r["diff"] for r in results if r["changed"]]
    diff += [{"before": {"path": p, "state": "directory"}, "after": {"path": p, "state": "absent"}} for p in removed]
    return dict(
        changed=any(r["changed"] for r in results) or bool(removed),
        chips=chips,
        paths=[r["path"] for r in results],
        created=[r["path"] for r in results if r["created"]],
        removed=removed,
        kept=kept,
        group=group,
        diff=diff,
        warnings=["%s belongs to a chip that is gone but is not empty; left in place" % path for path in kept],
    )


def main():
    run(
        dict(
            root=dict(type="path", required=True),
            topology=dict(type="dict"),
            chips=dict(type="list", elements="int"),
            owner=dict(type="str", default="root"),
            group=dict(type="str"),
            mode=dict(type="str", default="0750"),
            allow_world_writable=dict(type="bool", default=False),
            prune=dict(type="bool", default=False),
            host_root=dict(type="path", default="/"),
        ),
        prepare,
        mutually_exclusive=[("topology", "chips")],
        required_one_of=[("topology", "chips")],
    )


if __name__ == "__main__":
    main()
