# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which vllm-ascend release behaves how: the one place where a version selects the rules.

Each group below was read from the released ``vllm_ascend/cpu_binding.py`` (and the worker's
call of ``bind_cpus``, and ``vllm_ascend/device/hardware_profile.py``) of its releases; the
file and lines that justify each rule are in docs/policies.md. A version is parsed PEP 440-ish
(``0.23.0.post1``, ``0.26.0rc1``, ``0.26.1.dev3+gabc``) without any library.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError

# every release on PyPI from the first with CPU binding on by default
KNOWN_RELEASES = (
    "0.18.0rc1",
    "0.18.0",
    "0.19.1rc1",
    "0.20.2rc1",
    "0.21.0rc1",
    "0.22.1rc1",
    "0.23.0rc1",
    "0.23.0",
    "0.23.0.post1",
    "0.24.0rc1",
    "0.25.1rc1",
    "0.26.0rc1",
    "0.27.1rc1",
    "0.28.0rc1",
    "0.29.0rc1",
    "0.30.0rc1",
    "0.30.0rc2",
)
NEWEST = KNOWN_RELEASES[-1]

_VERSION = re.compile(
    r"^v?(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?"
    r"(?:\+([a-z0-9]+(?:[.-][a-z0-9]+)*))?$",
    re.I,
)
_PRE_ORDER = {"a": 0, "b": 1, "rc": 2}

# Rules: hidden (hidden NPUs are candidates, vllm-project/vllm-ascend#8792), parsers (positional | header),
# migration (thread | process | process_or_off), a5 (generic | global | cluster),
# rank_npu (running: running_npu_list[local_rank] | visible: ASCEND_RT_VISIBLE_DEVICES
# [local_rank]), profile (hardware_profile.py settings: unknown device types fail at import),
# texts (old | new log and error wording).
GROUPS = (
    (
        "0.18.x",
        "0.18.0rc1",
        dict(
            hidden=False,
            parsers="positional",
            migration="thread",
            a5="generic",
            rank_npu="running",
            profile=False,
            texts="old",
        ),
    ),
    (
        "0.19.1rc1-0.21.0rc1",
        "0.19.1rc1",
        dict(
            hidden=True,
            parsers="positional",
            migration="process",
            a5="generic",
            rank_npu="running",
            profile=False,
            texts="old",
        ),
    ),
    (
        "0.22.1rc1",
        "0.22.1rc1",
        dict(
            hidden=True,
            parsers="header",
            migration="process",
            a5="global",
            rank_npu="running",
            profile=False,
            texts="new",
        ),
    ),
    (
        "0.23.0rc1-0.25.1rc1",
        "0.23.0rc1",
        dict(
            hidden=True,
            parsers="header",
            migration="process",
            a5="cluster",
            rank_npu="running",
            profile=False,
            texts="new",
        ),
    ),
    (
        "0.26.0rc1",
        "0.26.0rc1",
        dict(
            hidden=True,
            parsers="header",
            migration="process",
            a5="cluster",
            rank_npu="visible",
            profile=False,
            texts="new",
        ),
    ),
    (
        "0.27.1rc1+",
        "0.27.1rc1",
        dict(
            hidden=True,
            parsers="header",
            migration="process",
            a5="cluster",
            rank_npu="visible",
            profile=True,
            texts="new",
        ),
    ),
    (
        "0.30.0rc1+",
        "0.30.0rc1",
        dict(
            hidden=True,
            parsers="header",
            migration="process_or_off",
            a5="cluster",
            rank_npu="visible",
            profile=True,
            texts="new",
        ),
    ),
)
# 0.21.0rc1 rewrote the log and warning texts; the slice error kept its old words until 0.22
NEW_WARNING_TEXTS_FROM = "0.21.0rc1"
OLD_TEXTS = {
    "fallback": "NPU topo affinity not found, fallback to global-slice CPU binding.",
    "slice": (
        "Insufficient CPUs for binding with IRQ/ACL/REL reservations: "
        "total_allowed=%d, total_npus=%d, min_per_npu=%d (<%d). "
        "Need at least %d CPUs in cpuset."
    ),
    "unknown_arch": "Unknown CPU architecture '%s', CPU binding will be disabled.",
}


