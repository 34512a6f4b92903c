# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``npu_topology.vllm_ascend``: which vllm-ascend release the host runs, read, never imported.

Looked for, first found wins: in the root of each running NPU worker (``/proc/<pid>/root``,
containers included: its interpreter's environment from ``/proc/<pid>/cmdline``, then the
usual site-packages), then in the Python environments the user names, then in the usual
site-packages of the host. In a site-packages directory: ``vllm_ascend-*.dist-info/METADATA``,
``vllm_ascend-*.egg-info/PKG-INFO`` (or an egg-info file), ``vllm_ascend/_version.py`` (it also
names the commit of a build from a checkout). Every read goes through the HostIO (so it is
recorded in, and replayed from, snapshots) and is size-bounded there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import python_dist

LIB_DIRS = ("/usr/local/lib", "/usr/lib", "/usr/lib64", "/opt/conda/lib", "/root/.local/lib")
SITE_NAMES = ("site-packages", "dist-packages")
PYTHONS = ("python3",) + tuple("python3.%d" % minor for minor in range(6, 16))
MAX_PIDS = 8          # workers whose root is searched
MAX_ENTRIES = 20000   # names of one directory looked at


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


def in_site_dir(io, site, errors):
    """``{version, source[, commit]}`` of vllm-ascend in one site-packages dir, or None."""
    names = (io.listdir(site) or [])[:MAX_ENTRIES]
    found = None
    for name in names:
        lower = name.lower()
        if not (lower.startswith("vllm_ascend-") or lower.startswith("vllm-ascend-")):
            continue
        if lower.endswith(".dist-info"):
            path = _join(site, name, "METADATA")
        elif lower.endswith(".egg-info"):
            path = _join(site, name)
            if io.listdir(path) is not None:
                path = _join(path, "PKG-INFO")
        else:
            continue
        text = io.read_text(path)
        if text is None:
            continue
        try:
            found = {"version": python_dist.metadata_version(text, path), "source": path}
        except ParseError as err:
            errors.append({"source": path, "msg": err.msg})
            continue
        break
    if "vllm_ascend" in names:
        path = _join(site, "vllm_ascend", "_version.py")
        text = io.read_text(path)
        if text is not None:
            try:
                version, commit = python_dist.version_module(text, path)
            except ParseError as err:
                errors.append({"source": path, "msg": err.msg})
            else:
                if found is None:
                    found = {"version": version, "source": path}
                if commit and found["version"] == version:
                    found["commit"] = commit
    return found


def _process_sites(io, pid):
    root = "/proc/%d/root" % pid
    sites = []
    argv0 = (io.read_text("/proc/%d/cmdline" % pid) or "").split("\0", 1)[0]
    if argv0.startswith("/") and "/bin/" in argv0 and ".." not in argv0.split("/"):
        env = argv0.rsplit("/bin/", 1)[0]
        sites.extend(_site_dirs(io, _join(root, env, "lib")))
    for lib in LIB_DIRS:
        sites.extend(_site_dirs(io, _join(root, lib)))
    return sites


def gather(io, paths=None, pids=(), errors=None):
    """``{version, source[, commit]}`` or None when vllm-ascend is found nowhere.

    ``paths``: Python environments (roots or site-packages dirs) to search before the usual
    ones; ``pids``: the NPU workers whose roots are searched first.
    """
    errors = errors if errors is not None else []
    seen = set()
    groups = [_process_sites(io, pid) for pid in sorted(set(pids))[:MAX_PIDS]]
    groups.extend(_env_site_dirs(io, p) for p in paths or ())
    groups.append([site for lib in LIB_DIRS for site in _site_dirs(io, lib)])
    for sites in groups:
        for site in sites:
            if site in seen:
                continue
            seen.add(site)
            found = in_site_dir(io, site, errors)
            if found is not None:
                return found
    return None
