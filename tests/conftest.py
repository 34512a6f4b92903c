# -*- coding: utf-8 -*-
"""Shared by tests/unit and tests/integration.

``pytest.ini`` puts ``.cache/collections`` (the collection as ``ansible_collections.npuops.fleet``),
``tests/lib`` (the ``npuops_testing`` helpers) and ``scripts`` on ``pythonpath`` and runs with
``--import-mode=importlib``, so test files in different folders may share a basename and no test
touches ``sys.path``. This file only makes sure the collection link exists (``make venv`` also
creates it).
"""
import importlib
import sys

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
    import pytest
    for item in items:
        if INTEGRATION in str(item.path).replace("\\", "/") and "slow" not in item.keywords:
            item.add_marker(pytest.mark.slow)
