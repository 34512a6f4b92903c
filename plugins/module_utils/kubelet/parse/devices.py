# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the kubelet records of the devices it hands out, beside ``parse_device_checkpoint``
(text in, plain data out, ``ParseError`` only).

- ``parse_alloc_response``: a device checkpoint entry's ``AllocResp`` - the device plugin's
  ``ContainerAllocateResponse`` as the kubelet stored it (protobuf, base64 in the JSON;
  ``pkg/kubelet/cm/devicemanager/checkpoint/checkpoint.go`` PodDevicesEntry.AllocResp, fields
  of ``staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto``: envs 1, mounts 2,
  devices 3, annotations 4, cdi_devices 5). It is the node's own record of what a container
  really got: with MindCluster's ``-volcanoType=true`` the kubelet's device ids are inner names
  and the chips come from the pod's Volcano annotation, but the plugin's answer
  (``ASCEND_VISIBLE_DEVICES`` or ``/dev/davinci<N>``) names the chips themselves.
- ``parse_dra_checkpoint``: ``/var/lib/kubelet/dra_manager_state``, both layouts
  (``pkg/kubelet/cm/dra/state``): ``{"version": "v1", "entries": [...CDIDevices]}`` from
  1.27 to 1.31 (its checksum, FNV-32a over a Go value dump, carried, not verified), and
  ``{"Data": "<DRACheckpoint JSON>", "Checksum": n}`` from 1.32 (apiVersion
  ``checkpoint.dra.kubelet.k8s.io/v1``, DriverState per driver with PoolName/DeviceName; the
  checksum is the CRC-32 of Data, ``pkg/kubelet/cm/dra/checkpoint/checkpoint.go``, verified).
- ``ascend_device_id``: what an Ascend device plugin id names (``ASCEND_ID_SHAPES``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import json
import re
import zlib

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset

MAX_FIELDS = 4096  # protobuf fields in one Allocate response
MAX_CLAIMS = 100000  # claims in one DRA checkpoint
DRA_API_VERSION = "checkpoint.dra.kubelet.k8s.io/v1"

# id shape -> what it names; MindCluster ascend-device-plugin (Ascend/mind-cluster 22bb3d98):
#   chip        "<name>-<phy>"               ascendcommon.go (fmt "%s-%d", name and PhyID)
#   soft_share  "<name>-<phy>-<k>", k<100     ascendcommon.go getNPUsByShareMode, plugin.go addSoftShareDev
#   vnpu        "<name>-<Nc..>-<vdev>-<phy>"  ascendcommon.go (fmt "%s-%s-%d-%d": type, VDevID, phyID)
ASCEND_ID_SHAPES = (
    ("chip", re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9]{0,31})-(?P<chip>[0-9]{1,4})\Z")),
    (
        "soft_share",
        re.compile(
            r"^(?P<name>[A-Za-z][A-Za-z0-9]{0,31})-(?P<chip>[0-9]{1,4})"
            r"-(?P<slot>[0-9]{1,2})\Z"
        ),
    ),
    (
        "vnpu",
        re.compile(
            r"^(?P<name>[A-Za-z][A-Za-z0-9]{0,31})-(?P<vtype>[0-9]{1,3}c[0-9A-Za-z.]{0,40})"
            r"-(?P<vdev>[0-9]{1,6})-(?P<chip>[0-9]{1,4})\Z"
        ),
    ),
)


def ascend_device_id(device_id):
    """``{kind, name, chip, slot}`` of an Ascend plugin id, or None (not an Ascend shape)."""
    for kind, shape in ASCEND_ID_SHAPES:
        match = shape.match(str(device_id))
        if match:
            found = match.groupdict()
            return {
                "kind": kind,
                "name": found["name"],
                "chip": int(found["chip"]),
                "slot": int(found["slot"]) if found.get("slot") is not None else None,
            }
    return None


