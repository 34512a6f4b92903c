# -*- coding: utf-8 -*-
"""parse/nvidia_query.py and its merge into the facts (gpus[].model, memory_mb, health).

The query text is in nvidia-smi's documented ``--format=csv,noheader,nounits`` form (one line per
GPU, ``, `` between fields, ``[N/A]`` for a value the GPU does not report), built for this test:
no capture of this exact query is public; the bus ids are the recorded dgx-a100 ones, the driver
and VBIOS an A100-SXM4's (NVIDIA/CUDALibrarySamples#104: 470.103.01, 92.00.45.00.05). The CSV
form itself is checked on two real captures of other field lists
(tests/fixtures/real/nvidia/*query-gpu*: a header, units in the header and the values).
"""

import os
import shutil

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.parse import nvidia_query
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
from npuops_testing import SNAPSHOTS, fixture_text

BUSES = ["07", "0F", "47", "4E", "87", "90", "B7", "BD"]
QUERY = "".join(
    "%d, NVIDIA A100-SXM4-40GB, 00000000:%s:00.0, 40960, %s, 470.103.01, 92.00.45.00.05\n"
    % (i, bus, "2" if i == 5 else "0")
    for i, bus in enumerate(BUSES)
)


def test_parse_model_memory_and_health():
    found = nvidia_query.parse(QUERY)
    assert sorted(found) == list(range(8))
    assert found[0] == {
        "model": "NVIDIA A100-SXM4-40GB",
        "bus_id": "0000:07:00.0",
        "memory_mb": 40960,
        "ecc_uncorrected": 0,
        "health": "OK",
        "driver": "470.103.01",
        "vbios": "92.00.45.00.05",
    }
    assert found[5]["health"] == "Warning"


def test_not_reported_values_are_none():
    found = nvidia_query.parse(
        "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559, [N/A], 550.90.07, [N/A]\n"
        "1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, [Not Supported], [N/A], 550.90.07, x\n"
    )
    assert found[0]["health"] is None and found[0]["memory_mb"] == 81559
    assert found[1]["memory_mb"] is None


@pytest.mark.parametrize("text", ["0, A100\n", "x, A100, 0000:07:00.0, 1, 0\n", "garbage"])
def test_malformed_lines_name_the_source(text):
    with pytest.raises(ParseError, match="nvidia-smi --query-gpu=index,name,pci.bus_id"):
        nvidia_query.parse(text)


def test_argv_is_the_documented_query():
    assert nvidia_query.ARGV == [
        "nvidia-smi",
        "--query-gpu=index,name,pci.bus_id,memory.total,"
        "ecc.errors.uncorrected.volatile.total,driver_version,vbios_version",
        "--format=csv,noheader,nounits",
    ]


@pytest.mark.parametrize(
    "rel, expected",
    [
        (
            "nvidia/rtx3080_nvidia-smi-query-gpu-name-driver-vbios-bus-memory_csv-header-units.txt",
            {
                "name": "NVIDIA GeForce RTX 3080",
                "driver_version": "550.90.07",
                "vbios_version": "94.02.71.40.66",
                "pci.bus_id": "00000000:05:00.0",
                "memory.total": "10240",
            },
        ),
        (
            "nvidia/rtx3060_nvidia-smi-query-gpu-12-fields_csv-header-units.txt",
            {
                "name": "NVIDIA GeForce RTX 3060",
                "driver_version": "615.71.09",
                "vbios_version": "94.06.2F.00.9A",
                "memory.total": "12288",
                "power.draw": "41.58",
                "clocks.current.sm": "1807",
                "utilization.gpu": "1",
                "temperature.gpu": "49",
            },
        ),
    ],
)
def test_real_csv_captures_read_with_their_header_and_units(rel, expected):
    rows = nvidia_query.read_csv(fixture_text(rel))
    assert len(rows) == 1
    assert dict((k, rows[0][k]) for k in expected) == expected


@pytest.fixture()
def dgx_with_query(tmp_path):
    src = os.path.join(SNAPSHOTS, "dgx-a100")
    if not os.path.isdir(src):
        pytest.fail("tests/snapshots/dgx-a100 is missing")
    snap = tmp_path / "dgx"
    shutil.copytree(src, str(snap))
    (snap / "cmd" / "query.txt").write_text(QUERY)
    text = (snap / "snapshot.yml").read_text()
    assert "\ncommands:\n" in text
    (snap / "snapshot.yml").write_text(
        text.replace(
            "\ncommands:\n", '\ncommands:\n  "%s": {rc: 0, stdout_file: cmd/query.txt}\n' % nvidia_query.SOURCE, 1
        )
    )
    return str(snap)


def test_facts_and_audit_show_the_model_and_per_gpu_health(dgx_with_query):
    facts = topology.gather(hostio.SnapshotHostIO(dgx_with_query))
    assert [g["model"] for g in facts["gpus"]] == ["NVIDIA A100-SXM4-40GB"] * 8
    assert facts["gpus"][5]["health"] == "Warning"
    assert [(g["driver"], g["vbios"]) for g in facts["gpus"]] == [("470.103.01", "92.00.45.00.05")] * 8
    assert facts["versions"]["nvidia_driver"] == "470.103.01"
    assert not [w for w in facts["warnings"] if "health unknown" in w]
    report = analysis.build_report({"dgx": {"facts": facts}})
    host = report["hosts"][0]
    assert host["device_type"] == "NVIDIA A100-SXM4-40GB"
    assert host["health"]["chips"] == 8 and host["health"]["healthy"] == 7
    assert host["health"]["unknown"] == 0
    rows = host["inventory"]["devices"]
    assert [r["health"] for r in rows] == ["OK"] * 5 + ["Warning"] + ["OK"] * 2
    assert rows[0]["model"] == "NVIDIA A100-SXM4-40GB" and rows[0]["firmware"] == "92.00.45.00.05"
    problem = [p for p in report["problems"] if p["kind"] == "unhealthy_chip"][0]
    assert problem["title"] == "GPU not healthy" and "nvidia-smi -q -d ECC -i 5" in problem["fix"]


def test_an_older_snapshot_without_the_query_still_replays():
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "dgx-a100")))
    assert all(g["model"] is None for g in facts["gpus"])
    assert not [e for e in facts["errors"] if "query-gpu=index,name" in e["source"]]


def test_unknown_gpu_health_is_unknown_never_healthy_and_names_the_source():
    """The recorded DGX has no --query-gpu capture: its 8 GPUs were counted healthy."""
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "dgx-a100")))
    warning = [w for w in facts["warnings"] if "health unknown" in w]
    assert len(warning) == 1 and nvidia_query.SOURCE in warning[0]
    report = analysis.build_report({"dgx": {"facts": facts}})
    host = report["hosts"][0]
    assert host["health"] == {"chips": 8, "healthy": 0, "unhealthy": [], "unknown": 8}
    assert report["summary"]["health_unknown"] == 8
    assert [t["healthy"] for t in report["device_types"]] == [0]
    assert set(r["health"] for r in host["inventory"]["devices"]) == {"unknown"}
    problem = [p for p in report["problems"] if p["kind"] == "health_unknown"]
    assert len(problem) == 1 and problem[0]["severity"] == "warning"
    assert "8 devices of 8" in problem[0]["evidence"] and "--query-gpu" in problem[0]["fix"]
