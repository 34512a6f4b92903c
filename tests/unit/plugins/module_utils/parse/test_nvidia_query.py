# -*- coding: utf-8 -*-
"""parse/nvidia_query.py and its merge into the facts (gpus[].model, memory_mb, health).

The query text is in nvidia-smi's documented ``--format=csv,noheader,nounits`` form (one line per
GPU, ``, `` between fields, ``[N/A]`` for a value the GPU does not report), built for this test:
no capture of this query is in tests/fixtures yet; the bus ids are the recorded dgx-a100 ones.
"""

import os
import shutil

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.parse import nvidia_query
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
from npuops_testing import SNAPSHOTS

BUSES = ["07", "0F", "47", "4E", "87", "90", "B7", "BD"]
QUERY = "".join("%d, NVIDIA A100-SXM4-40GB, 00000000:%s:00.0, 40960, %s\n"
                % (i, bus, "2" if i == 5 else "0") for i, bus in enumerate(BUSES))


def test_parse_model_memory_and_health():
    found = nvidia_query.parse(QUERY)
    assert sorted(found) == list(range(8))
    assert found[0] == {"model": "NVIDIA A100-SXM4-40GB", "bus_id": "0000:07:00.0",
                        "memory_mb": 40960, "ecc_uncorrected": 0, "health": "OK"}
    assert found[5]["health"] == "Warning"


def test_not_reported_values_are_none():
    found = nvidia_query.parse("0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559, [N/A]\n"
                               "1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, [Not Supported], [N/A]\n")
    assert found[0]["health"] is None and found[0]["memory_mb"] == 81559
    assert found[1]["memory_mb"] is None


@pytest.mark.parametrize("text", ["0, A100\n", "x, A100, 0000:07:00.0, 1, 0\n", "garbage"])
def test_malformed_lines_name_the_source(text):
    with pytest.raises(ParseError, match="nvidia-smi --query-gpu=index,name,pci.bus_id"):
        nvidia_query.parse(text)


def test_argv_is_the_documented_query():
    assert nvidia_query.ARGV == [
        "nvidia-smi", "--query-gpu=index,name,pci.bus_id,memory.total,"
        "ecc.errors.uncorrected.volatile.total", "--format=csv,noheader,nounits"]


@pytest.fixture()
def dgx_with_query(tmp_path):
    src = os.path.join(SNAPSHOTS, "dgx-a100")
    if not os.path.isdir(src):
        pytest.skip("dgx-a100 snapshot missing")
    snap = tmp_path / "dgx"
    shutil.copytree(src, str(snap))
    (snap / "cmd" / "query.txt").write_text(QUERY)
    text = (snap / "snapshot.yml").read_text()
    assert "\ncommands:\n" in text
    (snap / "snapshot.yml").write_text(text.replace(
        "\ncommands:\n", '\ncommands:\n  "%s": {rc: 0, stdout_file: cmd/query.txt}\n'
        % nvidia_query.SOURCE, 1))
    return str(snap)


def test_facts_and_audit_show_the_model_and_per_gpu_health(dgx_with_query):
    facts = topology.gather(hostio.SnapshotHostIO(dgx_with_query))
    assert [g["model"] for g in facts["gpus"]] == ["NVIDIA A100-SXM4-40GB"] * 8
    assert facts["gpus"][5]["health"] == "Warning"
    report = analysis.build_report({"dgx": {"facts": facts}})
    host = report["hosts"][0]
    assert host["device_type"] == "NVIDIA A100-SXM4-40GB"
    assert host["health"]["chips"] == 8 and host["health"]["healthy"] == 7
    problem = [p for p in report["problems"] if p["kind"] == "unhealthy_chip"][0]
    assert problem["title"] == "GPU not healthy" and "nvidia-smi -q -d ECC -i 5" in problem["fix"]


def test_an_older_snapshot_without_the_query_still_replays():
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "dgx-a100")))
    assert all(g["model"] is None for g in facts["gpus"])
    assert not [e for e in facts["errors"] if "query-gpu=index,name" in e["source"]]
