# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host snapshot directories: ``snapshot.yml`` (read and written with ``yaml_subset``, no
PyYAML on managed hosts), ``cmd/`` for multi-line command outputs, ``fs/`` mirroring the host
paths read. The format is a public contract (docs/modules/npu_topology_facts.md).

On disk a host path component is escaped so that no snapshot path holds a ``:`` (PCI
addresses such as ``0000:c1:00.0``; some tools and file systems refuse it): ``%`` is written
``%25`` and ``:`` ``%3A`` (``fs_name``). Readers try the escaped path first, then the path as
it is, so a snapshot written before the escaping still reads.

Every file of a snapshot is read through directory fds without following a symlink
(``host/paths``): a symlink, a FIFO or a device anywhere below the snapshot directory is
refused, and no file is read past ``paths.MAX_FILE_BYTES``. ``save`` writes each file
atomically (temporary file + rename, never through a symlink) into a directory it created
or verified (``paths.open_private_dir``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import os
import re
import stat

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import paths
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


# -- escaping of host path components --------------------------------------------------
_UNESCAPE = re.compile(r"%(25|3[Aa])")


def fs_name(name):
    """On-disk name of one host path component: ``%`` -> ``%25``, ``:`` -> ``%3A``."""
    return name.replace("%", "%25").replace(":", "%3A")


def host_name(name):
    """The host path component of an on-disk name (``fs_name`` undone)."""
    return _UNESCAPE.sub(lambda m: "%" if m.group(1) == "25" else ":", name)


def _error(dummy_label, msg):
    return SnapshotError(msg)


def _open_under(directory, parts, what, create_mode=None):
    """fd of ``directory/<parts>`` (the directory itself followed, nothing below it)."""
    try:
        root = paths.open_root(directory)
    except OSError as err:
        raise SnapshotError("%s: cannot open: %s" % (directory, err.strerror or err))
    try:
        return paths.open_dirs(
            root, parts, what, create_mode=create_mode, error=_error, prefix=directory.rstrip("/") + "/"
        )
    finally:
        os.close(root)


def read_file(directory, rel, what):
    """Text of the regular file ``directory/<rel>`` (``rel``: a relative path checked by
    ``inside``); SnapshotError when it is missing, a symlink, not a regular file or too big."""
    parts = rel.split("/")
    path = os.path.join(directory, rel)
    try:
        dir_fd = _open_under(directory, parts[:-1], what)
    except OSError as err:
        raise SnapshotError("%s: cannot read: %s" % (path, err.strerror or err))
    try:
        data, problem = paths.read_at(dir_fd, parts[-1])
    except OSError as err:
        raise SnapshotError("%s: cannot read: %s" % (path, err.strerror or err))
    finally:
        os.close(dir_fd)
    if problem is not None:
        raise SnapshotError("%s: %s (refused)" % (path, problem))
    if data is None:
        raise SnapshotError("%s: cannot read: No such file or directory" % path)
    return data.decode("utf-8", "replace")


def _bool(entry, field, what):
    value = entry.get(field)
    if value is not None and not isinstance(value, bool):
        raise SnapshotError("%s: %s must be true or false, got %r" % (what, field, value))
    return bool(value)


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
        unknown = set(entry) - set(["rc", "stdout", "stdout_file", "stderr", "missing", "timed_out", "seconds"])
        if unknown:
            raise SnapshotError("%s has unknown fields %s" % (what, ", ".join(sorted(unknown))))
        if "stdout" in entry and "stdout_file" in entry:
            raise SnapshotError("%s has both stdout and stdout_file" % what)
        stdout = entry.get("stdout")
        if "stdout_file" in entry:
            inside(base, entry["stdout_file"], what)
            stdout = read_file(base, entry["stdout_file"], what)
        rc = entry.get("rc", 0)
        if not isinstance(rc, int) or isinstance(rc, bool) or not -(1 << 31) <= rc < (1 << 31):
            raise SnapshotError("%s: rc must be an integer, got %r" % (what, rc))
        for field, value in (("stdout", stdout), ("stderr", entry.get("stderr"))):
            if value is not None and not isinstance(value, str):
                raise SnapshotError("%s: %s must be a string" % (what, field))
        seconds = entry.get("seconds")
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= 1e9
        ):
            raise SnapshotError("%s: seconds must be a number of seconds, got %r" % (what, seconds))
        commands[key] = {
            "rc": rc,
            "stdout": stdout or "",
            "stderr": entry.get("stderr") or "",
            "missing": _bool(entry, "missing", what),
            "timed_out": _bool(entry, "timed_out", what),
            "seconds": float(seconds or 0.0),
        }
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
    if not directory or not isinstance(directory, str) or not os.path.isdir(directory):
        raise SnapshotError("snapshot directory %s does not exist" % directory)
    source = os.path.join(directory, SNAPSHOT_FILE)
    if not os.path.lexists(source):
        raise SnapshotError("%s: missing (not a host snapshot directory)" % source)
    data = loads(read_file(directory, SNAPSHOT_FILE, source), source)
    if not isinstance(data, dict):
        raise SnapshotError("%s: the document must be a mapping" % source)
    schema = data.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool) or schema != SCHEMA:
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
    """A file name for a command's output: its words, cut to a length every file system takes
    (a long argv keeps its start and gets a hash of the whole)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-") or "cmd"
    if len(slug) > 96:
        slug = "%s-%s" % (slug[:80].rstrip("-"), hashlib.sha1(key.encode("utf-8")).hexdigest()[:12])
    return slug


def check_destination(directory, overwrite=False, replayed=None):
    """Refuse to save a snapshot into ``directory`` when it is the snapshot being replayed
    (``replayed``; or a directory inside it, or one holding it: even with ``overwrite``), or
    when it exists and holds anything, unless ``overwrite``. Saving used to overwrite files in
    place, the replayed snapshot's own (its provenance comments) included."""
    real = os.path.realpath(directory)
    if replayed:
        source = os.path.realpath(replayed)
        if real == source or real.startswith(source + "/") or source.startswith(real + "/"):
            raise SnapshotError(
                "snapshot directory %s is the snapshot being replayed (%s): "
                "save to another directory" % (directory, replayed)
            )
    if not overwrite and os.path.isdir(real) and os.listdir(real):
        raise SnapshotError(
            "snapshot directory %s exists and is not empty: save to a new "
            "directory, or allow replacing the files in it (overwrite)" % directory
        )


