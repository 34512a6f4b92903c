# -*- coding: utf-8 -*-
"""kubelet/parse/devices.py: the DRA manager checkpoint (the kubelet's own test cases, ported as
data in tests/fixtures/kubelet/dra_manager_checkpoint.yml), the device plugin's Allocate answer
the kubelet keeps (protobuf), Ascend device id shapes, and bad input that must fail clearly."""

import base64
import json
import os
import zlib

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import facts as model
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as kubelet
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import devices as kd
from npuops_testing import REPO

with open(os.path.join(REPO, "tests", "fixtures", "kubelet", "dra_manager_checkpoint.yml")) as _handle:
    DRA = yaml.safe_load(_handle)


def _set(entry):
    """PodUIDs is a Go set: {uid: {}}; the rest in the order the Go structs marshal."""
    return dict((k, dict((u, {}) for u in v) if k == "PodUIDs" else v) for k, v in entry.items())


def data_layout(case):
    body = {
        "kind": "DRACheckpoint",
        "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1",
        "Entries": [_set(e) for e in case["entries"]],
    }
    data = json.dumps(body, separators=(",", ":"))
    return json.dumps({"Data": data, "Checksum": case["checksum"]}, separators=(",", ":")), data


def entries_layout(case):
    return json.dumps(
        {"version": "v1", "entries": [_set(e) for e in case["entries"]], "checksum": case["checksum"]},
        separators=(",", ":"),
    )


def _content(layout, case):
    if "raw" in case:
        return case["raw"]
    return data_layout(case)[0] if layout == "data_layout" else entries_layout(case)


def _outcome(layout, case):
    if case.get("absent"):  # no file on the host: the facts' dra_state is null
        return None if model.read_device_states(_NoFiles(), []) == {"dra_state": None} else "error"
    try:
        return kd.parse_dra_checkpoint(_content(layout, case))
    except ParseError:
        return "error"


class _NoFiles(object):
    def read_text(self, path):
        return None


CASES = [(layout, case) for layout in ("data_layout", "entries_layout") for case in DRA[layout]]


@pytest.mark.parametrize("layout, case", CASES, ids=["%s:%s" % (l, c["id"]) for l, c in CASES])
def test_dra_checkpoint_case(layout, case):
    got = _outcome(layout, case)
    if case.get("checksum_only"):
        assert got != "error"  # carried, not verified: the one kind of case that differs
        return
    if case.get("error"):
        assert got == "error"
        return
    if case.get("absent"):
        assert got is None
        return
    assert len(got["claims"]) == case["expected"]["claims"]
    devices = [d for c in got["claims"] for d in c["devices"]]
    if "devices" in case["expected"]:
        assert [d["device"] for d in devices] == case["expected"]["devices"]
        assert got["format"] == "checkpoint.dra.kubelet.k8s.io/v1"
    else:
        assert sorted(i for d in devices for i in d["cdi"]) == case["expected"]["cdi"]
        assert got["format"] == "v1" and all(d["device"] is None for d in devices)
    assert all(c["pods"] == ["139cdb46-f989-4f17-9561-ca10cfb509a6"] for c in got["claims"])


def test_dra_port_reproduces_the_kubelets_bytes():
    """The Data the cases rebuild is the kubelet's byte for byte: its CRC-32 is the kubelet's number."""
    for case in DRA["data_layout"]:
        if "entries" in case and not case.get("error"):
            assert zlib.crc32(data_layout(case)[1].encode()) == case["checksum"], case["id"]


def test_dra_cases_agreement():
    """k of N over both layouts: all but the old layout's checksum-only case."""
    agree = [c["id"] for layout, c in CASES if (_outcome(layout, c) == "error") == bool(c.get("error"))]
    assert (len(agree), len(CASES)) == (12, 13)


@pytest.mark.parametrize(
    "doc, needle",
    [
        ({"Data": 5, "Checksum": 1}, "Data must be a JSON string"),
        ({"Data": "{}", "Checksum": zlib.crc32(b"{}")}, "not DRACheckpoint"),
        ({"Data": "{}", "Checksum": True}, "not the CRC-32"),
        ({"version": "v2", "entries": []}, "neither Data nor version v1"),
        ({"version": "v1", "entries": {}}, "entries must be a list"),
        ({"version": "v1", "entries": [{"ClaimUID": "u", "PodUIDs": ["a"]}]}, "PodUIDs must be an object"),
        ({"version": "v1", "entries": [{"ClaimName": "x"}]}, "ClaimUID missing"),
        ([], "must be a JSON object"),
    ],
)
def test_dra_bad_input_fails_naming_the_file(doc, needle):
    with pytest.raises(ParseError) as err:
        kd.parse_dra_checkpoint(json.dumps(doc), "/var/lib/kubelet/dra_manager_state")
    assert needle in str(err.value) and "dra_manager_state" in str(err.value)


def test_dra_device_without_name_is_refused():
    body = json.dumps(
        {
            "kind": "DRACheckpoint",
            "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1",
            "Entries": [{"ClaimUID": "u", "DriverState": {"d": {"Devices": [{"PoolName": "p"}]}}}],
        }
    )
    with pytest.raises(ParseError):
        kd.parse_dra_checkpoint(json.dumps({"Data": body, "Checksum": zlib.crc32(body.encode())}))


# --- the Allocate answer (protobuf) -------------------------------------------------------------


def _varint(n):
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out += bytes([low | 0x80])
        else:
            return out + bytes([low])


def _ld(number, payload):
    payload = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _b64(raw):
    return base64.b64encode(raw).decode()


