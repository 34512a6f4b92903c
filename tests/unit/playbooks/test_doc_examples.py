# -*- coding: utf-8 -*-
"""The examples of the docs and the shipped playbooks go through the roles' argument specs.

Ansible picks a role's argument spec by the ``tasks_from`` value as written: ``tasks_from:
plan.yml`` matches no entry point (the spec's entry is ``plan``) and skips the check, so a
mistake in a variable reached the planner. Every ``tasks_from`` of a Markdown YAML block, a
playbook and the validate role's own docs that reaches an entry point names it as the spec
does."""

import glob
import os
import re

import yaml

from npuops_testing import REPO

BLOCK = re.compile(r"```ya?ml\n(.*?)```", re.S)
TASKS_FROM = re.compile(r"tasks_from:\s*['\"]?([\w./-]+)")
ROLE = re.compile(r"name:\s*npuops\.fleet\.(\w+)")


def _entry_points():
    out = {}
    for path in glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml")):
        role = path.split(os.sep)[-3]
        with open(path) as handle:
            out[role] = set(yaml.safe_load(handle)["argument_specs"] or {})
    return out


def _sources():
    docs = [os.path.join(REPO, "README.md")] + glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True)
    docs += glob.glob(os.path.join(REPO, "roles", "*", "README.md"))
    for path in docs:
        with open(path, encoding="utf-8") as handle:
            for block in BLOCK.findall(handle.read()):
                yield os.path.relpath(path, REPO), block
    for path in glob.glob(os.path.join(REPO, "playbooks", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            yield os.path.relpath(path, REPO), handle.read()


def test_every_tasks_from_names_an_entry_point_of_its_role():
    entries = _entry_points()
    seen = 0
    wrong = []
    for where, text in _sources():
        lines = text.splitlines()
        for number, line in enumerate(lines):
            match = TASKS_FROM.search(line)
            if not match:
                continue
            seen += 1
            # the role is named on the same line or within the three lines before it
            near = " ".join(lines[max(0, number - 3) : number + 1])
            roles = ROLE.findall(near)
            assert roles, (where, line)
            value, known = match.group(1), entries.get(roles[-1], set())
            # `plan.yml` for the entry point `plan`: Ansible finds no spec and checks nothing
            # (a task file that is no entry point, such as fleet_audit's dest.yml, has none)
            if value not in known and os.path.splitext(value)[0] in known:
                wrong.append(
                    "%s: %s (entry points of %s: %s)"
                    % (where, line.strip(), roles[-1], sorted(entries.get(roles[-1], ())))
                )
    assert wrong == []
    assert seen >= 6  # site.yml's, audit.yml's and the docs' own
