# -*- coding: utf-8 -*-
"""The binder's vendor seam: the plan's ``npuops_instance.vendor`` is looked up in
``model/vendors`` (plan table, device word, process query), never branched on by name; an
AMD plan is a GPU plan read through rocm-smi, not an Ascend one."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import rules, smi, targets
from npuops_testing.binder import gpu_plan
from npuops_testing.gpu_hosts import SHOWPIDGPUS


@pytest.mark.parametrize("name", sorted(vendors.VENDORS))
def test_every_vendor_row_has_a_process_reader_and_its_table(name):
    row = vendors.VENDORS[name]
    assert row.tool in smi.READERS and row.process_query[0] == row.tool
    plan = (
        gpu_plan(name)
        if row.is_gpu
        else {
            "npus": {"0": {"main": "1", "acl": "0", "release": "1", "numa_nodes": [0]}},
            "npuops_instance": {"vendor": name, "devices": [0]},
        }
    )
    target = targets.device_target(plan, 0)
    assert target["label"] == "%s0" % row.device_word
    assert target["main"] == ([0] if row.is_gpu else [1])


def test_an_amd_plan_is_agpu_plan():
    plan = gpu_plan("amd")
    assert targets.vendor_of(plan) is vendors.VENDORS["amd"]
    assert targets.device_target(plan, 1) == {
        "label": "GPU1",
        "device": 1,
        "main": [1],
        "acl": [],
        "release": [],
        "node": 0,
    }
    # read as Ascend (the old branch on "nvidia"), the plan has no npus table: refused
    with pytest.raises(rules.BindError, match="not in the plan"):
        targets.device_target(dict(plan, npuops_instance=dict(plan["npuops_instance"], vendor="ascend")), 1)


def test_an_unknown_vendor_is_refused_and_an_old_plan_is_ascend():
    with pytest.raises(rules.BindError, match="vendor 'intel' is not one of amd, ascend, nvidia"):
        targets.vendor_of({"npuops_instance": {"vendor": "intel"}})
    assert targets.vendor_of({"npuops_instance": {}}) is vendors.VENDORS["ascend"]


def test_rocm_rows_one_gpu_per_process_or_left_to_the_tree(monkeypatch):
    calls = []

    def run(argv, timeout=60):
        calls.append(argv)
        return 0, SHOWPIDGPUS % {"w0": 10, "w1": 11, "both": 12, "idle": 13}

    monkeypatch.setattr(smi, "run", run)
    rows = smi.device_rows(vendors.VENDORS["amd"], 5)
    assert calls == [["rocm-smi", "--showpidgpus"]]
    assert rows == [(1, 10, 0), (0, 11, 0), (None, 12, 0), (None, 13, 0)]
    assert smi.home_devices(rows) == {10: 1, 11: 0}
    monkeypatch.setattr(smi, "run", lambda argv, timeout=60: (None, ""))  # not installed
    assert smi.device_rows(vendors.VENDORS["amd"], 5) == []