def parse_version(text):
    """``(release tuple, pre, post, dev, local)`` sort key of a version string; PlanError when
    it is not one. ``pre`` sorts a < b < rc < final; a dev build sorts before its release."""
    if not isinstance(text, str) or not _VERSION.match(text.strip()):
        raise PlanError("vllm_ascend_version %r is not a version such as 0.23.0.post1 or 0.26.0rc1" % (text,))
    match = _VERSION.match(text.strip())
    release = tuple(int(x) for x in match.group(1).split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    if match.group(2):
        pre = (_PRE_ORDER[match.group(2).lower()], int(match.group(3)))
    elif match.group(5) is not None and match.group(4) is None:
        pre = (-1, 0)  # 1.0.dev1 comes before 1.0a1
    else:
        pre = (3, 0)
    post = int(match.group(4)) if match.group(4) is not None else -1
    dev = int(match.group(5)) if match.group(5) is not None else float("inf")
    return release, pre, post, dev, match.group(6) or ""


def normalise(text):
    """The canonical text of a version (``V0.26.0RC1`` -> ``0.26.0rc1``)."""
    return text.strip().lower().lstrip("v")


_KEYS = [(parse_version(v), v) for v in KNOWN_RELEASES]
_GROUP_KEYS = [(parse_version(first), name, rules) for name, first, rules in GROUPS]
_KNOWN = dict((k[:4], v) for k, v in _KEYS)


def _group_of(key):
    found = None
    for first, name, rules in _GROUP_KEYS:
        if key >= first:
            found = (name, rules)
    return found


def select(version, source=None):
    """The release to predict: a dict ``version, source, group, rules, texts, warnings``.

    ``version`` None: the newest known release, with a warning. A known release: its group.
    A build that is no release (``.devN`` or ``+local``, e.g. from main) or a version newer
    than the newest known: the group of the newest release at or before it, with a warning.
    Anything else (older than 0.18.0rc1, or a release that does not exist) is a PlanError.
    """
    warnings = []
    if version is None:
        version, source = NEWEST, "default"
        warnings.append(
            "no vllm_ascend_version given and none in the facts (npu_topology."
            "vllm_ascend): predicted with the newest release known, %s" % NEWEST
        )
    key = parse_version(version)
    text = normalise(version)
    known = _KNOWN
    if key[:4] in known and not key[4]:
        text = known[key[:4]]
    elif key > _KEYS[-1][0]:
        warnings.append(
            "vllm-ascend %s is newer than the newest release known (%s): predicted "
            "with that release's rules" % (text, NEWEST)
        )
    elif key < _KEYS[0][0]:
        raise PlanError(
            "vllm-ascend %s is older than %s, the first release with CPU binding on "
            "by default; this collection does not model it" % (text, KNOWN_RELEASES[0])
        )
    elif key[3] != float("inf") or key[4]:
        found = _group_of(key)
        warnings.append("vllm-ascend %s is a build, not a release: predicted with the rules of %s" % (text, found[0]))
    else:
        raise PlanError(
            "vllm-ascend %s is not a release this collection knows; known releases: "
            "%s" % (text, ", ".join(KNOWN_RELEASES))
        )
    name, rules = _group_of(key)
    texts = {}
    if rules["texts"] == "old":
        texts["slice"] = OLD_TEXTS["slice"]
        if key < parse_version(NEW_WARNING_TEXTS_FROM):
            texts["fallback"] = OLD_TEXTS["fallback"]
            texts["unknown_arch"] = OLD_TEXTS["unknown_arch"]
    return {
        "version": text,
        "source": source or "option",
        "group": name,
        "rules": rules,
        "texts": texts,
        "warnings": warnings,
    }
