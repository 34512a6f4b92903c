#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rename the ``fs/`` trees of host snapshots in place to the escaped form (no ``:`` in a path).

    .venv/bin/python scripts/escape_snapshot_paths.py [--check] [DIR ...]

``DIR`` is a snapshot directory (it holds ``snapshot.yml``) or a directory of them; default
``tests/snapshots``. Every name under ``fs/`` that holds a ``:`` is renamed to
``snapshot.fs_name(name)`` (``%`` -> ``%25``, ``:`` -> ``%3A``), deepest first; names without a
``:`` are left as they are, so a second run changes nothing. ``--check`` renames nothing and
exits 1 when a name with a ``:`` is left (what ansible-test's no-illegal-filenames trips on).
The readers take both forms, so a snapshot reads the same before and after.
"""

import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
LINK = os.path.join(REPO, ".cache", "collections", "ansible_collections", "npuops", "fleet")
if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), LINK)

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot  # noqa: E402


def snapshot_dirs(path):
    if os.path.isfile(os.path.join(path, snapshot.SNAPSHOT_FILE)):
        return [path]
    return [
        os.path.join(path, name)
        for name in sorted(os.listdir(path))
        if os.path.isfile(os.path.join(path, name, snapshot.SNAPSHOT_FILE))
    ]


def escape_tree(directory, check=False):
    """``[(old, new)]`` relative paths renamed (or to rename, with ``check``)."""
    fs_root = os.path.join(directory, snapshot.FS_DIR)
    done = []
    for dirpath, dirnames, filenames in os.walk(fs_root, topdown=False):
        for name in sorted(dirnames + filenames):
            if ":" not in name:
                continue
            old = os.path.join(dirpath, name)
            new = os.path.join(dirpath, snapshot.fs_name(name))
            if os.path.islink(old):
                raise SystemExit("%s: a symlink in a snapshot; refusing to touch it" % old)
            if os.path.lexists(new):
                raise SystemExit(
                    "%s: both %s and %s exist; merge them by hand" % (dirpath, name, snapshot.fs_name(name))
                )
            if not check:
                os.rename(old, new)
            done.append((os.path.relpath(old, directory), os.path.relpath(new, directory)))
    return done


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="rename nothing; exit 1 when a name with ':' is left")
    parser.add_argument("dirs", nargs="*", default=[os.path.join(REPO, "tests", "snapshots")])
    args = parser.parse_args(argv)
    left = 0
    for top in args.dirs:
        for directory in snapshot_dirs(top):
            renamed = escape_tree(directory, args.check)
            left += len(renamed)
            print("%s: %d name(s) %s" % (directory, len(renamed), "to escape" if args.check else "escaped"))
    return 1 if args.check and left else 0


if __name__ == "__main__":
    sys.exit(main())
