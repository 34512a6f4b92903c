# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Root-safe file effects under a ``host_root`` prefix: validate first, then act atomically.

Every function here is the only way modules touch files (paths are mapped and checked by
``host/paths.host_path``: no relative paths, ``..`` components or symlinks on the way):
- ``ensure_file`` / ``ensure_dir`` compare desired with current state, report ``changed`` the
  same way in check mode and real mode, return a diff, and only write when not in check mode;
- writes go to a temporary file in the same directory, are fsync'ed and renamed over the
  target, so a reader never sees a half-written file.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import os
import pwd
import stat
import tempfile

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, UnsafePathError
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import host_path


def read_text(real_path):
    """Contents of a regular file, or None when it does not exist."""
    try:
        with open(real_path, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")
    except (IOError, OSError) as err:
        if getattr(err, "errno", None) == 2:
            return None
        raise


def _numeric_id(name, lookup):
    """A user or group as its number: None stays None, digits are taken as the id, a name is
    looked up (KeyError when unknown)."""
    if name is None:
        return None
    if isinstance(name, int) or str(name).isdigit():
        return int(name)
    return lookup(name)[2]


def resolve_owner(owner, group):
    """Return (uid, gid); NpuopsError naming the unknown user or group."""
    try:
        uid = _numeric_id(owner, pwd.getpwnam)
    except KeyError:
        raise NpuopsError("owner/group: unknown user %r" % (owner,))
    try:
        gid = _numeric_id(group, grp.getgrnam)
    except KeyError:
        raise NpuopsError("owner/group: unknown group %r" % (group,))
    return uid, gid


def _attr_changes(real, mode, uid, gid):
    """Differences between the current and desired mode/owner of an existing path."""
    st = os.lstat(real)
    changes = {}
    if mode is not None and stat.S_IMODE(st.st_mode) != mode:
        changes["mode"] = ("%04o" % stat.S_IMODE(st.st_mode), "%04o" % mode)
    if uid is not None and st.st_uid != uid:
        changes["owner"] = (st.st_uid, uid)
    if gid is not None and st.st_gid != gid:
        changes["group"] = (st.st_gid, gid)
    return changes


def _apply_attrs(real, mode, uid, gid):
    if uid is not None or gid is not None:
        os.chown(real, -1 if uid is None else uid, -1 if gid is None else gid)
    if mode is not None:
        os.chmod(real, mode)


def write_atomic(real, content, mode=None, uid=None, gid=None):
    """Write ``content`` (str or bytes) to ``real`` through a temp file + fsync + rename."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    directory = os.path.dirname(real)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(real), dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif os.path.exists(real):
            os.chmod(tmp, stat.S_IMODE(os.stat(real).st_mode))
        else:
            os.chmod(tmp, 0o644)
        if uid is not None or gid is not None:
            os.chown(tmp, -1 if uid is None else uid, -1 if gid is None else gid)
        os.rename(tmp, real)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def ensure_dir(host_root, path, mode=None, owner=None, group=None, check_mode=False):
    """Make ``path`` (and missing parents, mode 0755) a directory with the given attributes.

    Returns ``{"path", "changed", "created", "diff"}``; in check mode nothing is touched but
    ``changed`` is what a real run would report.
    """
    real = host_path(host_root, path)
    uid, gid = resolve_owner(owner, group)
    result = {"path": path, "changed": False, "created": False,
              "diff": {"before": {"path": path, "state": "absent"},
                       "after": {"path": path, "state": "directory"}}}
    if os.path.lexists(real):
        if not os.path.isdir(real) or os.path.islink(real):
            raise UnsafePathError(path, "exists and is not a directory")
        changes = _attr_changes(real, mode, uid, gid)
        result["diff"]["before"] = {"path": path, "state": "directory"}
        for key, (old, new) in changes.items():
            result["diff"]["before"][key] = old
            result["diff"]["after"][key] = new
        if changes:
            result["changed"] = True
            if not check_mode:
                _apply_attrs(real, mode, uid, gid)
        return result
    result["changed"] = result["created"] = True
    if mode is not None:
        result["diff"]["after"]["mode"] = "%04o" % mode
    if check_mode:
        return result
    parent = os.path.dirname(path.rstrip("/")) or "/"
    if parent != "/" and not os.path.isdir(host_path(host_root, parent)):
        ensure_dir(host_root, parent, mode=0o755)
    os.mkdir(real)
    _apply_attrs(real, 0o755 if mode is None else mode, uid, gid)
    return result


def ensure_file(host_root, path, content=None, mode=None, owner=None, group=None,
                check_mode=False, create_parents=False, keep_content=False):
    """Make ``path`` a regular file with ``content`` (str, or bytes) and attributes, atomically.

    ``keep_content=True``: create the file (with ``content`` or empty) only when absent and
    never rewrite an existing one (e.g. ``/etc/vnpu.cfg``).
    Returns ``{"path", "changed", "created", "diff"}`` with a text diff of the content.
    """
    real = host_path(host_root, path)
    uid, gid = resolve_owner(owner, group)
    content = "" if content is None else content
    shown = "<%d bytes>\n" % len(content) if isinstance(content, bytes) else content
    result = {"path": path, "changed": False, "created": False,
              "diff": {"before_header": path, "after_header": path, "before": "", "after": shown}}
    parent_real = os.path.dirname(real)
    if os.path.lexists(real):
        if os.path.islink(real) or not os.path.isfile(real):
            raise UnsafePathError(path, "exists and is not a regular file")
        current = read_text(real)
        result["diff"]["before"] = current
        if keep_content:
            result["diff"]["after"] = current
        changes = _attr_changes(real, mode, uid, gid)
        if isinstance(content, bytes):
            # binary content (the binder zipapp): compared as bytes, shown in a diff by size
            current_bytes = current.encode("utf-8", "surrogateescape")
            content_differs = (not keep_content) and current_bytes != content
            result["diff"]["before"] = "<%d bytes>\n" % len(current_bytes)
            result["diff"]["after"] = "<%d bytes>\n" % len(content)
        else:
            content_differs = (not keep_content) and current != content
        if content_differs or changes:
            result["changed"] = True
            if not check_mode:
                if content_differs:
                    write_atomic(real, content, mode, uid, gid)
                else:
                    _apply_attrs(real, mode, uid, gid)
        return result
    result["changed"] = result["created"] = True
    if check_mode:
        return result
    if not os.path.isdir(parent_real):
        if not create_parents:
            raise UnsafePathError(path, "parent directory does not exist")
        ensure_dir(host_root, os.path.dirname(path), mode=0o755)
    write_atomic(real, content, mode if mode is not None else 0o644, uid, gid)
    return result
