# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``npu_topology.vllm_ascend``: which vllm-ascend release the host runs, read, never imported.

The same reader, with ``package=VLLM``, finds vLLM itself (``npu_topology.vllm``,
``model/vllm_version.py``): one set of rules and bounds for both packages.

Looked for, first found wins: in the root of each running NPU worker (``/proc/<pid>/root``,
containers included: its interpreter's environment from ``/proc/<pid>/cmdline``, then the
usual site-packages), then in the Python environments the user names, then in the usual
site-packages of the host. Every read goes through the HostIO (so it is recorded in, and
replayed from, snapshots).

In one site-packages directory the version is the one the interpreter would import:
``vllm_ascend/_version.py`` of the package itself (it also names the commit of a build from a
checkout), else a ``vllm_ascend-*.dist-info/METADATA``, else an ``egg-info`` (``PKG-INFO``, or
an egg-info file). Another record there that names another version (an egg-info left by an
older install) is a warning naming both.

A worker's root is a tenant's container image, so every read is bounded and skip-and-say:
only a file's first ``HEAD_BYTES`` are read (what is read bounds it, never ``st_size``: a
sparse 65 MiB METADATA costs 64 KiB); at most ``MAX_RECORDS`` vllm-ascend records of a
directory and ``MAX_SITES`` distinct site-packages of a root are read, a directory whose
listing is one already read (a python3.N or dist-packages alias) is not read again; what a
root could not give is one ``errors`` row for that root, never an exception.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import python_dist

LIB_DIRS = ("/usr/local/lib", "/usr/lib", "/usr/lib64", "/opt/conda/lib", "/root/.local/lib")
SITE_NAMES = ("site-packages", "dist-packages")
PYTHONS = ("python3",) + tuple("python3.%d" % minor for minor in range(6, 16))
MAX_PIDS = 8  # workers whose root is searched
MAX_ENTRIES = 20000  # names of one directory looked at
MAX_RECORDS = 8  # vllm-ascend dist-info / egg-info records of one directory read
MAX_SITES = 12  # distinct site-packages directories of one root read
HEAD_BYTES = 64 << 10  # of a METADATA / PKG-INFO / _version.py: the header block is ~2 KiB
_RECORD_KIND = {".dist-info": 0, ".egg-info": 1}  # the record an install tool writes today first


class Package(object):
    """A distribution the reader looks for: its label in messages, its import package (whose
    ``_version.py`` wins) and the pattern of its dist-info / egg-info names (lower case)."""

    __slots__ = ("label", "module", "record")

    def __init__(self, label, module, record):
        self.label, self.module, self.record = label, module, re.compile(record)


VLLM_ASCEND = Package("vllm-ascend", "vllm_ascend", r"^vllm[-_]ascend-")
# vllm-0.34.0.dist-info, vllm-0.32.0+cpu.dist-info (the CPU build); never vllm_ascend-*
VLLM = Package("vllm", "vllm", r"^vllm-[0-9]")


def _join(*parts):
    return "/" + "/".join(p.strip("/") for p in parts if p.strip("/"))


def _site_dirs(io, lib):
    """``<lib>/python3[.N]/{site,dist}-packages`` that exist (probed by name: listing ``lib``
    itself would record every entry of /usr/lib in a snapshot)."""
    out = []
    for name in PYTHONS:
        for site in SITE_NAMES:
            path = _join(lib, name, site)
            if io.listdir(path) is not None:
                out.append(path)
    return out


def _env_site_dirs(io, path):
    """A site-packages directory as given, else the site-packages of an environment root."""
    if path.rstrip("/").rsplit("/", 1)[-1] in SITE_NAMES:
        return [path.rstrip("/")]
    return _site_dirs(io, _join(path, "lib"))


def _records(site, names, package=VLLM_ASCEND):
    """The package's metadata records among ``names``: ``[(kind, name)]``, dist-info first."""
    out = []
    for name in names:
        lower = name.lower()
        if package.record.match(lower):
            for suffix, kind in _RECORD_KIND.items():
                if lower.endswith(suffix):
                    out.append((kind, name))
    return sorted(out)


def _record_version(io, site, name, problems):
    path = _join(site, name, "METADATA") if name.lower().endswith(".dist-info") else _join(site, name)
    if not path.endswith("/METADATA") and io.listdir(path) is not None:
        path = _join(path, "PKG-INFO")
    text = io.read_text(path, HEAD_BYTES)
    if text is None:
        return None
    try:
        return {"version": python_dist.metadata_version(text, path), "source": path}
    except ParseError as err:
        problems.append((path, err.msg))
        return None


