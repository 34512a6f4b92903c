# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safe host paths: absolute, no ``.``/``..`` components, no NUL, and (under a ``host_root``
prefix) no symlink between the root and the target. Every layer that names a host path checks
it here: the host I/O readers and the file effects of ``apply/``.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.npuops.fleet.plugins.module_utils.errors import UnsafePathError


def check_components(path):
    """Reject a host path that is relative or has ``.``/``..`` components or NUL bytes."""
    if not isinstance(path, str) or not path:
        raise UnsafePathError(repr(path), "a path must be a non-empty string")
    if "\x00" in path:
        raise UnsafePathError(repr(path), "NUL byte in path")
    if not path.startswith("/"):
        raise UnsafePathError(path, "must be absolute")
    parts = [p for p in path.split("/") if p]
    for part in parts:
        if part in (".", ".."):
            raise UnsafePathError(path, "'.' and '..' components are not allowed")
    return parts


def host_path(host_root, path):
    """The real location of host path ``path`` under ``host_root`` (``/`` = the real host).

    Refuses ``..``, relative paths and any existing symlink between ``host_root`` and the
    target (the target itself included). ``host_root`` itself may be a symlink only if it is
    given explicitly by the caller (a sandbox); it must be absolute.
    """
    root = host_root or "/"
    if not root.startswith("/"):
        raise UnsafePathError(root, "host_root must be absolute")
    parts = check_components(path)
    real = os.path.normpath(root)
    for part in parts:
        real = os.path.join(real, part)
        if os.path.islink(real):
            raise UnsafePathError(path, "%s is a symlink" % real)
    return real if parts else os.path.normpath(root)
