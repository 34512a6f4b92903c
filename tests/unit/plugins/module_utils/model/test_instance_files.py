# -*- coding: utf-8 -*-
"""model/instance_files.py: the on-disk contract of an instance, one source for the writer
(vllm_launch_wrapper, render/units), the read-back (model/binding) and the fix texts."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import binding, drift_kinds, instance_files
from npuops_testing.module_harness import call_module

PLAN = {
    "policy": "strict",
    "mode": "topo_affinity",
    "device_type": "A2",
    "skipped": False,
    "numa_nodes": {"0": "0-1"},
    "npus": {"0": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "0", "acl": "1", "release": "0"}},
    "instances": {"svc": {"npus": [0], "env": {}}},
}


@pytest.fixture()
def installed(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    result = call_module(
        "vllm_launch_wrapper", {"name": "svc", "plan": PLAN, "command": ["vllm", "serve", "/m"], "host_root": str(root)}
    )
    assert not result.get("failed"), result.get("msg")
    return root, result


def test_what_the_wrapper_writes_is_what_the_layout_names(installed):
    root, result = installed
    files = instance_files.file_paths(instance_files.DEFAULT_DEST, "svc")
    units = instance_files.unit_names("svc")
    written = set(r["path"] for r in result["files"])
    assert set(files.values()) <= written
    assert set("%s/%s" % (instance_files.DEFAULT_UNIT_DIR, u) for u in units.values()) <= written
    assert result["wrapper"] == files["wrapper"] and result["plan_file"] == files["plan"]
    assert result["unit_name"] == units["service"] and result["bind_unit"] == units["bind"]
    assert result["units"] == [units["service"], units["bind"], units["timer"]]
    for path in written:
        assert (root / path.lstrip("/")).exists()


def test_the_read_back_finds_the_instance_the_wrapper_wrote(installed):
    root, result = installed
    errors = []
    found = binding._instances(hostio.LiveHostIO(str(root)), instance_files.DEFAULT_DEST, errors)
    assert found == {"svc": result["plan_file"]} and errors == []


def test_without_host_binding_there_is_no_bind_unit(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    result = call_module(
        "vllm_launch_wrapper",
        {"name": "svc", "plan": PLAN, "command": ["vllm"], "binding": "vllm", "host_root": str(root)},
    )
    assert result["bind_unit"] is None and result["units"] == [instance_files.unit_names("svc")["service"]]
    assert not (root / instance_files.file_paths(instance_files.DEFAULT_DEST, "svc")["binder"].lstrip("/")).exists()


@pytest.mark.parametrize(
    "file_name, name",
    [
        ("svc.plan.json", "svc"),
        ("a.b.plan.json", "a.b"),
        (".plan.json", None),
        ("svc-launch", None),
        ("svc.plan.json.tmp", None),
    ],
)
def test_name_of_plan_file(file_name, name):
    assert instance_files.name_of_plan_file(file_name) == name


def test_fix_texts_name_the_instance_units():
    units = instance_files.unit_names("svc")
    assert units["reconcile"] in drift_kinds.FIX_THREADS % units
    assert (drift_kinds.FIX_UNIT % units).count(units["service"]) == 2
    assert units["service"] in drift_kinds.FIX_MISSING % units
    rows = binding.drift({"instances": {"svc": {"unit": units["service"], "unit_state": "failed", "report": None}}})
    assert rows[0]["fix"] == drift_kinds.FIX_UNIT % units
