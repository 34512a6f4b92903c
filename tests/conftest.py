# -*- coding: utf-8 -*-
"""Shared by tests/unit and tests/integration.

``pytest.ini`` puts ``.cache/collections`` (the collection as ``ansible_collections.npuops.fleet``),
``tests/lib`` (the ``npuops_testing`` helpers) and ``scripts`` on ``pythonpath`` and runs with
``--import-mode=importlib``, so test files in different folders may share a basename and no test
touches ``sys.path``. This file makes sure the collection link exists (``make venv`` also creates it) and, under
``make test`` / ``make check`` (scripts/check.sh exports ``NPUOPS_STRICT_SKIPS=1``), reports a
skipped test as a failure: a skip there means a component ``make deps`` installs (sshd, chromium,
shellcheck, systemd-analyze, promtool, ...), root or two CPUs is missing, and CI must not pass
without having run the test. ``NPUOPS_ALLOW_SKIPS=1`` accepts skips on purpose.
"""

import importlib
import os
import sys

import pytest

from npuops_testing import COLLECTIONS, ensure_collection_link

ensure_collection_link()
# pytest added the pythonpath entries before the link existed on a fresh checkout: drop a cached
# "nothing here" for that directory so the next import looks again.
if sys.path_importer_cache.get(COLLECTIONS, True) is None:
    del sys.path_importer_cache[COLLECTIONS]
importlib.invalidate_caches()

INTEGRATION = "tests/integration/"


def pytest_collection_modifyitems(config, items):
    """Everything under tests/integration is slow (ansible-playbook, sshd, a browser)."""
    for item in items:
        if INTEGRATION in str(item.path).replace("\\", "/") and "slow" not in item.keywords:
            item.add_marker(pytest.mark.slow)


STRICT_SKIPS = os.environ.get("NPUOPS_STRICT_SKIPS") == "1" and os.environ.get("NPUOPS_ALLOW_SKIPS") != "1"


def _strict_skip(report):
    """A skipped report as a failure naming the skip's reason (STRICT_SKIPS)."""
    if not (STRICT_SKIPS and report.skipped) or hasattr(report, "wasxfail"):
        return report
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        "skipped under make test (NPUOPS_STRICT_SKIPS=1): %s - `make deps` installs the "
        "system packages the tests use; NPUOPS_ALLOW_SKIPS=1 accepts a skip on purpose" % reason
    )
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):  # pylint: disable=unused-argument
    return _strict_skip((yield))