def test_alloc_response_fields():
    raw = (
        _ld(1, _ld(1, "ASCEND_VISIBLE_DEVICES") + _ld(2, "6,7"))
        + _ld(2, _ld(1, "/etc/enpu/vcann-rt") + _ld(2, "/etc/enpu/ns.job/5_0") + _varint(3 << 3) + _varint(1))
        + _ld(3, _ld(1, "/dev/davinci5") + _ld(2, "/dev/davinci5") + _ld(3, "rw"))
        + _ld(4, _ld(1, "a") + _ld(2, "b"))
        + _ld(5, _ld(1, "huawei.com/npu=npu-5"))
        + _varint(9 << 3 | 5)
        + b"\0\0\0\0"
    )  # an unknown fixed32 field: skipped
    got = kd.parse_alloc_response(_b64(raw))
    assert got == {
        "envs": {"ASCEND_VISIBLE_DEVICES": "6,7"},
        "mounts": [{"container_path": "/etc/enpu/vcann-rt", "host_path": "/etc/enpu/ns.job/5_0", "read_only": True}],
        "devices": [{"container_path": "/dev/davinci5", "host_path": "/dev/davinci5", "permissions": "rw"}],
        "annotations": {"a": "b"},
        "cdi_devices": ["huawei.com/npu=npu-5"],
    }


@pytest.mark.parametrize(
    "text, needle",
    [
        ("not base64!", "not base64"),
        (_b64(_ld(1, "abc")[:-1]), "runs past the end"),
        (_b64(b"\x80"), "truncated protobuf varint"),
        (_b64(b"\x0b"), "wire type 3"),
        (_b64(_ld(1, _ld(1, b"\xff\xfe"))), "not UTF-8"),
        (_b64(b"\xff" * 11), "longer than 64 bits"),
    ],
)
def test_alloc_response_bad_bytes(text, needle):
    with pytest.raises(ParseError) as err:
        kd.parse_alloc_response(text, "kubelet_internal_checkpoint PodDeviceEntries[0] AllocResp")
    assert needle in str(err.value) and "PodDeviceEntries[0]" in str(err.value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_alloc_response_never_crashes(raw):
    try:
        kd.parse_alloc_response(_b64(raw))
    except ParseError:
        pass


def test_device_checkpoint_keeps_an_entry_whose_answer_is_unreadable():
    doc = {
        "Data": {
            "PodDeviceEntries": [
                {
                    "PodUID": "p",
                    "ContainerName": "c",
                    "ResourceName": "huawei.com/npu",
                    "DeviceIDs": {"0": ["npu-0"]},
                    "AllocResp": _b64(b"\x80"),
                }
            ]
        },
        "Checksum": 1,
    }
    entry = kubelet.parse_device_checkpoint(json.dumps(doc))["entries"][0]
    assert entry["alloc"] is None and "truncated protobuf varint" in entry["alloc_error"]
    assert entry["devices"] == [{"numa_node": 0, "ids": ["npu-0"]}]


@pytest.mark.parametrize(
    "device_id, kind, chip, slot",
    [
        ("Ascend910-3", "chip", 3, None),
        ("npu-7", "chip", 7, None),
        ("Ascend310P-12", "chip", 12, None),
        ("Ascend910-3-57", "soft_share", 3, 57),
        ("npu-0-99", "soft_share", 0, 99),
        ("Ascend910-2c-100-5", "vnpu", 5, None),
        ("Ascend310P-4c.3cpu-101-1", "vnpu", 1, None),
    ],
)
def test_ascend_id_shapes(device_id, kind, chip, slot):
    got = kd.ascend_device_id(device_id)
    assert (got["kind"], got["chip"], got["slot"]) == (kind, chip, slot)


@pytest.mark.parametrize("device_id", ["GPU-8f3c1d2e", "Ascend910", "npu-0-100", "3", "Ascend910--3"])
def test_not_ascend_ids(device_id):
    assert kd.ascend_device_id(device_id) is None


# --- fuzz: the device records raise only ParseError ---------------------------------------------

_KEYS = [
    "ClaimUID",
    "ClaimName",
    "Namespace",
    "PodUIDs",
    "DriverState",
    "Devices",
    "DeviceName",
    "PoolName",
    "RequestNames",
    "CDIDeviceIDs",
    "CDIDevices",
    "DriverName",
    "npu.huawei.com",
    "x",
]
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4),
    max_leaves=24,
)


@settings(max_examples=400, deadline=None)
@given(_JSON, st.booleans())
def test_dra_checkpoint_fuzz_raises_only_parse_error(entries, new):
    """Any JSON in the entries, past the checksum (a valid CRC-32) to reach every field rule."""
    if new:
        data = json.dumps(
            {"kind": "DRACheckpoint", "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1", "Entries": entries}
        )
        text = json.dumps({"Data": data, "Checksum": zlib.crc32(data.encode())})
    else:
        text = json.dumps({"version": "v1", "entries": entries, "checksum": 1})
    try:
        got = kd.parse_dra_checkpoint(text)
    except ParseError:
        return
    for claim in got["claims"]:
        assert isinstance(claim["uid"], str) and all(isinstance(p, str) for p in claim["pods"])
        assert all(isinstance(d["driver"], str) for d in claim["devices"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["PodUID", "ContainerName", "ResourceName", "DeviceIDs", "AllocResp"]),
            _JSON | st.binary(max_size=24).map(_b64),
            max_size=5,
        ),
        max_size=3,
    )
)
def test_device_checkpoint_fuzz_raises_only_parse_error(entries):
    try:
        kubelet.parse_device_checkpoint(json.dumps({"Data": {"PodDeviceEntries": entries}}))
    except ParseError:
        pass
