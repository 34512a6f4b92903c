# -*- coding: utf-8 -*-
"""Hostile inputs to the modules, run in-process (npuops_testing.module_harness): planted
links, hard links and wrong-typed or out-of-range options end as ``failed`` + ``msg`` naming
the problem, never a traceback, and nothing outside the sandbox is read or written.

These were ansible-playbook runs (tests/integration/modules/test_hostile_inputs.py, which keeps
the ones that need a real module process: a tool's process group killed on timeout, and one
refusal through the whole AnsiballZ path)."""

import os
import stat

import pytest

from npuops_testing import SNAPSHOTS
from npuops_testing.module_harness import call_module
from npuops_testing.sandbox import irq_sandbox

SECRET = "outside the sandbox\n"


def _message(result):
    assert result.get("failed"), result
    assert "exception" not in result and "Traceback" not in str(result), result
    return result["msg"]


def _outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text(SECRET)
    os.chmod(str(outside / "victim"), 0o600)
    return outside


def _untouched(outside):
    assert sorted(os.listdir(str(outside))) == ["victim"]
    assert (outside / "victim").read_text() == SECRET
    assert stat.S_IMODE(os.stat(str(outside / "victim")).st_mode) == 0o600


def test_save_snapshot_replaces_planted_links_and_reports_changed(tmp_path):
    """Planted links in the destination are replaced, the victim is neither read nor written,
    and a written snapshot is a change."""
    outside = _outside(tmp_path)
    dest = tmp_path / "saved"
    (dest / "fs" / "proc" / "self").mkdir(parents=True)
    os.symlink(str(outside / "victim"), str(dest / "fs" / "proc" / "self" / "status"))
    os.symlink(str(outside / "victim"), str(dest / "snapshot.yml"))
    snap = os.path.join(SNAPSHOTS, "a2-910b3x8")
    refused = call_module("npu_topology_facts", {"snapshot": snap, "save_snapshot": str(dest)})
    assert "exists and is not empty" in _message(refused)
    res = call_module("npu_topology_facts", {"snapshot": snap, "save_snapshot": str(dest), "overwrite_snapshot": True})
    assert res["changed"] is True and not res.get("failed"), res
    _untouched(outside)
    assert not os.path.islink(str(dest / "snapshot.yml"))
    names = [n for dummy, dirs, files in os.walk(str(dest)) for n in dirs + files]
    assert names and not [n for n in names if ":" in n]


def test_snapshot_linked_outside_is_a_message(tmp_path):
    outside = _outside(tmp_path)
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "snapshot.yml").write_text("schema: 1\ncommands:\n  lscpu: {rc: 0, stdout_file: cmd/lscpu.txt}\n")
    (snap / "cmd").mkdir()
    os.symlink(str(outside / "victim"), str(snap / "cmd" / "lscpu.txt"))
    msg = _message(call_module("npu_topology_facts", {"snapshot": str(snap)}))
    assert "symlink" in msg and "outside the sandbox" not in msg


def test_plan_on_wrong_typed_topology_names_the_field():
    msg = _message(
        call_module("npu_cpu_plan", {"topology": {"vendor": "ascend", "npus": [{"logic_id": 0, "numa_node": "x"}]}})
    )
    assert "npus[0].numa_node: expected an integer" in msg


WRAPPER_REFUSALS = [
    ({"name": "x" * 240}, "name 'xxx"),
    ({"name": "a@"}, "no '@'"),
    (
        {"plan": {"instances": [1], "npus": {"0": {"pool": "0-3", "main": "0-3"}}}},
        "plan: instances: expected a mapping",
    ),
    ({"plan": {"npus": {"0": {"pool": "0-4294967295", "main": "0-3"}}}}, "CPU id 4294967295"),
    ({"command": ["vllm", "--additional-config", "[" * 100000]}, "not valid JSON"),
    ({"env": {"SHELLOPTS": "x"}}, "bash readonly variable"),
    ({"env": {"GROUPS": "x"}}, "bash special variable"),
    ({"dest": "/opt/a$b"}, "dest:"),
]


@pytest.mark.parametrize("args, words", WRAPPER_REFUSALS, ids=[w for dummy, w in WRAPPER_REFUSALS])
def test_launch_wrapper_refusals(tmp_path, args, words):
    """Each used to be a traceback or a unit systemd rejects; nothing is written."""
    base = {
        "name": "svc",
        "plan": {"npus": {"0": {"pool": "0-3", "main": "0-3"}}},
        "command": ["vllm", "serve"],
        "host_root": str(tmp_path),
    }
    base.update(args)
    assert words in _message(call_module("vllm_launch_wrapper", base))
    assert not os.listdir(str(tmp_path))


def test_share_dirs_modes(tmp_path):
    """7777777 is refused; a sticky world-writable mode is idempotent."""
    (tmp_path / "etc").mkdir()
    base = {"root": "/share_device", "chips": [0, 1], "host_root": str(tmp_path), "group": "root"}
    assert "not an octal mode" in _message(call_module("npu_share_dirs", dict(base, mode="7777777")))
    first = call_module("npu_share_dirs", dict(base, mode="1777"))
    again = call_module("npu_share_dirs", dict(base, mode="1777"))
    assert first["changed"] and not again["changed"], (first, again)


def test_irq_affinity_refuses_a_hard_link(tmp_path):
    """smp_affinity_list hard-linked to a file outside: refused, nothing is written."""
    outside = _outside(tmp_path)
    root = tmp_path / "root"
    bus = "0000:c1:00.0"
    irq_sandbox(
        root,
        "           CPU0 CPU1\n 100: 1 0 ITS-MSI 1 Edge sq_send_trigger_irq\n 102: 1 0 ITS-MSI 2 Edge cq_update_irq\n",
        {bus: [100, 102]},
        "0-1",
    )
    root = str(root)
    target = os.path.join(root, "proc/irq/100/smp_affinity_list")
    os.unlink(target)
    os.link(str(outside / "victim"), target)
    plan = {"mode": "topo_affinity", "device_type": "A2", "npus": {"0": {"pool": "0-1", "irq": "0-1", "main": "1"}}}
    topo = {"npus": [{"logic_id": 0, "bus_id": bus}]}
    msg = _message(
        call_module("npu_irq_affinity", {"plan": plan, "topology": topo, "irqbalance": "ignore", "host_root": root})
    )
    assert "hard links" in msg
    assert (outside / "victim").read_text() == SECRET
