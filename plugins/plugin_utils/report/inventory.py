# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's inventory: per host the driver, firmware and toolkit versions the facts hold
(``model/inventory``) and one row per device (model, health, memory, driver, firmware), and
their Markdown table per host shape (the page's: ``templates/sections.html.j2``, from
``COLUMNS``, ``cells`` and ``versions_text``). A health no tool reported is ``unknown``: never healthy.
Controller side, pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import as_dict, as_list, int_or_none

UNKNOWN = "unknown"
# the host-wide versions, in the order the pages show them: (key, label)
VERSIONS = (
    ("npu_driver", "NPU driver"),
    ("npu_firmware", "NPU firmware"),
    ("cann", "CANN"),
    ("nvidia_driver", "NVIDIA driver"),
    ("amd_driver", "amdgpu driver"),
)
COLUMNS = ("device", "model", "health", "memory MB", "driver", "firmware / VBIOS", "bus id", "NUMA node")


def _text(value, limit=100):
    return None if value is None or isinstance(value, (dict, list)) else str(value)[:limit]


def health_label(health):
    """What the pages show for a device's health: the tool's word, or ``unknown``."""
    text = _text(health, 40)
    return text.strip() if text and text.strip() else UNKNOWN


def device_rows(facts):
    """One row per NPU (logic id order) or GPU (index order) of the facts."""
    rows = []
    for npu in as_list(facts.get("npus")):
        if not isinstance(npu, dict):
            continue
        rows.append(
            OrderedDict(
                [
                    ("kind", "npu"),
                    ("id", int_or_none(npu.get("logic_id"))),
                    (
                        "label",
                        "NPU %s (card %s chip %s)" % (npu.get("logic_id"), npu.get("npu_id"), npu.get("chip_id")),
                    ),
                    ("model", _text(npu.get("name"))),
                    ("health", health_label(npu.get("health"))),
                    ("memory_mb", int_or_none(npu.get("hbm_total_mb"))),
                    ("driver", _text(npu.get("driver"))),
                    ("firmware", _text(npu.get("firmware"))),
                    ("bus_id", _text(npu.get("bus_id"))),
                    ("numa_node", int_or_none(npu.get("numa_node"))),
                ]
            )
        )
    if rows:
        return rows
    for gpu in as_list(facts.get("gpus")):
        if not isinstance(gpu, dict):
            continue
        rows.append(
            OrderedDict(
                [
                    ("kind", "gpu"),
                    ("id", int_or_none(gpu.get("index"))),
                    ("label", "GPU %s" % gpu.get("index")),
                    ("model", _text(gpu.get("model"))),
                    ("health", health_label(gpu.get("health"))),
                    ("memory_mb", int_or_none(gpu.get("memory_mb"))),
                    ("driver", _text(gpu.get("driver"))),
                    ("firmware", _text(gpu.get("vbios"))),
                    ("bus_id", _text(gpu.get("bus_id"))),
                    ("numa_node", int_or_none(gpu.get("numa_node"))),
                ]
            )
        )
    return rows


def host_inventory(facts):
    """``{versions: {key: text|None}, devices: [row]}`` of one host's facts."""
    versions = as_dict(facts.get("versions"))
    return OrderedDict(
        [
            ("versions", OrderedDict((key, _text(versions.get(key))) for key, _label in VERSIONS)),
            ("devices", device_rows(facts)),
        ]
    )


# the host-wide versions each vendor's devices use
_BY_VENDOR = {"ascend": ("npu_driver", "npu_firmware", "cann"), "nvidia": ("nvidia_driver",), "amd": ("amd_driver",)}


def versions_text(inventory, vendor):
    """``NPU driver 23.0.7; NPU firmware unknown; CANN unknown``: the versions of the host's
    vendor (``unknown`` where the facts have none)."""
    wanted = _BY_VENDOR.get(vendor, ())
    return (
        "; ".join(
            "%s %s" % (label, inventory["versions"].get(key) or UNKNOWN) for key, label in VERSIONS if key in wanted
        )
        or "no accelerator"
    )


def cells(row):
    """The table cells of one device row (``COLUMNS`` order)."""
    return [
        row["label"],
        row["model"] or UNKNOWN,
        row["health"],
        row["memory_mb"] if row["memory_mb"] is not None else UNKNOWN,
        row["driver"] or UNKNOWN,
        row["firmware"] or UNKNOWN,
        row["bus_id"] or "-",
        row["numa_node"] if row["numa_node"] is not None else "-",
    ]


def markdown(shapes, md_table, hosts_cell, md):
    """``## Devices per shape``: each shape's versions and its device table."""
    out = [
        "",
        "## Devices per shape",
        "",
        "Model, health, memory, driver and firmware of every device, as the host's tools "
        "report them; `unknown` where no tool answered (see the host's facts warnings).",
        "",
    ]
    for shape, host in shapes:
        inventory = host.get("inventory") or {"devices": [], "versions": {}}
        if not inventory["devices"]:
            continue
        out += ["### " + md(hosts_cell(shape)), "", md(versions_text(inventory, host.get("vendor"))), ""]
        out += md_table(list(COLUMNS), [cells(row) for row in inventory["devices"]])
        out.append("")
    return out