def save(
    directory,
    hostname=None,
    arch=None,
    captured_at=None,
    env=None,
    commands=None,
    links=None,
    tools=None,
    files=None,
    dirs=None,
    comment=None,
    overwrite=True,
    replayed=None,
):
    """Write a snapshot directory.

    ``comment``: text written as ``#`` lines at the top of snapshot.yml (provenance: what
    was captured and what was made up); readers skip it.

    ``commands``: key -> {rc, stdout, stderr, missing, timed_out, seconds}; multi-line
    stdout goes to ``cmd/<slug>.txt`` (``stdout_file``). ``files``: host path -> text,
    written under ``fs/`` with escaped names (``fs_name``). ``dirs``: host paths of
    directories to create (empty ones get a ``.snapshot-keep`` marker so version control
    keeps them).

    ``directory`` is created (0700, with missing parents) or must already belong to root or
    to this user and be writable by nobody else (``paths.open_private_dir``); below it every
    directory is opened without following symlinks (created 0700) and every file is written
    atomically (0600: a snapshot holds host data such as process tables and environment).
    ``overwrite`` and ``replayed``: ``check_destination``.
    """
    check_destination(directory, overwrite, replayed)
    top = paths.open_private_dir(directory, DIR_MODE, error=_error)
    try:
        _save(_Writer(top, directory), hostname, arch, captured_at, env, commands, links, tools, files, dirs, comment)
    finally:
        os.close(top)


def _save(writer, hostname, arch, captured_at, env, commands, links, tools, files, dirs, comment):
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
                writer.write([CMD_DIR, name + ".txt"], stdout)
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
    for path in sorted(dirs or ()):
        writer.close_dir(writer.dir(fs_parts(path)))
    for path in sorted(files or {}):
        writer.write(fs_parts(path), files[path])
    for path in sorted(dirs or ()):
        dir_fd = writer.dir(fs_parts(path))
        try:
            if not os.listdir(dir_fd):
                paths.write_atomic_at(dir_fd, KEEP, b"", FILE_MODE, fsync=False)
        finally:
            writer.close_dir(dir_fd)
    header = "".join(("# " + line).rstrip() + "\n" for line in (comment or "").splitlines())
    writer.write([SNAPSHOT_FILE], header + dumps(doc))


KEEP = ".snapshot-keep"
DIR_MODE, FILE_MODE = 0o700, 0o600  # saved snapshots are private to their owner


def hidden(name):
    """True for names no reader lists: the keep marker and a write's leftover temporary."""
    return name == KEEP or (name.startswith(paths.TEMP_PREFIX) and name.endswith(".tmp"))


