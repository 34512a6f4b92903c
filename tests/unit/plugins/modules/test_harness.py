# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test harness itself: run_module drives a real ansible-playbook, and host-side code
compiles on Python 3.7 (the oldest target the collection supports)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, ansible_env, fixture_text, run_module

COMPILE_PY37 = os.path.join(REPO, "scripts", "compile-py37.sh")


@pytest.mark.slow
def test_run_module_returns_the_module_result(tmp_path):
    target = tmp_path / "probe.txt"
    target.write_text("hello\n")
    result = run_module(None, {"path": str(target), "get_checksum": True},
                        fqcn="ansible.builtin.stat")
    assert result.get("failed") is not True, result
    assert result["stat"]["exists"] is True
    assert result["stat"]["size"] == 6


@pytest.mark.slow
def test_run_module_reports_failure_without_raising(tmp_path):
    result = run_module(None, {"path": str(tmp_path / "absent"), "state": "file"},
                        fqcn="ansible.builtin.file")
    assert result["failed"] is True
    assert "absent" in result["msg"]


@pytest.mark.slow
def test_run_module_check_mode_changes_nothing(tmp_path):
    dest = tmp_path / "made-in-check-mode"
    result = run_module(None, {"path": str(dest), "state": "directory"},
                        fqcn="ansible.builtin.file", check=True)
    assert result["changed"] is True
    assert not dest.exists()


@pytest.mark.slow
def test_run_module_resolves_the_collection(tmp_path):
    # A name that is not in the collection must fail at parse time, naming the FQCN: proves
    # run_module looks modules up under npuops.fleet.
    with pytest.raises(AssertionError, match="npuops.fleet.no_such_module"):
        run_module("no_such_module", {})


def _first_sourced_fixture():
    root = os.path.join(REPO, "tests", "fixtures", "real")
    for dirpath, _dirs, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as handle:
                if handle.read(9) == "# Source:":
                    return os.path.relpath(path, root)
    pytest.skip("no fixture with a '# Source:' line")


def test_fixture_text_strips_the_source_line():
    rel = _first_sourced_fixture()
    with open(os.path.join(REPO, "tests", "fixtures", "real", rel), encoding="utf-8") as handle:
        raw = handle.read()
    text = fixture_text(rel)
    assert raw.startswith("# Source:")
    assert not text.startswith("# Source:")
    assert text == raw.split("\n", 1)[1]


def test_collection_is_importable_by_fqcn():
    from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
    assert os.path.realpath(cpulist.__file__).startswith(os.path.realpath(REPO))


@pytest.mark.slow
def test_host_side_code_compiles_on_python37(tmp_path):
    proc = subprocess.run(["bash", COMPILE_PY37], cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if "SKIPPED" in proc.stdout:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 0, proc.stdout
    assert " 0 failed" in proc.stdout


@pytest.mark.slow
def test_python37_compile_catches_py38_syntax(tmp_path):
    # Guard against a checker that always passes: walrus (3.8+) must be rejected.
    bad = tmp_path / "plugins" / "modules" / "walrus.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("if (n := 1):\n    pass\n")
    (tmp_path / "plugins" / "module_utils").mkdir()
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "compile-py37.sh"
    with open(COMPILE_PY37) as handle:
        script.write_text(handle.read())
    proc = subprocess.run(["bash", str(script)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if "SKIPPED" in proc.stdout:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 1, proc.stdout
    assert "walrus.py" in proc.stdout


@pytest.mark.parametrize("variant, attributes", [
    ("DOCUMENTATION", {"check_mode", "diff_mode"}),
    ("FACTS", {"facts"}),
    ("INFO_MODULE", {"check_mode", "diff_mode"}),
])
def test_attributes_doc_fragment_variants(variant, attributes):
    yaml = pytest.importorskip("yaml")
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


@pytest.mark.slow
def test_attributes_fragment_merges_into_module_docs():
    # ansible-doc resolves extends_documentation_fragment: the facts module must show the
    # descriptions from npuops.fleet.attributes and npuops.fleet.attributes.facts.
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "--json",
                           "npuops.fleet.npu_topology_facts"], env=ansible_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["npuops.fleet.npu_topology_facts"]["doc"]
    assert {"check_mode", "diff_mode", "facts"} <= set(doc["attributes"])
    assert all(doc["attributes"][name].get("description") for name in ("check_mode", "diff_mode", "facts"))


HOST_ROOT_MODULES = ("npu_irq_affinity", "npu_share_dirs", "vllm_launch_wrapper")


def test_host_root_doc_fragment_matches_the_argument_spec():
    yaml = pytest.importorskip("yaml")
    from ansible_collections.npuops.fleet.plugins.doc_fragments.host_root import ModuleDocFragment
    option = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["host_root"]
    assert option["description"].strip()
    # the modules declare host_root=dict(type="path", default="/")
    assert (option["type"], option["default"]) == ("path", "/")


@pytest.mark.slow
@pytest.mark.parametrize("module", HOST_ROOT_MODULES)
def test_host_root_fragment_merges_into_module_docs(module):
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "--json",
                           "npuops.fleet." + module], env=ansible_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["npuops.fleet." + module]["doc"]
    option = doc["options"]["host_root"]
    assert (option["type"], option["default"]) == ("path", "/")
    assert "sandbox" in option["description"]
    assert {"check_mode", "diff_mode"} <= set(doc["attributes"])
