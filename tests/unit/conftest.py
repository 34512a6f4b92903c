# -*- coding: utf-8 -*-
"""Make ``helpers`` importable and the collection importable as ansible_collections.npuops.fleet."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LINK = os.path.join(REPO, ".cache", "collections", "ansible_collections", "npuops", "fleet")
if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), LINK)
for path in (HERE, os.path.join(REPO, ".cache", "collections")):
    if path not in sys.path:
        sys.path.insert(0, path)
