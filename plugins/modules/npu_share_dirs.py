#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: npu_share_dirs
short_description: Prepare the host paths the Ascend device plugin needs for NPU soft share
version_added: 0.1.0
description:
  - Creates the soft-share root (the device plugin's C(-softShareDevConfigDir)) and one
    directory C(<root>/<phy_id>) per physical chip (die on Atlas A3 with single-die mode). This is
    the RFC's C(/share_device/{deviceId}); the shipped plugin creates C(<root>/<phy>/<die>) files
    inside them on demand and mounts each into the container at C(/dev/shm/<die>).
  - Creates C(/etc/enpu/) (the plugin writes each vNPU's C(npu_info.config) below it),
    C(/etc/vnpu.cfg) as an empty file when absent (the DaemonSet mounts it as hostPath type C(File);
    an existing file is never rewritten) and C(/var/log/mindx-dl/devicePlugin) mode 0750.
  - Refuses a root that is or passes through a symlink, or contains C(..); the root's parent
    must exist (the plugin checks it). Everything is validated before anything is created.
options:
  root:
    description: The soft-share root, for example C(/share_device). Absolute; its parent must exist.
    type: path
    required: true
  topology:
    description: The facts C(ansible_facts['npu_topology']); one directory per NPU entry's C(phy_id).
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
    description: Mode of the root and the chip directories (octal string).
    type: str
    default: '0750'
  prune:
    description: Remove C(<root>/<number>) directories of chips that are gone, only when empty.
    type: bool
    default: false
extends_documentation_fragment:
  - npuops.fleet.attributes
  - npuops.fleet.host_root
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
author:
  - npuops.fleet contributors (@npuops)
'''

EXAMPLES = r'''
- name: Prepare soft-share directories from the gathered facts
  npuops.fleet.npu_share_dirs:
    root: /share_device
    topology: "{{ ansible_facts['npu_topology'] }}"

- name: Prepare them for chips 0-7, removing directories of chips that are gone
  npuops.fleet.npu_share_dirs:
    root: /share_device
    chips: [0, 1, 2, 3, 4, 5, 6, 7]
    prune: true
'''

RETURN = r'''
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
'''

import grp
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.softshare import core as softshare
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, UnsafePathError

RUNTIME_GROUP = "HwHiAiUser"


def default_group():
    try:
        grp.getgrnam(RUNTIME_GROUP)
        return RUNTIME_GROUP
    except KeyError:
        return "root"


FIXED_DIRS = ("/etc/enpu", "/var/log/mindx-dl", "/var/log/mindx-dl/devicePlugin")
VNPU_CFG = "/etc/vnpu.cfg"


def precheck(host_root, dirs, files):
    """Refuse symlinks, '..' and wrong file types on every path before anything is created."""
    for path, want_dir in [(d, True) for d in dirs] + [(f, False) for f in files]:
        real = fileops.host_path(host_root, path)
        if os.path.lexists(real) and os.path.isdir(real) != want_dir:
            raise UnsafePathError(path, "exists and is not a %s" % ("directory" if want_dir
                                                                    else "regular file"))


def chip_ids(params):
    if params["chips"] is not None:
        chips = params["chips"]
    else:
        npus = (params["topology"] or {}).get("npus") or []
        chips = [softshare.chip_id(n) for n in npus if isinstance(n, dict)]
        if not chips or any(c is None for c in chips):
            raise NpuopsError("topology: no NPU with a phy_id or logic_id to create directories for")
    if any(not isinstance(c, int) or c < 0 for c in chips):
        raise NpuopsError("chips: physical ids must be non-negative integers, got %r" % (chips,))
    return sorted(set(chips))


def prune_dirs(host_root, root, chips, check_mode):
    removed, kept = [], []
    real_root = fileops.host_path(host_root, root)
    if not os.path.isdir(real_root):
        return removed, kept
    for name in sorted(os.listdir(real_root)):
        path = root.rstrip("/") + "/" + name
        real = os.path.join(real_root, name)
        if not name.isdigit() or int(name) in chips or os.path.islink(real) or not os.path.isdir(real):
            continue
        if os.listdir(real):
            kept.append(path)
            continue
        removed.append(path)
        if not check_mode:
            os.rmdir(real)
    return removed, kept


def run(module):
    params = module.params
    host_root, check = params["host_root"], module.check_mode
    root = params["root"]
    problems = softshare.check_root(root)
    if problems:
        raise NpuopsError("root: " + "; ".join(problems))
    root = "/" + "/".join(p for p in root.split("/") if p)
    chips = chip_ids(params)
    try:
        mode = int(params["mode"], 8)
    except ValueError:
        raise NpuopsError("mode: %r is not an octal mode" % params["mode"])
    group = params["group"] or default_group()
    fileops.resolve_owner(params["owner"], group)
    parent = os.path.dirname(root)
    if not os.path.isdir(fileops.host_path(host_root, parent)):
        raise NpuopsError("root %s: parent directory %s does not exist (the device plugin "
                          "requires it)" % (root, parent))
    dirs = [root] + ["%s/%d" % (root, c) for c in chips] + list(FIXED_DIRS)
    precheck(host_root, dirs, [VNPU_CFG])
    owned = dict(owner=params["owner"], group=group, mode=mode, check_mode=check)
    results = [fileops.ensure_dir(host_root, root, **owned)]
    results += [fileops.ensure_dir(host_root, "%s/%d" % (root, c), **owned) for c in chips]
    results += [
        fileops.ensure_dir(host_root, "/etc/enpu", mode=0o755, owner="root", group="root",
                           check_mode=check),
        fileops.ensure_file(host_root, VNPU_CFG, "", mode=0o644, owner="root", group="root",
                            check_mode=check, create_parents=True, keep_content=True),
        fileops.ensure_dir(host_root, "/var/log/mindx-dl", mode=0o755, owner="root", group="root",
                           check_mode=check),
        fileops.ensure_dir(host_root, "/var/log/mindx-dl/devicePlugin", mode=0o750, owner="root",
                           group="root", check_mode=check),
    ]
    removed, kept = prune_dirs(host_root, root, chips, check) if params["prune"] else ([], [])
    for path in kept:
        module.warn("%s belongs to a chip that is gone but is not empty; left in place" % path)
    diff = [r["diff"] for r in results if r["changed"]]
    diff += [{"before": {"path": p, "state": "directory"}, "after": {"path": p, "state": "absent"}}
             for p in removed]
    return dict(changed=any(r["changed"] for r in results) or bool(removed), chips=chips,
                paths=[r["path"] for r in results], created=[r["path"] for r in results if r["created"]],
                removed=removed, kept=kept, group=group, diff=diff)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", required=True),
            topology=dict(type="dict"),
            chips=dict(type="list", elements="int"),
            owner=dict(type="str", default="root"),
            group=dict(type="str"),
            mode=dict(type="str", default="0750"),
            prune=dict(type="bool", default=False),
            host_root=dict(type="path", default="/"),
        ),
        mutually_exclusive=[("topology", "chips")],
        required_one_of=[("topology", "chips")],
        supports_check_mode=True,
    )
    try:
        result = run(module)
    except (NpuopsError, UnsafePathError) as err:
        module.fail_json(msg=str(err))
    except ValueError as err:
        module.fail_json(msg="owner/group: %s" % err)
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
