# -*- coding: utf-8 -*-
"""The counts `make demo`'s report has, as docs/demo.md and docs/audit.md state them between
``<!-- demo-counts -->`` markers: read them and compare with a report's ``summary``."""

import os
import re

from npuops_testing import REPO

PAGES = (os.path.join(REPO, "docs", "demo.md"), os.path.join(REPO, "docs", "audit.md"))
KEYS = ("hosts", "npus", "gpus", "health_unknown", "shapes", "error", "warning", "info")
_SENTENCE = re.compile(
    r"<!-- demo-counts -->(\d+) hosts \((\d+) NPUs, (\d+) GPUs; (\d+) devices of unknown "
    r"health\), (\d+) host shapes;\s+(\d+) errors?, (\d+) warnings? and (\d+) info notes?\."
    r"<!-- /demo-counts -->"
)


def counts(page):
    with open(page, encoding="utf-8") as handle:
        found = _SENTENCE.search(handle.read())
    assert found, "%s: no <!-- demo-counts --> sentence" % page
    return dict(zip(KEYS, (int(v) for v in found.groups())))


def mismatches(page, summary):
    """``["<key>: page N, report M", ...]`` where the page and the report's summary differ."""
    actual = dict((k, summary[k]) for k in KEYS[:5])
    actual.update(summary["problems"])
    stated = counts(page)
    return [
        "%s: %s says %d, the report %d" % (k, os.path.basename(page), stated[k], actual[k])
        for k in KEYS
        if stated[k] != actual[k]
    ]
