# -*- coding: utf-8 -*-
"""npu_topology_facts through real ansible-playbook runs."""

import json
import os

import pytest

from npuops_testing import SNAPSHOTS
from npuops_testing.runner import run_module, run_playbook
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

pytestmark = pytest.mark.slow

HOSTS = sorted(d for d in os.listdir(SNAPSHOTS) if os.path.isdir(os.path.join(SNAPSHOTS, d)))


def test_every_snapshot_through_ansible_in_one_play(tmp_path):
    # One playbook looping over every snapshot (one ansible-playbook start, not eleven).
    out = tmp_path / "out.json"
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "connection": "local",
            "tasks": [
                {
                    "npuops.fleet.npu_topology_facts": {"snapshot": os.path.join(SNAPSHOTS, "{{ item }}")},
                    "loop": HOSTS,
                    "register": "r",
                },
                {"ansible.builtin.copy": {"content": "{{ r.results | to_json }}", "dest": str(out)}},
            ],
        }
    ]
    pb = tmp_path / "play.yml"
    pb.write_text(json.dumps(play))
    proc = run_playbook(str(pb), inventory="localhost,", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout
    results = json.loads(out.read_text())
    assert [r["item"] for r in results] == HOSTS
    for host, res in zip(HOSTS, results):
        assert res["changed"] is False and not res.get("failed")
        direct = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))
        assert res["ansible_facts"]["npu_topology"] == json.loads(json.dumps(direct)), host


def test_check_mode_and_save_then_replay(tmp_path):
    saved = tmp_path / "rec"
    checked = run_module(
        "npu_topology_facts", {"snapshot": os.path.join(SNAPSHOTS, "a3-16die"), "save_snapshot": str(saved)}, check=True
    )
    # a snapshot written is a change; check mode says it would be, writes nothing
    assert checked["changed"] is True and not saved.exists()
    assert checked["ansible_facts"]["npu_topology"]["device_type"] == "A3"
    first = run_module("npu_topology_facts", {"save_snapshot": str(saved), "timeout": 20})
    assert first["changed"] is True and first["snapshot_saved"] == str(saved)
    assert (saved / "snapshot.yml").is_file()
    again = run_module("npu_topology_facts", {"snapshot": str(saved)})
    assert again["ansible_facts"]["npu_topology"] == first["ansible_facts"]["npu_topology"]


# one failure through ansible-playbook; every bad input, in-process:
# tests/unit/plugins/modules/test_module_refusals.py
@pytest.mark.parametrize(
    "setup, args, words",
    [
        ("schema: 7\n", {}, "unsupported schema 7"),
    ],
)
def test_failures_are_clear_messages(tmp_path, setup, args, words):
    if setup is not None:
        (tmp_path / "snapshot.yml").write_text(setup)
        args = dict(args, snapshot=str(tmp_path))
    res = run_module("npu_topology_facts", args)
    assert res["failed"] is True and words in res["msg"]
    assert "Traceback" not in json.dumps(res)
