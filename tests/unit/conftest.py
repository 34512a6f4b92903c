# -*- coding: utf-8 -*-
"""Make ``helpers`` importable and the collection importable as ansible_collections.npuops.fleet.

pytest runs with ``--import-mode=importlib`` (pytest.ini) so test files in different folders may
share a basename (tests/unit/plugins/module_utils/test_x.py and tests/unit/plugins/filter/test_x.py).
That mode does not put test folders on sys.path, so they are added here: a test may still import
a sibling by plain name (``from test_site import make_fleet``).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LINK = os.path.join(REPO, ".cache", "collections", "ansible_collections", "npuops", "fleet")
if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), LINK)

_test_dirs = [os.path.join(REPO, ".cache", "collections"), HERE]
for _dirpath, _dirnames, _files in os.walk(HERE):
    _dirnames[:] = sorted(d for d in _dirnames if d != "__pycache__" and not d.startswith("."))
    if _dirpath != HERE:
        _test_dirs.append(_dirpath)
for path in reversed(_test_dirs):
    if path not in sys.path:
        sys.path.insert(0, path)
