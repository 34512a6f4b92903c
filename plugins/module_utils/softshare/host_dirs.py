# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host paths a soft-share node needs, as data: the share root with one directory per
chip (the RFC's layout; the shipped plugin creates ``<root>/<phy>/<die>`` files on demand
inside them), ``/etc/enpu``, ``/etc/vnpu.cfg`` (must exist as a file, never truncated) and the
plugin's log directory (0750). ``npu_share_dirs`` applies them with ``apply/fileops``.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema
from ansible_collections.npuops.fleet.plugins.module_utils.softshare.plugin_config import check_root
from ansible_collections.npuops.fleet.plugins.module_utils.softshare.scheduler import chip_id

VNPU_CFG = "/etc/vnpu.cfg"
_MODE = re.compile(r"^0?[0-7]{3,4}\Z")
MAX_CHIP_ID = 65535  # far above any host (16 dies on an A3); a directory name, not a count
# (path, mode) of the fixed directories, owned by root
FIXED_DIRS = (("/etc/enpu", 0o755), ("/var/log/mindx-dl", 0o755), ("/var/log/mindx-dl/devicePlugin", 0o750))


def normal_root(root):
    """The share root as an absolute path without empty components; NpuopsError when the
    device plugin would refuse it."""
    problems = check_root(root)
    if problems:
        raise NpuopsError("root: " + "; ".join(problems))
    return "/" + "/".join(p for p in root.split("/") if p)


def chip_ids(topology=None, chips=None):
    """Sorted unique physical chip ids: ``chips`` as given, else those of the topology."""
    if chips is None:
        if topology is not None:
            schema.check_topology(topology)
        npus = (topology or {}).get("npus") or []
        chips = [chip_id(n) for n in npus if isinstance(n, dict)]
        if not chips or any(c is None for c in chips):
            raise NpuopsError("topology: no NPU with a phy_id or logic_id to create directories for")
    if any(not isinstance(c, int) or isinstance(c, bool) or not 0 <= c <= MAX_CHIP_ID for c in chips):
        raise NpuopsError("chips: physical ids must be integers from 0 to %d, got %r" % (MAX_CHIP_ID, chips))
    return sorted(set(chips))


def parse_mode(text, allow_world_writable=False):
    """The octal ``mode`` option (``"0750"``, ``"750"``, ``"1777"``) as an int.

    Refused: anything but 3 or 4 octal digits (one leading ``0`` more allowed), the setuid
    and setgid bits, and a world-writable mode without the sticky bit (anyone could delete
    or replace another's files in it) unless ``allow_world_writable``.
    """
    if not isinstance(text, str) or not _MODE.match(text):
        raise NpuopsError("mode: %r is not an octal mode (3 or 4 octal digits, e.g. '0750')" % (text,))
    mode = int(text, 8)
    if mode & 0o6000:
        raise NpuopsError("mode: %s sets the setuid or setgid bit; a share directory needs neither" % text)
    if mode & 0o002 and not mode & 0o1000 and not allow_world_writable:
        raise NpuopsError(
            "mode: %s makes the directories world-writable without the sticky "
            "bit (use e.g. '1777', or set allow_world_writable)" % text
        )
    return mode


def layout(root, chips, mode, owner, group):
    """What to ensure, in order: ``[(kind, path, mode, owner, group)]`` with kind ``dir`` or
    ``file`` (a file that must exist, its content kept)."""
    owned = [("dir", root, mode, owner, group)]
    owned += [("dir", "%s/%d" % (root, chip), mode, owner, group) for chip in chips]
    fixed = [("dir", path, dir_mode, "root", "root") for path, dir_mode in FIXED_DIRS[:1]]
    fixed.append(("file", VNPU_CFG, 0o644, "root", "root"))
    fixed += [("dir", path, dir_mode, "root", "root") for path, dir_mode in FIXED_DIRS[1:]]
    return owned + fixed
