# -*- coding: utf-8 -*-
"""Hostile container images for the vllm-ascend version reader (``vllm_ascend/model/version``),
built under a sandbox root as ``/proc/<pid>/root`` trees a tenant's worker could run in, and
``measure``: the reader on each image (time, error rows, the version found or the exception).

- ``sparse``: a 65 MiB METADATA that is 0 bytes on disk (a sparse file of NULs);
- ``many``: 100 vllm_ascend dist-infos whose 1 MiB METADATA has no header block, in one
  site-packages reached through 110 aliases (python3.6-3.15 and dist-packages links, lib dirs
  linked to /usr/lib);
- ``nel`` / ``vt``: a Summary holding ``\\x85`` / ``\\x0b`` then ``Version: 0.1.0`` (not line
  breaks in the email header format), the real ``Version: 0.9.1`` after it;
- ``folded``: a continuation line `` Version: 0.2.0`` of the Summary, then ``Version: 0.9.1``;
- ``stale``: an old egg-info (0.7.3) beside the package whose ``_version.py`` says 0.9.1.
"""

import os
import time

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.model import version as vllm_ascend_version

PIDS = {"sparse": 101, "many": 102, "nel": 103, "vt": 104, "folded": 105, "stale": 106}
SITE = "usr/lib/python3/site-packages"
HEADER = "Metadata-Version: 2.1\nName: vllm_ascend\n"


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as handle:
        handle.write(text)


def _image(root, name):
    top = os.path.join(str(root), "proc", str(PIDS[name]), "root")
    _write(os.path.join(top, "..", "cmdline"), "/usr/bin/python3\0-m\0vllm\0")
    return top


def _aliases(top):
    """110 names of one site-packages: every python3.N and dist-packages, every lib dir."""
    lib = os.path.join(top, "usr", "lib")
    for minor in range(6, 16):
        os.symlink("python3", os.path.join(lib, "python3.%d" % minor))
    os.symlink("site-packages", os.path.join(lib, "python3", "dist-packages"))
    os.symlink("lib", os.path.join(top, "usr", "lib64"))
    for link, target in (
        ("usr/local/lib", "../lib"),
        ("opt/conda/lib", "../../usr/lib"),
        ("root/.local/lib", "../../usr/lib"),
    ):
        os.makedirs(os.path.dirname(os.path.join(top, link)), exist_ok=True)
        os.symlink(target, os.path.join(top, link))


def build(root):
    """Every image under ``root``; returns {name: pid}."""
    top = _image(root, "sparse")
    path = os.path.join(top, SITE, "vllm_ascend-0.9.1.dist-info", "METADATA")
    _write(path, "")
    os.truncate(path, 65 * 1024 * 1024)
    top = _image(root, "many")
    for index in range(100):
        _write(os.path.join(top, SITE, "vllm_ascend-0.0.%d.dist-info" % index, "METADATA"), "x" * (1 << 20))
    _aliases(top)
    for name, text in (
        ("nel", HEADER + "Summary: a\x85Version: 0.1.0\nVersion: 0.9.1\n\n"),
        ("vt", HEADER + "Summary: a\x0bVersion: 0.1.0\nVersion: 0.9.1\n\n"),
        ("folded", HEADER + "Summary: a\n Version: 0.2.0\nVersion: 0.9.1\n\n"),
    ):
        _write(os.path.join(_image(root, name), SITE, "vllm_ascend-0.9.1.dist-info", "METADATA"), text)
    top = _image(root, "stale")
    _write(os.path.join(top, SITE, "vllm_ascend-0.7.3-py3.11.egg-info", "PKG-INFO"), HEADER + "Version: 0.7.3\n\n")
    _write(os.path.join(top, SITE, "vllm_ascend", "__init__.py"), "")
    _write(
        os.path.join(top, SITE, "vllm_ascend", "_version.py"),
        "__version__ = version = '0.9.1'\n__commit_id__ = commit_id = 'g0123abcd'\n",
    )
    return dict(PIDS)


def measure(root, name):
    """``{"seconds", "errors", "warnings", "version", "raised"}`` of the reader on one image."""
    io = hostio.LiveHostIO(str(root))
    errors, warnings, out = [], [], {"raised": None, "version": None}
    started = time.monotonic()
    try:
        try:
            found = vllm_ascend_version.gather(io, pids=[PIDS[name]], errors=errors, warnings=warnings)
        except TypeError:  # the reader before it took warnings
            found = vllm_ascend_version.gather(io, pids=[PIDS[name]], errors=errors)
        out["version"] = found and found["version"]
    except Exception as err:  # pylint: disable=broad-except  # what the task would fail with
        out["raised"] = "%s: %s" % (type(err).__name__, str(err)[:100])
    out.update(seconds=round(time.monotonic() - started, 3), errors=len(errors), warnings=warnings, rows=errors)
    return out
