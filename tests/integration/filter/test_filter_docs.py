# -*- coding: utf-8 -*-
"""Every filter the collection registers is documented: ``ansible-doc -t filter`` shows its
description, options, examples and return value (a file with several filters has one
``<filter>.yml`` doc beside it per filter)."""

import importlib
import json
import os
import subprocess

from npuops_testing import REPO
from npuops_testing.runner import BIN, ansible_env

FILTER_DIR = os.path.join(REPO, "plugins", "filter")


def _filter_names():
    names = []
    for entry in sorted(os.listdir(FILTER_DIR)):
        if entry.endswith(".py") and not entry.startswith("_"):
            module = importlib.import_module("ansible_collections.npuops.fleet.plugins.filter." + entry[:-3])
            names.extend(module.FilterModule().filters())
    return sorted(names)


def test_every_filter_has_its_documentation():
    names = _filter_names()
    # the report (4), soft-share (4), rails (1) and host configuration (4) filters
    assert len(names) == 13
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-doc"), "-t", "filter", "--json"] + ["npuops.fleet." + n for n in names],
        env=ansible_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    assert sorted(docs) == ["npuops.fleet." + n for n in names]
    for fqcn, entry in docs.items():
        doc = entry["doc"]
        assert doc["name"] == fqcn.split(".")[-1]
        assert doc["short_description"] and doc["description"], fqcn
        assert "_input" in doc["options"], fqcn
        assert fqcn in entry["examples"], fqcn
        assert "_value" in entry["return"], fqcn