def in_site_dir(io, site, problems, warnings=None, names=None, package=VLLM_ASCEND):
    """``{version, source[, commit]}`` of the package in one site-packages dir, or None; what
    cannot be read is added to ``problems`` (``(source, message)``), another record naming another version to
    ``warnings``."""
    names = (io.listdir(site) if names is None else names) or []
    names = names[:MAX_ENTRIES]
    found = []
    if package.module in names:
        path = _join(site, package.module, "_version.py")
        text = io.read_text(path, HEAD_BYTES)
        if text is not None:
            try:
                version, commit = python_dist.version_module(text, path)
            except ParseError as err:
                problems.append((path, err.msg))
            else:
                found.append(dict({"version": version, "source": path}, **({"commit": commit} if commit else {})))
    records = _records(site, names, package)
    if len(records) > MAX_RECORDS:
        problems.append((site, "%d %s records, only the first %d read" % (len(records), package.label, MAX_RECORDS)))
    for _kind, name in records[:MAX_RECORDS]:
        record = _record_version(io, site, name, problems)
        if record is not None:
            found.append(record)
    if not found:
        return None
    best = found[0]
    for other in found[1:]:
        # a local label is the build's, not another install (vllm 0.32.0 and 0.32.0+cpu)
        if other["version"].split("+")[0] != best["version"].split("+")[0] and warnings is not None:
            warnings.append(
                "%s: %s says %s, but %s says %s; %s is the one the "
                "interpreter imports (the other record is stale: reinstall or "
                "remove it)"
                % (package.label, best["source"], best["version"], other["source"], other["version"], best["version"])
            )
    if "commit" not in best:
        commits = [f["commit"] for f in found if f.get("commit") and f["version"] == best["version"]]
        if commits:
            best = dict(best, commit=commits[0])
    return best


def _process_sites(io, pid):
    root = "/proc/%d/root" % pid
    sites = []
    argv0 = (io.read_text("/proc/%d/cmdline" % pid, 4096) or "").split("\0", 1)[0]
    if argv0.startswith("/") and "/bin/" in argv0 and ".." not in argv0.split("/"):
        env = argv0.rsplit("/bin/", 1)[0]
        sites.extend(_site_dirs(io, _join(root, env, "lib")))
    for lib in LIB_DIRS:
        sites.extend(_site_dirs(io, _join(root, lib)))
    return sites


def _search(io, label, sites, seen, warnings, package=VLLM_ASCEND):
    """``(found or None, problems)`` of one group of site dirs (one root)."""
    problems, listings, read = [], set(), 0
    for site in sites:
        if site in seen:
            continue
        seen.add(site)
        names = io.listdir(site)
        if names is None:
            continue
        listing = tuple(names[:MAX_ENTRIES])
        if listing in listings:
            continue  # an alias of a directory read already (python3.N, dist-packages links)
        if read >= MAX_SITES:
            problems.append((label, "more than %d site-packages directories, the rest not read" % MAX_SITES))
            break
        listings.add(listing)
        read += 1
        found = in_site_dir(io, site, problems, warnings, list(listing), package)
        if found is not None:
            return found, problems
    return None, problems


def gather(io, paths=None, pids=(), errors=None, warnings=None, package=VLLM_ASCEND):
    """``{version, source[, commit]}`` or None when the package (vllm-ascend unless told) is
    found nowhere.

    ``paths``: Python environments (roots or site-packages dirs) to search before the usual
    ones; ``pids``: the NPU workers whose roots are searched first. Whatever one root (or
    environment) could not give is one row in ``errors``; a stale record, one in ``warnings``.
    """
    errors = errors if errors is not None else []
    seen = set()
    for label, sites in _groups(io, paths, pids):
        try:
            found, problems = _search(io, label, sites(), seen, warnings, package)
        except (NpuopsError, OSError, ValueError) as err:
            found, problems = None, [(label, str(err))]
        if len(problems) == 1:
            errors.append({"source": problems[0][0], "msg": problems[0][1]})
        elif problems:
            errors.append(
                {
                    "source": label,
                    "msg": "%s version: %d problems, skipped; "
                    "the first: %s: %s" % (package.label, len(problems), problems[0][0], problems[0][1]),
                }
            )
        if found is not None:
            return found
    return None


def _groups(io, paths, pids):
    """``[(label, sites())]``: each worker's root, each named environment, the host."""
    groups = [("/proc/%d/root" % pid, lambda pid=pid: _process_sites(io, pid)) for pid in sorted(set(pids))[:MAX_PIDS]]
    groups.extend((p, lambda p=p: _env_site_dirs(io, p)) for p in paths or ())
    groups.append(("/", lambda: [site for lib in LIB_DIRS for site in _site_dirs(io, lib)]))
    return groups