def fs_parts(path):
    """On-disk components (``fs/`` first) of host path ``path``, checked and escaped."""
    if path == "/":
        return [FS_DIR]
    rel = inside("/", path.lstrip("/"), "snapshot fs")[1:]
    return [FS_DIR] + [fs_name(part) for part in rel.split("/")]


class _Writer(object):
    """Writes below an open snapshot directory fd: directories created 0700 without following
    a symlink, files written atomically 0600."""

    def __init__(self, top, directory):
        self.top = top
        self.prefix = directory.rstrip("/") + "/"

    def dir(self, parts):
        return paths.open_dirs(self.top, parts, "snapshot", create_mode=DIR_MODE, error=_error, prefix=self.prefix)

    @staticmethod
    def close_dir(dir_fd):
        os.close(dir_fd)

    def write(self, parts, text):
        dir_fd = self.dir(parts[:-1])
        try:
            # atomic against a killed process; no fsync: a snapshot is not a host's config
            paths.write_atomic_at(dir_fd, parts[-1], text.encode("utf-8"), FILE_MODE, fsync=False)
        finally:
            os.close(dir_fd)


# -- reading and copying the fs/ mirror ---------------------------------------------------
def disk_path(directory, path):
    """Where host path ``path`` of the snapshot ``directory`` is on disk: the escaped path,
    or the path as it is when only that exists (a snapshot written before the escaping)."""
    escaped = os.path.join(directory, *fs_parts(path))
    if os.path.lexists(escaped) or path == "/":
        return escaped
    raw = os.path.join(directory, FS_DIR, *path.lstrip("/").split("/"))
    return raw if os.path.lexists(raw) else escaped


def fs_files(directory):
    """``{host path: text}`` of every file under ``<directory>/fs`` (names unescaped; the
    ``.snapshot-keep`` markers left out). Symlinks and special files are refused."""
    out = {}

    def walk(dir_fd, host_parts, disk_parts):
        for name in sorted(os.listdir(dir_fd)):
            st = paths.lstat_at(dir_fd, name)
            shown = "/".join(disk_parts + [name])
            if st is None:
                continue
            if stat.S_ISDIR(st.st_mode):
                sub = paths.open_dirs(
                    dir_fd,
                    [name],
                    "snapshot",
                    error=_error,
                    prefix=directory.rstrip("/") + "/" + "/".join(disk_parts) + "/",
                )
                try:
                    walk(sub, host_parts + [host_name(name)], disk_parts + [name])
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode):
                if hidden(name):
                    continue
                data, problem = paths.read_at(dir_fd, name)
                if problem is not None or data is None:
                    raise SnapshotError("%s/%s: %s (refused)" % (directory, shown, problem))
                out["/" + "/".join(host_parts + [host_name(name)])] = data.decode("utf-8", "replace")
            else:
                raise SnapshotError("%s/%s: a symlink or special file (refused)" % (directory, shown))

    try:
        fs_fd = _open_under(directory, [FS_DIR], "snapshot")
    except OSError as err:
        if err.errno == errno.ENOENT:
            return out
        raise
    try:
        walk(fs_fd, [], [FS_DIR])
    finally:
        os.close(fs_fd)
    return out


def copy_host_tree(directory, dest):
    """Copy the ``fs/`` mirror of a snapshot to ``dest`` as a host tree (a sandbox
    ``host_root``): names unescaped, directories 0755, files 0644, empty directories kept,
    markers left out. ``dest`` may exist."""
    try:
        fs_fd = _open_under(directory, [FS_DIR], "snapshot")
    except OSError as err:
        if err.errno == errno.ENOENT:
            if not os.path.isdir(dest):
                os.makedirs(dest)
            return
        raise

    def walk(src_fd, target):
        if not os.path.isdir(target):
            os.makedirs(target)
        for name in sorted(os.listdir(src_fd)):
            st = paths.lstat_at(src_fd, name)
            if st is None or hidden(name):
                continue
            out = os.path.join(target, host_name(name))
            if stat.S_ISDIR(st.st_mode):
                sub = paths.open_dirs(src_fd, [name], "snapshot", error=_error, prefix="")
                try:
                    walk(sub, out)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode):
                data, problem = paths.read_at(src_fd, name)
                if problem is not None or data is None:
                    raise SnapshotError("%s: %s: %s (refused)" % (directory, name, problem))
                with open(out, "wb") as handle:
                    handle.write(data)
            else:
                raise SnapshotError("%s: %s: a symlink or special file (refused)" % (directory, name))

    try:
        walk(fs_fd, dest)
    finally:
        os.close(fs_fd)
