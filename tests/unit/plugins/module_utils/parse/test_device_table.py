# -*- coding: utf-8 -*-
"""parse/device_type.TABLE: every row complete, detection from the table equal to the rules it
replaced, and the modules' documented device-type choices equal to the table's names."""

import os
import re

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type

REPO = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
)
MODULES = os.path.join(REPO, "plugins", "modules")

# what each field must hold: every field a layer reads is set on every row (no None)
FIELD_CHECKS = {
    "name": lambda v: isinstance(v, str) and re.match(r"^[0-9A-Za-z_]{1,16}\Z", v),
    "label": lambda v: isinstance(v, str) and v.strip() == v and v,
    "pci_ids": lambda v: isinstance(v, tuple) and all(re.match(r"^[0-9a-f]{4}\Z", i) for i in v),
    "names": lambda v: isinstance(v, str) and re.compile(v) and not re.match(v, ""),
    "precedence": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "dies_per_npu": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
    "phy_id_header": lambda v: isinstance(v, bool),
    "roles": lambda v: v in (device_type.SPLIT, device_type.CLUSTER),
    "cluster_cores": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    "vllm_mode": lambda v: v in (device_type.TOPO_AFFINITY, device_type.GLOBAL_SLICE),
    "vllm_950_path": lambda v: isinstance(v, bool),
    "vllm_profiled": lambda v: isinstance(v, bool),
    "process_table": lambda v: v in (device_type.CHIP_ROWS, device_type.NPU_ID_ROWS),
    "softshare": lambda v: isinstance(v, bool),
}


def test_field_checks_cover_every_field():
    assert sorted(FIELD_CHECKS) == sorted(device_type.DeviceType.__slots__)


@pytest.mark.parametrize("row", device_type.TABLE, ids=lambda r: r.name)
def test_every_row_is_complete(row):
    for field, check in FIELD_CHECKS.items():
        value = getattr(row, field)
        assert value is not None, (row.name, field)
        assert check(value), (row.name, field, value)
    # a cluster type has a cluster size, a split type none
    assert (row.roles == device_type.CLUSTER) == (row.cluster_cores > 0), row.name
    assert row.irq_roles == (row.roles == device_type.SPLIT)


def test_table_keys_are_unique_and_unknown_is_a_row():
    names = [r.name for r in device_type.TABLE]
    assert len(set(names)) == len(names)
    pci = [i for r in device_type.TABLE for i in r.pci_ids]
    assert len(set(pci)) == len(pci)
    precedence = [r.precedence for r in device_type.TABLE]
    assert len(set(precedence)) == len(precedence)
    assert device_type.TYPES == tuple(names)
    assert device_type.TYPES == ("A2", "A3", "A5", "310P", "910A", "unknown")
    assert device_type.row(None) is device_type.BY_NAME["unknown"]
    assert device_type.row("NVIDIA A100-SXM4-40GB") is device_type.BY_NAME["unknown"]
    assert device_type.row(["A3"]) is device_type.BY_NAME["unknown"]


def test_a_row_is_read_only():
    row = device_type.row("A3")
    with pytest.raises(AttributeError):
        row.softshare = False
    with pytest.raises(AttributeError):
        row.extra = 1
    with pytest.raises(TypeError):
        device_type.DeviceType("X", **dict((k, getattr(row, k)) for k in row.__slots__[1:] if k != "label"))


@pytest.mark.parametrize(
    "name, facts",
    [
        # the facts the planners read before the table, each was an `if` or a list somewhere
        (
            "A2",
            dict(
                vllm_mode="topo_affinity",
                roles="split",
                vllm_profiled=True,
                softshare=True,
                dies_per_npu=1,
                vllm_950_path=False,
                process_table="chip",
            ),
        ),
        (
            "A3",
            dict(
                vllm_mode="global_slice",
                roles="split",
                vllm_profiled=True,
                softshare=True,
                dies_per_npu=2,
                vllm_950_path=False,
                process_table="chip",
            ),
        ),
        (
            "A5",
            dict(
                vllm_mode="topo_affinity",
                roles="cluster",
                cluster_cores=8,
                vllm_profiled=True,
                softshare=False,
                dies_per_npu=1,
                vllm_950_path=True,
                process_table="npu_id",
                label="Ascend 950",
            ),
        ),
        (
            "310P",
            dict(vllm_mode="topo_affinity", roles="split", vllm_profiled=True, softshare=False, pci_ids=("d500",)),
        ),
        (
            "910A",
            dict(vllm_mode="topo_affinity", roles="split", vllm_profiled=False, softshare=False, pci_ids=("d801",)),
        ),
        ("unknown", dict(vllm_mode="topo_affinity", roles="split", vllm_profiled=False, softshare=False, pci_ids=())),
    ],
)
def test_rows_hold_the_facts_the_layers_had(name, facts):
    row = device_type.row(name)
    for field, value in facts.items():
        assert getattr(row, field) == value, (name, field)


