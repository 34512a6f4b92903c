# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host snapshot directories: ``snapshot.yml`` (read and written with ``yaml_subset``, no
PyYAML on managed hosts), ``cmd/`` for multi-line command outputs, ``fs/`` mirroring the host
paths read. The format is a public contract (docs/dev/architecture.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host.yaml_subset import dumps, loads

SCHEMA = 1
SNAPSHOT_FILE = "snapshot.yml"
FS_DIR = "fs"
CMD_DIR = "cmd"



# -- snapshot directories -----------------------------------------------------------------
def inside(base, rel, what):
    """Absolute path of ``rel`` under ``base``; SnapshotError when it would escape ``base``."""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\x00" in rel:
        raise SnapshotError("%s: %r is not a relative path" % (what, rel))
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise SnapshotError("%s: path %r escapes the snapshot" % (what, rel))
    return os.path.join(base, *parts)


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError) as err:
        raise SnapshotError("%s: cannot read: %s" % (path, err.strerror or err))


def _commands(raw, base, source):
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise SnapshotError("%s: 'commands' must be a mapping" % source)
    commands = {}
    for key, entry in raw.items():
        what = "%s: command %r" % (source, key)
        if not isinstance(entry, dict):
            raise SnapshotError("%s must be a mapping like {rc: 0, stdout: ...}" % what)
        unknown = set(entry) - set(["rc", "stdout", "stdout_file", "stderr", "missing",
                                    "timed_out", "seconds"])
        if unknown:
            raise SnapshotError("%s has unknown fields %s" % (what, ", ".join(sorted(unknown))))
        if "stdout" in entry and "stdout_file" in entry:
            raise SnapshotError("%s has both stdout and stdout_file" % what)
        stdout = entry.get("stdout")
        if "stdout_file" in entry:
            stdout = _read(inside(base, entry["stdout_file"], what))
        rc = entry.get("rc", 0)
        if not isinstance(rc, int) or isinstance(rc, bool):
            raise SnapshotError("%s: rc must be an integer" % what)
        for field, value in (("stdout", stdout), ("stderr", entry.get("stderr"))):
            if value is not None and not isinstance(value, str):
                raise SnapshotError("%s: %s must be a string" % (what, field))
        commands[key] = {"rc": rc, "stdout": stdout or "", "stderr": entry.get("stderr") or "",
                         "missing": bool(entry.get("missing")),
                         "timed_out": bool(entry.get("timed_out")),
                         "seconds": float(entry.get("seconds") or 0.0)}
    return commands


def _string_map(raw, name, source, allow_null=False):
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise SnapshotError("%s: '%s' must be a mapping" % (source, name))
    for key, value in raw.items():
        if not (isinstance(value, str) or (allow_null and value is None)):
            raise SnapshotError("%s: %s[%r] must be a string" % (source, name, key))
    return dict(raw)


def load(directory):
    """Read ``<directory>/snapshot.yml``; returns a normalised dict.

    Keys: schema, hostname, captured_at, arch, env, commands (key -> {rc, stdout, stderr,
    missing, timed_out, seconds}), links (host path -> resolved host path), tools (name ->
    path or null). Raises SnapshotError on a missing directory or malformed file.
    """
    if not directory or not os.path.isdir(directory):
        raise SnapshotError("snapshot directory %s does not exist" % directory)
    source = os.path.join(directory, SNAPSHOT_FILE)
    if not os.path.isfile(source):
        raise SnapshotError("%s: missing (not a host snapshot directory)" % source)
    data = loads(_read(source), source)
    if not isinstance(data, dict):
        raise SnapshotError("%s: the document must be a mapping" % source)
    if data.get("schema") != SCHEMA:
        raise SnapshotError("%s: unsupported schema %r (expected %d)" % (source, data.get("schema"), SCHEMA))
    for name in ("hostname", "arch", "captured_at"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise SnapshotError("%s: %s must be a string" % (source, name))
    return {
        "schema": SCHEMA,
        "hostname": data.get("hostname"),
        "captured_at": data.get("captured_at"),
        "arch": data.get("arch"),
        "env": _string_map(data.get("env"), "env", source, allow_null=True),
        "commands": _commands(data.get("commands"), directory, source),
        "links": _string_map(data.get("links"), "links", source),
        "tools": _string_map(data.get("tools"), "tools", source, allow_null=True),
    }


def _slug(key):
    return re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-") or "cmd"


def save(directory, hostname=None, arch=None, captured_at=None, env=None, commands=None,
         links=None, tools=None, files=None, dirs=None, comment=None):
    """Write a snapshot directory.

    ``comment``: text written as ``#`` lines at the top of snapshot.yml (provenance: what
    was captured and what was made up); readers skip it.

    ``commands``: key -> {rc, stdout, stderr, missing, timed_out, seconds}; multi-line
    stdout goes to ``cmd/<slug>.txt`` (``stdout_file``). ``files``: host path -> text,
    written under ``fs/``. ``dirs``: host paths of directories to create (empty ones get a
    ``.snapshot-keep`` marker so version control keeps them).
    """
    if not os.path.isdir(directory):
        os.makedirs(directory)
    doc = {"schema": SCHEMA, "hostname": hostname, "captured_at": captured_at, "arch": arch}
    if env:
        doc["env"] = dict(sorted(env.items()))
    out_cmds = {}
    used = set()
    for key in sorted(commands or {}):
        res = commands[key]
        entry = {}
        if res.get("missing"):
            entry["missing"] = True
        else:
            entry["rc"] = int(res.get("rc") or 0)
            stdout = res.get("stdout") or ""
            if "\n" in stdout.rstrip("\n") or len(stdout) > 200:
                name = _slug(key)
                while name in used:
                    name += "_"
                used.add(name)
                rel = "%s/%s.txt" % (CMD_DIR, name)
                _write(os.path.join(directory, CMD_DIR, name + ".txt"), stdout)
                entry["stdout_file"] = rel
            else:
                entry["stdout"] = stdout
            if res.get("stderr"):
                entry["stderr"] = res["stderr"]
            if res.get("timed_out"):
                entry["timed_out"] = True
                entry["seconds"] = round(float(res.get("seconds") or 0.0), 1)
        out_cmds[key] = entry
    doc["commands"] = out_cmds
    if links:
        doc["links"] = dict(sorted(links.items()))
    if tools:
        doc["tools"] = dict(sorted(tools.items()))
    fs_root = os.path.join(directory, FS_DIR)
    for path in sorted(dirs or ()):
        target = inside(fs_root, path.lstrip("/"), "snapshot fs") if path != "/" else fs_root
        if not os.path.isdir(target):
            os.makedirs(target)
    for path in sorted(files or {}):
        _write(inside(fs_root, path.lstrip("/"), "snapshot fs"), files[path])
    for path in sorted(dirs or ()):
        target = inside(fs_root, path.lstrip("/"), "snapshot fs") if path != "/" else fs_root
        if not os.listdir(target):
            _write(os.path.join(target, KEEP), "")
    header = "".join(("# " + line).rstrip() + "\n" for line in (comment or "").splitlines())
    _write(os.path.join(directory, SNAPSHOT_FILE), header + dumps(doc))


KEEP = ".snapshot-keep"


def _write(path, text):
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    with open(path, "wb") as handle:
        handle.write(text.encode("utf-8"))