def _varint(buf, pos, source):
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ParseError(source, "truncated protobuf varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ParseError(source, "protobuf varint longer than 64 bits")


def _fields(buf, source):
    """``[(number, value)]`` of one protobuf message: bytes for length-delimited fields, an int
    for varints; fixed-width fields are skipped; groups (wire types 3, 4) are refused."""
    pos, out = 0, []
    while pos < len(buf):
        key, pos = _varint(buf, pos, source)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos, source)
        elif wire == 2:
            length, pos = _varint(buf, pos, source)
            if pos + length > len(buf):
                raise ParseError(source, "protobuf field %d runs past the end" % number)
            value, pos = bytes(buf[pos : pos + length]), pos + length
        elif wire in (1, 5):
            pos, value = pos + (8 if wire == 1 else 4), None
            if pos > len(buf):
                raise ParseError(source, "protobuf field %d runs past the end" % number)
        else:
            raise ParseError(
                source, "protobuf wire type %d (field %d) is not a device plugin response" % (wire, number)
            )
        out.append((number, value))
        if len(out) > MAX_FIELDS:
            raise ParseError(source, "more than %d protobuf fields" % MAX_FIELDS)
    return out


def _text(value, source):
    if not isinstance(value, bytes):
        raise ParseError(source, "expected a protobuf string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError(source, "a protobuf string that is not UTF-8")


def _message(value, names, source):
    """A sub-message's string fields by number -> name (the last one wins, as in protobuf)."""
    out = {}
    for number, item in _fields(value or b"", source):
        if number in names:
            out[names[number]] = _text(item, source) if isinstance(item, bytes) else bool(item)
    return out


def parse_alloc_response(text, source="AllocResp"):
    """base64 ``AllocResp`` -> {envs, mounts [{container_path, host_path, read_only}],
    devices [{container_path, host_path, permissions}], annotations, cdi_devices [name]}."""
    if not isinstance(text, str):
        raise ParseError(source, "AllocResp must be a base64 string")
    try:
        buf = bytearray(base64.b64decode(text.encode("ascii"), validate=True))
    except (binascii.Error, ValueError, UnicodeEncodeError) as err:
        raise ParseError(source, "AllocResp is not base64: %s" % err)
    out = {"envs": {}, "mounts": [], "devices": [], "annotations": {}, "cdi_devices": []}
    for number, value in _fields(buf, source):
        if not isinstance(value, bytes):
            continue
        if number in (1, 4):
            pair = _message(value, {1: "key", 2: "value"}, source)
            out["envs" if number == 1 else "annotations"][pair.get("key", "")] = pair.get("value", "")
        elif number == 2:
            mount = _message(value, {1: "container_path", 2: "host_path", 3: "read_only"}, source)
            out["mounts"].append(
                {
                    "container_path": mount.get("container_path", ""),
                    "host_path": mount.get("host_path", ""),
                    "read_only": bool(mount.get("read_only")),
                }
            )
        elif number == 3:
            spec = _message(value, {1: "container_path", 2: "host_path", 3: "permissions"}, source)
            out["devices"].append(dict((k, spec.get(k, "")) for k in ("container_path", "host_path", "permissions")))
        elif number == 5:
            out["cdi_devices"].append(_message(value, {1: "name"}, source).get("name", ""))
    return out


def load_json(text, source):
    """JSON text of a kubelet file -> data, depth-checked; ParseError naming ``source``."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ParseError(source, "not JSON: %s" % err)
    try:
        return yaml_subset.check_depth(value, source)
    except SnapshotError as err:
        raise ParseError(source, str(err))


def _field(doc, name):
    """Go's JSON decoder matches keys case-insensitively."""
    for key in doc:
        if isinstance(key, str) and key.lower() == name.lower():
            return doc[key]
    return None


def _strings(value, source, what):
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParseError(source, "%s must be a list of strings" % what)
    return list(value)


def _pods(value, source):
    """PodUIDs: a Go set, serialised as {uid: {}}."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise ParseError(source, "PodUIDs must be an object (a set of pod UIDs)")
    return sorted(str(uid) for uid in value)


def _claim(entry, source, new):
    if not isinstance(entry, dict):
        raise ParseError(source, "must be an object")
    uid = _field(entry, "ClaimUID")
    if not isinstance(uid, str) or not uid:
        raise ParseError(source, "ClaimUID missing")
    devices = []
    if new:
        drivers = _field(entry, "DriverState") or {}
        if not isinstance(drivers, dict):
            raise ParseError(source, "DriverState must be an object")
        for driver in sorted(drivers):
            state = drivers[driver] if isinstance(drivers[driver], dict) else {}
            listed = _field(state, "Devices") or []
            if not isinstance(listed, list):
                raise ParseError(source, "DriverState[%s].Devices must be a list" % driver)
            for device in listed:
                if not isinstance(device, dict) or not isinstance(_field(device, "DeviceName"), str):
                    raise ParseError(source, "DriverState[%s]: a device without DeviceName" % driver)
                devices.append(
                    {
                        "driver": str(driver),
                        "pool": str(_field(device, "PoolName") or ""),
                        "device": _field(device, "DeviceName"),
                        "requests": _strings(_field(device, "RequestNames"), source, "RequestNames"),
                        "cdi": _strings(_field(device, "CDIDeviceIDs"), source, "CDIDeviceIDs"),
                    }
                )
    else:
        cdi = _field(entry, "CDIDevices") or {}
        if not isinstance(cdi, dict):
            raise ParseError(source, "CDIDevices must be an object")
        names = sorted(cdi) or ([_field(entry, "DriverName")] if _field(entry, "DriverName") else [])
        for driver in names:
            devices.append(
                {
                    "driver": str(driver),
                    "pool": None,
                    "device": None,
                    "requests": [],
                    "cdi": _strings(cdi.get(driver), source, "CDIDevices[%s]" % driver),
                }
            )
    return {
        "uid": uid,
        "name": str(_field(entry, "ClaimName") or ""),
        "namespace": str(_field(entry, "Namespace") or ""),
        "pods": _pods(_field(entry, "PodUIDs"), source),
        "devices": devices,
    }


def parse_dra_checkpoint(text, source="dra_manager_state"):
    """-> {format, claims [{uid, name, namespace, pods, devices [{driver, pool, device,
    requests, cdi}]}], checksum}; ``format`` is ``v1`` (1.27-1.31: no device names, CDI ids
    only) or ``checkpoint.dra.kubelet.k8s.io/v1`` (1.32 on, its CRC-32 verified)."""
    doc = load_json(text, source)
    if not isinstance(doc, dict):
        raise ParseError(source, "must be a JSON object")
    data, new = _field(doc, "Data"), False
    if data is not None:
        if not isinstance(data, str):
            raise ParseError(source, "Data must be a JSON string")
        checksum = _field(doc, "Checksum")
        if (
            isinstance(checksum, bool)
            or not isinstance(checksum, int)
            or checksum != zlib.crc32(data.encode("utf-8")) & 0xFFFFFFFF
        ):
            raise ParseError(
                source,
                "checksum %r is not the CRC-32 of Data: a corrupt checkpoint, "
                "which the kubelet refuses too" % (checksum,),
            )
        body = load_json(data, source + " Data")
        if not isinstance(body, dict):
            raise ParseError(source, "Data must hold a JSON object")
        api = _field(body, "apiVersion")
        if api != DRA_API_VERSION or _field(body, "kind") != "DRACheckpoint":
            raise ParseError(
                source,
                "Data is %r/%r, not DRACheckpoint %s (a newer kubelet?)" % (_field(body, "kind"), api, DRA_API_VERSION),
            )
        entries, fmt, new = _field(body, "Entries"), DRA_API_VERSION, True
    else:
        version = _field(doc, "version")
        if version != "v1":
            raise ParseError(source, "neither Data nor version v1 (version %r)" % (version,))
        entries, fmt = _field(doc, "entries"), "v1"
    entries = [] if entries is None else entries
    if not isinstance(entries, list):
        raise ParseError(source, "the checkpoint's entries must be a list")
    if len(entries) > MAX_CLAIMS:
        raise ParseError(source, "more than %d claims" % MAX_CLAIMS)
    claims = [_claim(entry, "%s entries[%d]" % (source, index), new) for index, entry in enumerate(entries)]
    return {"format": fmt, "claims": claims, "checksum": _field(doc, "Checksum")}
