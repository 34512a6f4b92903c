# -*- coding: utf-8 -*-
"""model/inventory.py through topology.gather on the recorded hosts and on copies of them that
hold one more real capture: the facts' model, health, driver and firmware per device, the
host's versions, the warnings that name a source that did not answer, and the report's rows.
"""

import os
import shutil

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import inventory, topology
from ansible_collections.npuops.fleet.plugins.module_utils.parse import ascend_toolkit, rocm_smi
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as report_markdown
from npuops_testing import SNAPSHOTS, fixture_text

AMD_FIXTURE = "amd/mi300x-4gpu-sriov-vf_rocm-smi-showdriverversion-showvbios-showproductname_from-a.txt"
CANN_FIXTURE = "ascend/cann-8.3.rc2_ascend_toolkit_install.info.txt"


def _gather(path):
    return topology.gather(hostio.SnapshotHostIO(path))


def _copy(tmp_path, host):
    snap = tmp_path / host
    shutil.copytree(os.path.join(SNAPSHOTS, host), str(snap))
    return snap


def _record(snap, argv, stdout, name, rc=0):
    (snap / "cmd" / name).write_text(stdout)
    text = (snap / "snapshot.yml").read_text()
    assert "\ncommands:\n" in text
    (snap / "snapshot.yml").write_text(
        text.replace(
            "\ncommands:\n", '\ncommands:\n  "%s": {rc: %d, stdout_file: "cmd/%s"}\n' % (" ".join(argv), rc, name), 1
        )
    )


def _file(snap, path, text):
    target = snap / "fs" / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


# (host, device rows: model, health, memory, driver, firmware) of the recorded hosts: the A2,
# A3 and 910A values are the real captures' (npu-smi 23.0.7, 25.3.rc1, 23.0.5 and the 910A
# board's firmware 7.1.0.7.220: card 0 only, the one board recorded; "card0" below); DGX and
# MI300X have no capture of a model/health query.
RECORDED = [
    ("a2-910b3x8", 8, ("910B3", "OK", 65536, "23.0.7", None)),
    ("a3-16die", 16, ("Ascend910", "OK", 65536, "25.3.rc1", None)),
    ("a910a-9000", 8, ("910A", "OK", 32768, "23.0.5", "card0")),
    ("dgx-a100", 8, (None, None, None, None, None)),
    ("mi300x-8gpu", 8, (None, None, None, None, None)),
]


def _firmware(expected, card):
    if expected == "card0":  # the recorded board of card 0; the other cards' were not recorded
        return "7.1.0.7.220" if card == 0 else None
    return expected


