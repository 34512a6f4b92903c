# -*- coding: utf-8 -*-
"""docs/roles/<role>.md lists every variable of every entry point of the role's argument specs
(what ansible-doc -t role shows): the pages lacked 19 of them (scripts/gen_role_docs.py)."""

import os

import pytest
import yaml

# scripts/ is on pytest.ini's pythonpath
import gen_role_docs

from npuops_testing import REPO

ROLES = gen_role_docs.roles()


@pytest.mark.parametrize("role", ROLES)
def test_every_spec_variable_is_in_its_role_page(role):
    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    with open(os.path.join(REPO, "docs", "roles", role + ".md"), encoding="utf-8") as handle:
        page = handle.read()
    generated = page[page.index(gen_role_docs.BEGIN) : page.index(gen_role_docs.END)]
    for entry, spec in specs.items():
        part = generated[generated.index("### Entry point `%s`" % entry) :]
        for name in spec.get("options") or {}:
            assert "| `%s` |" % name in part, (role, entry, name)


def test_pages_are_current():
    for role in ROLES:
        with open(os.path.join(REPO, "docs", "roles", role + ".md"), encoding="utf-8") as handle:
            page = handle.read()
        assert gen_role_docs.render(role, page) == page, "run scripts/gen_role_docs.py (%s)" % role


def test_markup_becomes_markdown():
    assert gen_role_docs._plain("C(a) O(b) I(c) | d") == "`a` `b` `c` \\| d"


def test_the_readme_module_table_names_every_module():
    """The README's module table lacked kubelet_state_reset."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    modules = sorted(
        n[:-3]
        for n in os.listdir(os.path.join(REPO, "plugins", "modules"))
        if n.endswith(".py") and not n.startswith("_")
    )
    for name in modules:
        assert "| `npuops.fleet.%s` |" % name in readme, name
        assert "(docs/modules/%s.md)" % name in readme, name
