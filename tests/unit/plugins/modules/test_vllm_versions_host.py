# -*- coding: utf-8 -*-
"""The recorded DGX A100 (tests/snapshots/dgx-a100) with a vLLM in its site-packages, end to
end in-process: the facts read which vLLM it runs (``vllm``), the plan, then the wrapper and
units in a sandbox root built from the snapshot. vLLM 0.34.0 (has --numa-bind and binds NUMA
by itself) gets --no-numa-bind; vLLM 0.19.1 (before --numa-bind: it exits on an unknown
argument) never gets it; an unknown vLLM gets neither the flag nor silence. The METADATA
texts are the real headers of those releases' sdists (tests/fixtures/vllm/)."""

import json
import os
import shutil

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot
from npuops_testing import SNAPSHOTS
from npuops_testing.module_harness import call_module

SNAP = os.path.join(SNAPSHOTS, "dgx-a100")
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm")
SITE = "usr/local/lib/python3.12/dist-packages"
OLD_ENV = "opt/vllm-0.19/lib/python3.12/site-packages"
INSTANCES = [{"name": "all", "npus": list(range(8))}]


def _fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        text = handle.read()
    return text.split("\n", 1)[1] if text.startswith("# Source:") else text


def _put(base, rel, text):
    path = os.path.join(base, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _host(tmp, name, site_version):
    """A copy of the recorded snapshot whose host site-packages hold vLLM ``site_version``
    (None: none), and a /opt/vllm-0.19 venv with vLLM 0.19.1; facts, plan, sandbox root."""
    snap = str(tmp / name)
    shutil.copytree(SNAP, snap)
    if site_version:
        _put(
            snap, "fs/%s/vllm-%s.dist-info/METADATA" % (SITE, site_version), _fixture("METADATA-%s.txt" % site_version)
        )
    _put(snap, "fs/%s/vllm-0.19.1.dist-info/METADATA" % OLD_ENV, _fixture("METADATA-0.19.1.txt"))
    root = tmp / (name + "-root")
    snapshot.copy_host_tree(snap, str(root))
    facts = call_module("npu_topology_facts", {"snapshot": snap})["ansible_facts"]["npu_topology"]
    plan = call_module("npu_cpu_plan", {"topology": facts, "instances": INSTANCES})
    assert not plan.get("failed"), plan.get("msg")
    return {"root": root, "facts": facts, "plan": plan["plan"]}


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vllm-hosts")
    return {"0.34": _host(tmp, "v034", "0.34.0"), "none": _host(tmp, "nov", None)}


def _wrap(host, command, name="all", **extra):
    args = {
        "name": name,
        "plan": host["plan"],
        "command": command,
        "host_root": str(host["root"]),
        "allow_foreign_plan": True,
    }
    args.update(extra)
    result = call_module("vllm_launch_wrapper", args)
    assert not result.get("failed"), result.get("msg")
    base = host["root"] / "usr/local/lib/npuops"
    return (
        result,
        (base / (name + "-launch")).read_text(),
        (host["root"] / ("etc/systemd/system/vllm-%s.service" % name)).read_text(),
    )


def test_facts_record_the_hosts_vllm(hosts):
    assert hosts["0.34"]["facts"]["vllm"] == {
        "version": "0.34.0",
        "source": "/%s/vllm-0.34.0.dist-info/METADATA" % SITE,
    }
    assert hosts["none"]["facts"]["vllm"] is None
    assert hosts["0.34"]["facts"]["vllm_ascend"] is None  # a GPU host: no NPU worker to read


def test_vllm_034_gets_no_numa_bind(hosts):
    result, text, unit = _wrap(hosts["0.34"], ["vllm", "serve", "/models/m", "-tp", "8"])
    assert result["vllm"] == {
        "version": "0.34.0",
        "numa_bind": "off (--no-numa-bind)",
        "source": "/%s/vllm-0.34.0.dist-info/METADATA" % SITE,
    }
    exec_line = [line for line in text.splitlines() if line.startswith("exec ")][0]
    assert exec_line.endswith("vllm serve /models/m -tp 8 --no-numa-bind")
    assert "# vLLM: 0.34.0 (/%s/vllm-0.34.0.dist-info/METADATA)" % SITE in text
    assert "ExecStart=" in unit and "AllowedCPUs=" in unit
    assert not [w for w in _warnings(result) if "vLLM" in w]
    # a second run changes nothing
    again = call_module(
        "vllm_launch_wrapper",
        {
            "name": "all",
            "plan": hosts["0.34"]["plan"],
            "command": ["vllm", "serve", "/models/m", "-tp", "8"],
            "host_root": str(hosts["0.34"]["root"]),
            "allow_foreign_plan": True,
        },
    )
    assert again["changed"] is False


def test_the_instances_own_venv_wins_and_an_old_vllm_gets_no_flag(hosts):
    # the command names /opt/vllm-0.19/bin/vllm: its venv holds 0.19.1, before --numa-bind
    result, text, _unit = _wrap(hosts["0.34"], ["/opt/vllm-0.19/bin/vllm", "serve", "/models/m"], name="old")
    assert result["vllm"]["version"] == "0.19.1"
    assert result["vllm"]["source"] == "/%s/vllm-0.19.1.dist-info/METADATA" % OLD_ENV
    assert "numa-bind" not in text
    assert result["vllm"]["numa_bind"].startswith("none (vLLM before 0.20.0")


def test_unknown_vllm_gets_the_safe_form_and_a_warning(hosts, capsys):
    result, text, _unit = _wrap(hosts["none"], ["vllm", "serve", "/models/m"])
    assert result["vllm"]["version"] is None and "numa-bind" not in text
    assert result["vllm"]["numa_bind"] == "unknown (version unknown: no flag passed)"
    # (ansible-core prints a warning it has already returned once in this process instead)
    warning = [w for w in _warnings(result) + capsys.readouterr().err.splitlines() if "vLLM version unknown" in w]
    assert warning and "--no-numa-bind left out" in warning[0]
    # the instance owns every GPU and no CPU is reserved: it starts on every CPU, so a 0.34
    # would bind by itself - the warning says so
    assert "every CPU, so it would" in warning[0]
    # the user states the version: the flag follows it
    stated, text, _unit = _wrap(hosts["none"], ["vllm", "serve", "/models/m"], vllm_version="0.34.0")
    assert "--no-numa-bind" in text and stated["vllm"]["source"] == "option vllm_version"


def test_device_ids_put_the_instance_in_rank_order(hosts):
    host = hosts["0.34"]
    result, text, unit = _wrap(host, ["vllm", "serve", "/models/m", "-tp", "2", "--device-ids", "6,3"])
    doc = json.loads((host["root"] / "usr/local/lib/npuops/all.plan.json").read_text())
    # rank 0 on GPU 6, rank 1 on GPU 3: the binder maps local rank r to devices[r]
    assert doc["npuops_instance"]["devices"] == [6, 3]
    assert "export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n" in text
    gpus = host["plan"]["gpus"]
    main = set()
    for gpu in ("6", "3"):
        main.update(_cpus(gpus[gpu]["pool"]))
    assert set(_cpus(result["main_cpus"])) == main
    # vLLM 0.34 does not auto-bind with --device-ids; the flag is passed all the same
    assert text.rstrip().endswith("--device-ids 6,3 --no-numa-bind")


def test_device_ids_the_plan_cannot_follow_are_refused_before_writing(hosts):
    host = hosts["0.34"]
    for bad, words in (
        (["--device-ids", "8"], "index 8 is out of range"),
        (["--device-ids=GPU-1a2b"], "only device indexes"),
        (["--device-ids", "1,1"], "lists an index twice"),
        (["--device-ids", "1", "--device_ids", "2"], "given 2 times"),
    ):
        result = call_module(
            "vllm_launch_wrapper",
            {
                "name": "refused",
                "plan": host["plan"],
                "command": ["vllm", "serve"] + bad,
                "host_root": str(host["root"]),
                "allow_foreign_plan": True,
            },
        )
        assert result.get("failed") and words in result["msg"] and "--device" in result["msg"]
        assert not (host["root"] / "usr/local/lib/npuops/refused-launch").exists()
    # a vLLM without --device-ids (0.19.1 < 0.24.0) would exit on it: refused
    result = call_module(
        "vllm_launch_wrapper",
        {
            "name": "refused",
            "plan": host["plan"],
            "command": ["/opt/vllm-0.19/bin/vllm", "serve", "--device-ids", "0"],
            "host_root": str(host["root"]),
            "allow_foreign_plan": True,
        },
    )
    assert result.get("failed") and "has no --device-ids (vLLM 0.24.0+)" in result["msg"]


def test_numa_bind_in_the_command_is_refused_under_host_binding(hosts):
    result = call_module(
        "vllm_launch_wrapper",
        {
            "name": "refused",
            "plan": hosts["0.34"]["plan"],
            "command": ["vllm", "serve", "--numa-bind"],
            "host_root": str(hosts["0.34"]["root"]),
            "allow_foreign_plan": True,
        },
    )
    assert result.get("failed") and "--numa-bind: vLLM's own NUMA binding would compete" in result["msg"]


def _warnings(result):
    """The warning texts of a module result (ansible-core 2.19 wraps each in an event)."""
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings") or []]


def _cpus(text):
    out = []
    for part in text.split(","):
        lo, _sep, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out
