# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each host's audit input is untrusted: a compromised host controls its own facts, plans and
binding read-back. ``screen_hosts`` checks every host's entry against the fields the report
reads, before any of it is analysed, and replaces an entry that does not fit with
``{UNUSABLE: "<why>"}``; ``build_report`` gives such a host its own "facts unusable: <why>"
row and reports every other host as usual.

The shapes are ``model/schema``'s (the topology facts and the plan, as the modules check them)
plus what only the report reads (``tools``, ``softshare``, ``errors``, the binding facts).
Controller side, pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import marshal
import math

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema
from ansible_collections.npuops.fleet.plugins.module_utils.model.spec import (
    ANY,
    BOOL,
    INT,
    LIST,
    MAP,
    OPT,
    RECORD,
    SCALAR,
    STR,
    check,
)
from ansible_collections.npuops.fleet.plugins.plugin_utils.ansible_data import to_plain
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import POLICIES

UNUSABLE = "facts_unusable"
MAX_WHY = 300  # characters of the reason kept (the reason quotes the host's own values)


def _opt(spec):
    return (OPT, spec)


_TEXT = _opt((SCALAR,))
_ERRORS = _opt((LIST, _opt((RECORD, {"source": _TEXT, "msg": _TEXT}))))

# what the report reads beside the topology schema
REPORT_FACTS = (
    RECORD,
    {
        "tools": _opt((MAP, (STR,), _opt((BOOL,)))),
        "softshare": _opt(
            (RECORD, {"chips_total": _opt((INT,)), "chips_healthy": _opt((INT,)), "capacity": _opt((INT,))})
        ),
        "errors": _ERRORS,
    },
)

# the npu_binding facts of vllm_binding_facts (model/binding.gather and drift)
BINDING = (
    RECORD,
    {
        "instances": _opt((MAP, (STR,), _opt((RECORD, {"checked": _opt((BOOL,))})))),
        "drift": _opt(
            (
                LIST,
                (RECORD, {"instance": (STR,), "device": _opt((STR,)), "kind": (STR,), "evidence": _TEXT, "fix": _TEXT}),
            )
        ),
        "errors": _ERRORS,
    },
)

ENTRY = (
    RECORD,
    {
        "plan_errors": _opt((ANY,)),
        "facts_error": _TEXT,
        "recorded": _TEXT,  # the snapshot the facts were replayed from (fleet_audit), else empty
        "binding_error": _TEXT,
        "rails": _opt((MAP, (STR,), (ANY,))),
    },
)

_INF = float("inf")


def _check(value, spec, source):
    check(value, spec, source)


def _float_problem(value, where=""):
    """The first float that is not finite (``numa_node: .inf`` parses as one), anywhere."""
    stack = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and (math.isnan(item) or item in (_INF, -_INF)):
            return "%s: %r is not a finite number" % (path or "value", item)
        if isinstance(item, dict):
            stack.extend((v, "%s.%s" % (path, k) if path else str(k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, "%s[%d]" % (path, i)) for i, v in enumerate(item))
    return None


def entry_problem(entry):
    """Why one host's audit entry cannot be reported (None when it can)."""
    if not isinstance(entry, dict):
        return "the host's entry must be a mapping, got %s" % type(entry).__name__
    try:
        _check(entry, ENTRY, "entry")
        facts = entry.get("facts")
        if facts is not None:
            schema.check_topology(facts, "facts")
            _check(facts, REPORT_FACTS, "facts")
        for policy in POLICIES:
            plan = entry.get("plan_" + policy)
            if plan is not None:
                schema.check_plan(plan, "plan_" + policy)
        if entry.get("binding") is not None:
            _check(entry["binding"], BINDING, "binding")
    except NpuopsError as err:
        return str(err)
    return _float_problem(entry)


def _why(text):
    text = str(text)
    return text if len(text) <= MAX_WHY else text[: MAX_WHY - 3] + "..."


def _same_key(entry):
    """``entry`` without its facts' hostname, serialised (None when it cannot be): a fleet of
    identical servers is checked once (``analysis._input_key`` does the same for the analysis)."""
    facts = entry.get("facts")
    if isinstance(facts, dict) and "hostname" in facts:
        if not isinstance(facts["hostname"], (str, type(None))):
            return None
        entry = dict(entry, facts=dict(facts, hostname=None))
    try:
        return marshal.dumps(entry)
    except ValueError:
        return None


def screen_hosts(hosts, plain=False):
    """``{name: entry}`` with every entry as plain data and each one the report cannot read
    replaced by ``{UNUSABLE: why}`` (an entry already so marked is kept). ``plain``: the
    entries are plain data already (``build_report``'s input), not converted again."""
    out, verdicts = {}, {}
    for name, entry in hosts.items():
        if isinstance(entry, dict) and UNUSABLE in entry:
            out[str(name)] = entry
            continue
        try:
            entry = entry if plain else to_plain(entry)
        except RecursionError:
            out[str(name)] = {UNUSABLE: "the host's entry is nested too deep"}
            continue
        key = _same_key(entry) if isinstance(entry, dict) else None
        if key is None or key not in verdicts:
            why = entry_problem(entry)
            if key is not None:
                verdicts[key] = why
        else:
            why = verdicts[key]
        out[str(name)] = entry if why is None else {UNUSABLE: _why(why)}
    return out


# what analysing a value of an unexpected type raises (the screen should leave none of them)
ANALYSIS_ERRORS = (
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    OverflowError,
    RecursionError,
    NpuopsError,
)


def guarded(analyse, problems_of):
    """``analyse(name, entry)`` (``analysis.analyse_host``) for screened entries: a marked
    entry, or one whose analysis or problems (``problems_of``) fail on a value the screen let
    through, gives the host's "facts unusable" summary instead (``UNUSABLE``: the reason)."""

    def unusable(name, why):
        host = analyse(name, {"facts_error": "facts unusable: %s" % why})
        host[UNUSABLE] = why
        return host

    def run(name, entry):
        if UNUSABLE in entry:
            return unusable(name, entry[UNUSABLE])
        try:
            host = analyse(name, entry)
            problems_of(host)
        except ANALYSIS_ERRORS as err:
            return unusable(name, _why("%s: %s" % (type(err).__name__, err)))
        return host

    return run
