# -*- coding: utf-8 -*-
"""Role npu_facts: gathers once, skips when the facts are known, refreshes on demand, records
a snapshot that replays to the same facts; import_role and include_role behave the same."""

import json
import os

import pytest

from npuops_testing.fleet import make_fleet, need, play
from npuops_testing.runner import run_playbook

SNAP = "a2-910b3x8"


def dump(tmp_path, key):
    return {
        "name": "Dump the facts",
        "ansible.builtin.copy": {
            "content": "{{ ansible_facts['npu_topology'] | to_json }}",
            "dest": str(tmp_path / ("%s-{{ inventory_hostname }}.json" % key)),
        },
        "changed_when": False,
    }


def gather_lines(stdout):
    """Status lines ('ok: [h]', 'skipping: [h]') of each npu_facts gather task, in order."""
    out = []
    for block in stdout.split("TASK [")[1:]:
        if block.startswith("npuops.fleet.npu_facts : Gather"):
            out.append(
                [
                    ln.split(":")[0]
                    for ln in block.splitlines()[1:]
                    if ln.startswith(("ok:", "skipping:", "changed:", "fatal:"))
                ]
            )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("how", ["import_role", "include_role"])
def test_gathers_once_refreshes_on_demand_and_records(tmp_path, how):
    need(SNAP)
    inv = make_fleet(tmp_path, {"a2": (SNAP, {})})
    role = {"name": "npuops.fleet.npu_facts"}
    record = str(tmp_path / "recorded")
    tasks = [
        {"name": "Gather", "ansible.builtin." + how: role},
        dump(tmp_path, "first"),
        {"name": "Gather again (known: skipped)", "ansible.builtin." + how: role},
        {"name": "Gather again (forced)", "ansible.builtin." + how: role, "vars": {"npuops_facts_force_refresh": True}},
        {
            "name": "Record a snapshot",
            "ansible.builtin." + how: role,
            "vars": {"npuops_facts_save_snapshot_dir": record},
        },
    ]
    proc = run_playbook(play(tmp_path, tasks), inv)
    assert proc.returncode == 0, proc.stdout
    # recording writes a snapshot: changed
    assert gather_lines(proc.stdout) == [["ok"], ["skipping"], ["ok"], ["changed"]], proc.stdout
    first = json.loads((tmp_path / "first-a2.json").read_text())
    assert first["vendor"] == "ascend" and first["device_type"] == "A2"
    assert len(first["npus"]) == 8
    assert os.path.isfile(os.path.join(record, "a2", "snapshot.yml"))
    # The recording replays to the same topology.
    replay = run_playbook(
        play(
            tmp_path,
            [
                {
                    "name": "Gather",
                    "ansible.builtin." + how: role,
                    "vars": {"npuops_snapshot": os.path.join(record, "a2")},
                },
                dump(tmp_path, "replay"),
            ],
            "replay.yml",
        ),
        inv,
    )
    assert replay.returncode == 0, replay.stdout
    again = json.loads((tmp_path / "replay-a2.json").read_text())
    for key in ("vendor", "device_type", "npus", "cpu"):
        assert again[key] == first[key], key


@pytest.mark.slow
def test_argument_spec_rejects_bad_values(tmp_path):
    need(SNAP)
    inv = make_fleet(tmp_path, {"a2": (SNAP, {})})
    proc = run_playbook(
        play(
            tmp_path,
            [
                {
                    "name": "Gather",
                    "ansible.builtin.import_role": {"name": "npuops.fleet.npu_facts"},
                    "vars": {"npuops_facts_timeout": "soon"},
                }
            ],
        ),
        inv,
    )
    assert proc.returncode != 0
    assert "npuops_facts_timeout" in proc.stdout