# ---- detection from the table equals the rules it replaced (ported here as the oracle) ----

_OLD_A3 = (
    "910",
    "910C",
    "910_9391",
    "910_9392",
    "910_9372",
    "910_9362",
    "910_9363",
    "910_9381",
    "910_9382",
    "9391",
    "9392",
    "9372",
    "9362",
    "9363",
    "9381",
    "9382",
)
_OLD_PCI = {"d801": "910A", "d802": "A2", "d803": "A3", "d500": "310P"}
_OLD_PRIORITY = ("A5", "310P", "A3", "A2", "910A", "unknown")


def _old_type_of_name(name):
    upper = device_type.normalise_name(name).upper()
    if not upper or upper == "MCU":
        return None
    if upper.startswith("950"):
        return "A5"
    if re.match(r"^(310P\d?|I2\d?)", upper):
        return "310P"
    if upper.startswith("310"):
        return "unknown"
    if re.match(r"^(910B\d|A2G\d)", upper):
        return "A2"
    if upper in _OLD_A3:
        return "A3"
    if upper.startswith("910"):
        return "910A"
    return None


_NAME_PARTS = st.sampled_from(
    [
        "Ascend",
        "ascend ",
        "910",
        "910B",
        "B",
        "3",
        "950",
        "DT",
        "310",
        "P",
        "I2",
        "A2G",
        "1",
        "_9391",
        "_9363",
        "9392",
        "C",
        "A",
        "Mcu",
        "Pro",
        "x",
        " ",
        "-",
        "_",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_NAME_PARTS, max_size=5).map("".join))
def test_type_of_name_as_before(name):
    assert device_type.type_of_name(name) == _old_type_of_name(name)


@pytest.mark.parametrize(
    "name", list(_OLD_A3) + ["910B3", "A2G1", "950PR", "310P3", "I21", "310B1", "910ProB", "910PremiumA", "Mcu"]
)
def test_type_of_name_as_before_on_known_names(name):
    assert device_type.type_of_name(name) == _old_type_of_name(name)
    assert device_type.type_of_name("Ascend" + name) == _old_type_of_name("Ascend" + name)


@pytest.mark.parametrize("dev", ["d801", "0xd802", "0xD803", " d500 ", "d100", "d8", "", None])
def test_type_of_pci_device_as_before(dev):
    text = (dev or "").strip().lower()
    old = _OLD_PCI.get(text[2:] if text.startswith("0x") else text)
    assert device_type.type_of_pci_device(dev) == old


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(device_type.TYPES), min_size=1, max_size=6))
def test_tie_break_as_before(kinds):
    assert device_type._pick(kinds) == min(kinds, key=_OLD_PRIORITY.index)


@pytest.mark.parametrize("chips", [2, 3, 4, 16])
def test_dies_evidence_as_before(chips):
    got = device_type.detect(chips_per_npu=chips, distinct_bus_per_die=True)
    assert got["device_type"] == "A3"


# ---- the modules' documented choices are the table's names ----


def _documented_device_type_choices():
    found = {}
    for name in sorted(os.listdir(MODULES)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(MODULES, name)) as handle:
            text = handle.read()
        match = re.search(r"^DOCUMENTATION = r?('''|\"\"\")(.*?)^\1", text, re.S | re.M)
        if not match:
            continue
        options = yaml.safe_load(match.group(2)).get("options") or {}
        if "device_type" in options:
            found[name[:-3]] = options["device_type"].get("choices")
    return found


def test_documented_choices_are_the_table_names():
    found = _documented_device_type_choices()
    assert "npu_cpu_plan" in found
    for module, choices in found.items():
        assert [str(c) for c in choices] == list(device_type.TYPES), (
            "%s: DOCUMENTATION device_type choices differ from parse/device_type.TABLE; run "
            "scripts/gen_argument_specs.py" % module
        )


def test_argument_spec_choices_are_the_table_names():
    from ansible_collections.npuops.fleet.plugins.modules import npu_cpu_plan

    assert npu_cpu_plan.DEVICE_TYPES is device_type.TYPES
