# -*- coding: utf-8 -*-
"""The binder keeps no copy of a collection rule: it calls the collection's own (cpulist,
bus ids, the npu-smi parsers, the command runner, the atomic and in-place writers, the vendor
table), and the zipapp ships those very files byte for byte. A bound changed in one place
changes the binder."""

import glob
import io
import os
import subprocess
import sys
import zipfile

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.host import command, paths
from ansible_collections.npuops.fleet.plugins.module_utils.parse import npu_smi, pci
from ansible_collections.npuops.fleet.plugins.module_utils.render import binder_app
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import rules, smi
from npuops_testing import fixture_text
from npuops_testing import REPO
from npuops_testing.binder import BINDER_APP, read_module

# every real npu-smi capture: `npu-smi info` tables and `npu-smi info -m` maps
_REAL = os.path.join(REPO, "tests", "fixtures", "real")
INFO_TABLES = sorted(
    os.path.relpath(p, _REAL)
    for pattern in ("*npu-smi-info_*", "*npu-smi-info.txt")
    for p in glob.glob(os.path.join(_REAL, "*", pattern))
)
MAPS = sorted(os.path.relpath(p, _REAL) for p in glob.glob(os.path.join(_REAL, "*", "*npu-smi-info-m.txt")))


def test_the_real_captures_are_all_here():
    assert len(INFO_TABLES) == 7 and len(MAPS) == 2


def test_the_binder_s_rules_are_the_collection_s():
    assert smi.parse_gpu_bus_ids("0, 00000000:2A:00.0\n") == {pci.normalise_bus_id("00000000:2A:00.0"): 0}
    assert rules.format_cpulist is cpulist.format
    # the runner, the parsers and the writers are imported where they are used (a reconcile
    # pass that runs no tool imports no subprocess): the closure finds them there
    needed = binder_app.closure(read_module)
    for module in (npu_smi, command, paths, pci, cpulist):
        assert module.__name__ in needed


def test_the_cpu_id_bound_is_cpulist_s():
    top = cpulist.MAX_CPUS - 1
    assert rules.parse_cpulist(str(top)) == [top]
    assert rules.parse_cpulist(top) == [top]
    for text in (str(top + 1), top + 1, "0-%d" % (top + 1)):
        with pytest.raises(rules.BindError, match="beyond the kernel's limit \\(%d\\)" % top):
            rules.parse_cpulist(text, "NPU0 main")


def test_a_bound_changed_in_cpulist_changes_the_binder(monkeypatch):
    """The mutation the issue names (MAX_CPU 8191 -> 1023), made in cpus/cpulist: the binder
    follows, since there is no second bound."""
    assert rules.parse_cpulist("2000") == [2000]
    monkeypatch.setattr(cpulist, "MAX_CPUS", 1024)
    with pytest.raises(rules.BindError, match="beyond the kernel's limit \\(1023\\)"):
        rules.parse_cpulist("2000")


def test_the_zipapp_ships_the_collection_s_files_byte_for_byte():
    archive = zipfile.ZipFile(io.BytesIO(open(BINDER_APP, "rb").read().split(b"\n", 1)[1]))
    modules = binder_app.closure(read_module)
    for name in modules:
        path = name.replace(".", "/") + ".py"
        assert archive.read(path) == read_module(name), path
    assert "ansible_collections/npuops/fleet/plugins/module_utils/cpus/cpulist.py" in archive.namelist()


def test_the_zipapp_s_bound_is_the_checkout_s(tmp_path):
    """The installed binder refuses the first CPU id past cpus/cpulist.MAX_CPUS (exit 1, the
    collection's message), and takes the last one."""
    import json
    from npuops_testing.binder import PLAN

    for cpu, code in ((cpulist.MAX_CPUS - 1, None), (cpulist.MAX_CPUS, 1)):
        plan = json.loads(json.dumps(PLAN))
        plan["npus"]["0"]["main"] = str(cpu)
        path = tmp_path / ("plan%d.json" % cpu)
        path.write_text(json.dumps(plan))
        proc = subprocess.run(
            [
                sys.executable,
                BINDER_APP,
                "--json",
                "--plan",
                str(path),
                "--once",
                "--check",
                "--no-migrate",
                "--pid",
                "1",
                "--npu",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=60,
            check=False,
        )
        failed = json.loads(proc.stdout).get("failed") or ""
        if code == 1:
            assert proc.returncode == 1 and "beyond the kernel's limit (%d)" % (cpu - 1) in failed
        else:
            assert "beyond the kernel's limit" not in failed, failed


@pytest.mark.parametrize("rel", INFO_TABLES)
def test_every_real_npu_smi_table_reads_as_the_collection_reads_it(rel):
    text = fixture_text(rel)
    expected = [
        (p["npu_id"], p["chip_id"], p["pid"], p["memory_mb"] or 0) for p in npu_smi.parse_info(text)["processes"]
    ]
    assert smi.parse_npu_processes(text) == expected
    # and every process row of the table is one of them (pid column read back by hand): the
    # first cell holds "NPU Chip" (910B, A3) or the NPU ID alone (950's own column)
    pids = set(
        int(line.split("|")[2])
        for line in text.splitlines()
        if line.startswith("| ")
        and line.count("|") >= 4
        and line.split("|")[2].strip().isdigit()
        and len(line.split("|")[1].split()) in (1, 2)
        and line.split("|")[1].split()[0].isdigit()
    )
    assert set(row[2] for row in expected) == pids


@pytest.mark.parametrize("rel", MAPS)
def test_every_real_npu_smi_map_reads_as_the_collection_reads_it(rel):
    text = fixture_text(rel)
    raw = npu_smi.parse_map(text)["map"]
    assert smi.parse_npu_map(text) == dict(
        (int(n), dict((int(c), int(l)) for c, l in chips.items())) for n, chips in raw.items()
    )
    assert len(smi.parse_npu_map(text)) == 8
