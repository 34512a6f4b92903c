# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doc fragments read as YAML (their merge into module docs by ansible-doc runs in
tests/integration/doc_fragments/test_doc_fragments.py)."""

import glob
import os

import pytest
import yaml

from npuops_testing import REPO, module_string


@pytest.mark.parametrize(
    "variant, attributes",
    [
        ("DOCUMENTATION", {"check_mode", "diff_mode"}),
        ("FACTS", {"facts"}),
        ("INFO_MODULE", {"check_mode", "diff_mode"}),
    ],
)
def test_attributes_doc_fragment_variants(variant, attributes):
    from ansible_collections.npuops.fleet.plugins.doc_fragments.attributes import ModuleDocFragment

    doc = yaml.safe_load(getattr(ModuleDocFragment, variant))
    assert set(doc["attributes"]) == attributes
    for name, attribute in doc["attributes"].items():
        # validate-modules rejects an attribute without a description once merged; the base
        # fragment must carry them, the info variant only the support levels.
        if variant == "INFO_MODULE":
            assert attribute["support"] in ("full", "N/A"), name
        else:
            assert attribute["description"].strip(), name


def test_host_root_doc_fragment_matches_the_argument_spec():
    from ansible_collections.npuops.fleet.plugins.doc_fragments.host_root import ModuleDocFragment

    option = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["host_root"]
    description = option["description"]
    assert all(line.strip() for line in (description if isinstance(description, list) else [description]))
    assert "refused" in " ".join(description)  # the rule paths.check_host_root applies
    # the modules declare host_root=dict(type="path", default="/")
    assert (option["type"], option["default"]) == ("path", "/")


def test_every_module_takes_its_author_from_the_module_fragment():
    from ansible_collections.npuops.fleet.plugins.doc_fragments.module import ModuleDocFragment

    assert yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["author"] == ["npuops.fleet contributors (@npuops)"]
    paths = sorted(glob.glob(os.path.join(REPO, "plugins", "modules", "*.py")))
    assert paths
    for path in paths:
        doc = yaml.safe_load(module_string(path, "DOCUMENTATION"))
        # validate-modules requires an author once the fragments are merged
        assert "npuops.fleet.module" in doc["extends_documentation_fragment"], path
        assert "author" not in doc, path
