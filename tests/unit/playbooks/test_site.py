# -*- coding: utf-8 -*-
"""playbooks/site.yml read as data: every stage is tagged (the runs are in
tests/integration/playbooks/test_site.py)."""

import os

import yaml

from npuops_testing import REPO

SITE = os.path.join(REPO, "playbooks", "site.yml")


def test_site_yml_stages_are_tagged():
    with open(SITE) as handle:
        plays = yaml.safe_load(handle)
    tags = set()
    for play in plays:
        for task in play["tasks"]:
            tags.update(task.get("tags", []))
            assert task["name"][0].isupper()
    assert {"facts", "softshare", "plan", "irq", "launch"} <= tags
