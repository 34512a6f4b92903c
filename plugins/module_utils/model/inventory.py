# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory columns of the facts: driver, firmware and toolkit versions, per device and
for the host (``versions``), and the health a device's tool did not report, said so.

Where each value comes from (one row each; ``SOURCES`` is what the docs and the report name):

- NPU driver: the ``Version:`` of ``npu-smi info``'s first table line, else the board's
  ``Software Version`` (``npu-smi info -t board -i <card>``).
- NPU firmware: the board's ``Firmware Version``, per card (each chip of a card shares it).
- CANN: ``version=`` of ``/usr/local/Ascend/ascend-toolkit/latest/<arch>-linux/
  ascend_toolkit_install.info``.
- NVIDIA driver and VBIOS: ``driver_version`` / ``vbios_version`` of ``nvidia-smi --query-gpu``.
- AMD: ``rocm-smi --showdriverversion --showvbios --showproductname`` (the amdgpu driver
  version, each GPU's VBIOS and product name).

A device whose health no tool reported keeps ``health: null`` and the host gets one warning
naming the source that did not answer; the report shows it as unknown, never as healthy.
Called by ``model/topology.gather``; reads the host only through the HostIO it is given.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.parse import ascend_toolkit, npu_smi, nvidia_query, rocm_smi

SOURCES = {
    "npu_driver": "npu-smi info (header Version), else npu-smi info -t board -i <card> (Software Version)",
    "npu_firmware": "npu-smi info -t board -i <card> (Firmware Version)",
    "cann": ascend_toolkit.TOOLKIT_DIR + "/<arch>-linux/" + ascend_toolkit.INFO_NAME,
    "nvidia_driver": nvidia_query.SOURCE + " (driver_version)",
    "amd_driver": rocm_smi.SOURCE_INVENTORY + " (Driver version)",
}
MAX_BOARD_QUERIES = 64  # cards asked for their board (a 16-chip A3 has 8)
_NOT_ANSWERED = "not run on this host, or not recorded in its snapshot"


def empty():
    return {"npu_driver": None, "npu_firmware": None, "cann": None, "nvidia_driver": None, "amd_driver": None}


def _one(values, what, warnings):
    """The one value of a host-wide version; differing values joined, with a warning."""
    found = sorted(set(v for v in values if v))
    if len(found) > 1:
        warnings.append(
            "%s differs between devices: %s (devices of one host normally share "
            "it: update them to one version)" % (what, ", ".join(found))
        )
    return ", ".join(found) or None


def boards(io, src, npu_ids, timeout, known=None):
    """``{card id: parsed board or None}`` of ``npu-smi info -t board -i <card>``, the cards
    asked concurrently (``known``: boards already read); a failure is noted in ``src``
    (a missing command is not: the snapshot did not record it, or npu-smi is absent)."""
    out = dict(known or {})
    ask = [n for n in sorted(set(npu_ids)) if n not in out][:MAX_BOARD_QUERIES]
    results = io.run_many([list(npu_smi.BOARD_ARGV) + ["-i", str(n)] for n in ask], timeout=timeout)
    for npu_id, res in zip(ask, results):
        out[npu_id] = None
        if not res.ok:
            if not res.missing:
                src.error(res.key, res.failure())
            continue
        try:
            out[npu_id] = npu_smi.parse_board(res.stdout)
        except ParseError as err:
            src.error(res.key, err.msg)
    return out


def _cann(io, src):
    """The CANN toolkit's version and the file it came from, or (None, None)."""
    base = ascend_toolkit.TOOLKIT_DIR
    for entry in sorted(io.listdir(base) or []):
        if not entry.endswith("-linux"):
            continue
        path = "%s/%s/%s" % (base, entry, ascend_toolkit.INFO_NAME)
        try:
            text = io.read_text(path, limit=64 * 1024)
        except NpuopsError as err:
            src.error(path, getattr(err, "msg", str(err)))
            continue
        if text is None:
            continue
        try:
            return ascend_toolkit.parse_install_info(text, path)["version"], path
        except ParseError as err:
            src.error(path, err.msg)
    return None, None


def ascend(io, src, npus, info_version, timeout, known_boards=None, warnings=None):
    """Fill ``firmware`` and ``driver`` of each NPU entry; the host's NPU and CANN versions."""
    warnings = [] if warnings is None else warnings
    versions = empty()
    if not npus:
        return versions
    found = boards(io, src, [n["npu_id"] for n in npus if isinstance(n.get("npu_id"), int)], timeout, known_boards)
    for npu in npus:
        fields = (found.get(npu.get("npu_id")) or {}).get("fields") or {}
        npu["firmware"] = fields.get("Firmware Version") or None
        npu["driver"] = info_version or fields.get("Software Version") or None
    versions["npu_driver"] = _one([n["driver"] for n in npus], "NPU driver version", warnings)
    versions["npu_firmware"] = _one([n["firmware"] for n in npus], "NPU firmware version", warnings)
    versions["cann"], versions["cann_source"] = _cann(io, src)
    silent = sorted(n for n, board in found.items() if not board)
    if silent:
        warnings.append(
            "NPU firmware unknown for card %s: %s gave no answer (%s); run it on the "
            "host to see the firmware"
            % (", ".join(str(n) for n in silent), npu_smi.SRC_BOARD + " -i <card>", _NOT_ANSWERED)
        )
    unknown = [str(n["logic_id"]) for n in npus if not n.get("health")]
    if unknown:
        warnings.append(
            "NPU health unknown for logic NPU %s: npu-smi info printed no Health "
            "cell for them (shown as unknown, not counted healthy)" % ", ".join(unknown)
        )
    return versions


def nvidia(gpus, models, answered, warnings):
    """Fill ``driver`` and ``vbios`` of each NVIDIA GPU entry from the query ``models``
    (``nvidia_query.parse``); the host's driver version. ``answered``: the query ran."""
    versions = empty()
    for gpu in gpus:
        found = models.get(gpu["index"]) or {}
        gpu["driver"] = found.get("driver")
        gpu["vbios"] = found.get("vbios")
    versions["nvidia_driver"] = _one([g["driver"] for g in gpus], "NVIDIA driver version", warnings)
    unknown = [str(g["index"]) for g in gpus if not g.get("health")]
    if gpus and unknown:
        why = "it printed no ECC count for them" if answered else "it gave no answer (%s)" % _NOT_ANSWERED
        warnings.append(
            "GPU health unknown for GPU %s: %s: %s; shown as unknown, not counted "
            "healthy" % (", ".join(unknown), nvidia_query.SOURCE, why)
        )
    return versions


def amd(gpus, parsed, warnings):
    """Fill ``model``, ``vbios`` and ``health`` (None: rocm-smi's health is not read) of each
    AMD GPU entry from ``rocm_smi.parse_inventory``; the host's amdgpu driver version."""
    versions = empty()
    parsed = parsed or {"driver": None, "gpus": []}
    by_index = dict((g["index"], g) for g in parsed["gpus"])
    for gpu in gpus:
        found = by_index.get(gpu["index"]) or {}
        gpu["model"] = found.get("model")
        gpu["vbios"] = found.get("vbios")
        gpu["driver"] = parsed["driver"]
        gpu.setdefault("health", None)
    versions["amd_driver"] = parsed["driver"]
    if gpus:
        if not parsed["gpus"] and parsed["driver"] is None:
            warnings.append(
                "GPU model, VBIOS and driver unknown: %s gave no answer (%s)"
                % (rocm_smi.SOURCE_INVENTORY, _NOT_ANSWERED)
            )
        warnings.append(
            "GPU health unknown for GPU %s: the collection reads no health source "
            "on AMD hosts (rocm-smi --showras is not read); shown as unknown, not "
            "counted healthy" % ", ".join(str(g["index"]) for g in gpus)
        )
    return versions


def merge(*parts):
    """One ``versions`` fact from the per-vendor ones (a value set in any wins)."""
    out = empty()
    out["cann_source"] = None
    for part in parts:
        for key, value in part.items():
            if value is not None:
                out[key] = value
    return out
