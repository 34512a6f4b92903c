# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doc fragments as ansible-doc merges them into the modules' documentation (the
fragments themselves are read in tests/unit/plugins/doc_fragments/test_doc_fragments.py)."""

import json
import os
import subprocess
import sys

import pytest

from npuops_testing.runner import ansible_env

HOST_ROOT_MODULES = ("npu_irq_affinity", "npu_share_dirs", "vllm_launch_wrapper")


@pytest.mark.slow
def test_attributes_fragment_merges_into_module_docs():
    # ansible-doc resolves extends_documentation_fragment: the facts module must show the
    # descriptions from npuops.fleet.attributes and npuops.fleet.attributes.facts.
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "--json", "npuops.fleet.npu_topology_facts"],
        env=ansible_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["npuops.fleet.npu_topology_facts"]["doc"]
    assert {"check_mode", "diff_mode", "facts"} <= set(doc["attributes"])
    assert all(doc["attributes"][name].get("description") for name in ("check_mode", "diff_mode", "facts"))


@pytest.mark.slow
@pytest.mark.parametrize("module", HOST_ROOT_MODULES)
def test_host_root_fragment_merges_into_module_docs(module):
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "--json", "npuops.fleet." + module],
        env=ansible_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["npuops.fleet." + module]["doc"]
    option = doc["options"]["host_root"]
    assert (option["type"], option["default"]) == ("path", "/")
    description = option["description"]
    assert "sandbox" in (description if isinstance(description, str) else " ".join(description))
    assert {"check_mode", "diff_mode"} <= set(doc["attributes"])