@pytest.mark.parametrize("host, count, expected", RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_hosts_facts(host, count, expected):
    facts = _gather(os.path.join(SNAPSHOTS, host))
    devices = facts["npus"] or facts["gpus"]
    assert len(devices) == count
    for device in devices:
        model = device.get("name") if facts["npus"] else device.get("model")
        memory = device.get("hbm_total_mb") if facts["npus"] else device.get("memory_mb")
        firmware = device.get("firmware") if facts["npus"] else device.get("vbios")
        assert (model, device["health"], memory, device["driver"], firmware) == expected[:4] + (
            _firmware(expected[4], device.get("npu_id")),
        )
    if facts["npus"]:
        assert facts["versions"]["npu_driver"] == expected[3]
        assert facts["versions"]["npu_firmware"] == _firmware(expected[4], 0)
    if expected[1] is None:  # health unknown: one warning naming the source that did not answer
        warned = [w for w in facts["warnings"] if "health unknown" in w]
        assert len(warned) == 1 and ("--query-gpu" in warned[0] or "AMD" in warned[0])
    if facts["npus"] and expected[4] is None:
        assert [w for w in facts["warnings"] if "npu-smi info -t board -i <card>" in w]
    if expected[4] == "card0":
        assert [w for w in facts["warnings"] if w.startswith("NPU firmware unknown for card 1, 2, 3, 4, 5, 6, 7:")]


@pytest.mark.parametrize("host, count, expected", RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_hosts_report_rows(host, count, expected):
    report = analysis.build_report({host: {"facts": _gather(os.path.join(SNAPSHOTS, host))}})
    summary = report["hosts"][0]
    rows = summary["inventory"]["devices"]
    assert len(rows) == count
    model, health, memory, driver, firmware = expected
    for row in rows:
        card = int(row["label"].split("card ")[1].split()[0]) if "card" in row["label"] else None
        assert (row["model"], row["health"], row["memory_mb"], row["driver"], row["firmware"]) == (
            model,
            health or "unknown",
            memory,
            driver,
            _firmware(firmware, card),
        )
    assert summary["health"]["unknown"] == (count if health is None else 0)
    assert summary["health"]["healthy"] == (0 if health is None else count)
    md = report_markdown.render_markdown(report)
    assert "## Devices per shape" in md
    assert "| %s | %s | %s |" % (rows[0]["label"], model or "unknown", health or "unknown") in md
    page = report_html.render_html(report)
    assert '<section id="devices">' in page and rows[-1]["label"] in page


def test_cann_version_from_the_toolkit_install_record(tmp_path):
    snap = _copy(tmp_path, "a2-910b3x8")
    path = ascend_toolkit.TOOLKIT_DIR + "/aarch64-linux/" + ascend_toolkit.INFO_NAME
    _file(snap, path, fixture_text(CANN_FIXTURE))
    facts = _gather(str(snap))
    assert facts["versions"]["cann"] == "8.3.RC2"
    assert facts["versions"]["cann_source"] == path
    report = analysis.build_report({"a2": {"facts": facts}})
    assert "CANN 8.3.RC2" in report_markdown.render_markdown(report)


def test_a_bad_toolkit_record_is_an_error_naming_the_file(tmp_path):
    snap = _copy(tmp_path, "a2-910b3x8")
    path = ascend_toolkit.TOOLKIT_DIR + "/aarch64-linux/" + ascend_toolkit.INFO_NAME
    _file(snap, path, "package_name=Ascend-cann-toolkit\nversion=$(reboot)\n")
    facts = _gather(str(snap))
    assert facts["versions"]["cann"] is None
    assert [e for e in facts["errors"] if e["source"] == path and "not a version" in e["msg"]]


def test_amd_model_vbios_and_driver_from_rocm_smi(tmp_path):
    snap = _copy(tmp_path, "mi300x-8gpu")
    _record(snap, rocm_smi.INVENTORY_ARGV, fixture_text(AMD_FIXTURE), "rocm-inventory.txt")
    facts = _gather(str(snap))
    assert facts["versions"]["amd_driver"] == "6.7.0"
    # the capture has 4 GPUs: the other 4 keep no model (never another GPU's)
    assert [g["model"] for g in facts["gpus"]] == ["AMD Instinct MI300X OAM"] * 4 + [None] * 4
    assert [g["vbios"] for g in facts["gpus"]][:4] == ["113-MI3SRIOV-001"] * 4
    assert set(g["driver"] for g in facts["gpus"]) == {"6.7.0"}
    assert not [w for w in facts["warnings"] if "model, VBIOS and driver unknown" in w]
    assert [w for w in facts["warnings"] if "health unknown" in w]  # no AMD health source


def test_npu_firmware_per_card_and_a_difference_warned(tmp_path):
    snap = _copy(tmp_path, "a910a-9000")
    board = (snap / "cmd" / "npu-smi-info--t-board--i-0.txt").read_text()
    _record(
        snap, ["npu-smi", "info", "-t", "board", "-i", "1"], board.replace("7.1.0.7.220", "7.3.0.1.231"), "board-1.txt"
    )
    facts = _gather(str(snap))
    by_card = dict((n["npu_id"], n["firmware"]) for n in facts["npus"])
    assert by_card[0] == "7.1.0.7.220" and by_card[1] == "7.3.0.1.231"
    assert facts["versions"]["npu_firmware"] == "7.1.0.7.220, 7.3.0.1.231"
    assert [w for w in facts["warnings"] if w.startswith("NPU firmware version differs")]


def test_a_failing_board_query_is_an_error_not_a_version(tmp_path):
    snap = _copy(tmp_path, "a2-910b3x8")
    _record(snap, ["npu-smi", "info", "-t", "board", "-i", "0"], "", "board-0.txt", rc=255)
    facts = _gather(str(snap))
    assert [e for e in facts["errors"] if e["source"] == "npu-smi info -t board -i 0"]
    assert facts["npus"][0]["firmware"] is None


def test_versions_are_in_the_facts_schema():
    from ansible_collections.npuops.fleet.plugins.module_utils.model import schema

    facts = _gather(os.path.join(SNAPSHOTS, "a910a-9000"))
    schema.check_topology(facts)
    assert set(facts["versions"]) == set(inventory.merge())


def test_a_failed_source_on_a_recording_gets_a_fix_worded_for_a_recording():
    """The 910A recording's topo query answered rc 255: "run it by hand on the host" cannot be
    acted on for a recording. fleet_audit records the snapshot replayed (npuops_snapshot)."""
    snap = os.path.join(SNAPSHOTS, "a910a-9000")
    facts = _gather(snap)
    assert "recorded" not in facts  # a replay's facts stay those of the recording
    report = analysis.build_report({"a910a": {"facts": facts, "recorded": snap + "/"}})
    assert report["hosts"][0]["recorded"] == "a910a-9000"
    failed = [
        p for p in report["problems"] if p["kind"] == "facts_error" and p["evidence"].startswith("npu-smi info -t topo")
    ]
    assert len(failed) == 1
    assert failed[0]["fix"].startswith(
        "this host's facts are a recording (snapshot a910a-9000): `npu-smi info -t topo` failed when it was recorded"
    )
    assert "npuops_facts_save_snapshot_dir" in failed[0]["fix"]
    live = analysis.build_report({"a910a": {"facts": facts, "recorded": ""}})
    fix = [
        p for p in live["problems"] if p["kind"] == "facts_error" and p["evidence"].startswith("npu-smi info -t topo")
    ][0]
    assert not fix["fix"].startswith("this host's facts are a recording")
