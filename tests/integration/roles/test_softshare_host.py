# -*- coding: utf-8 -*-
"""Role softshare_host through ansible-playbook on a sandbox host root: created, second run
changed=0, check mode creates nothing, a bad configuration fails before anything is written."""

import json
import os
import re

import pytest
import yaml

from npuops_testing import REPO, SNAPSHOTS
from npuops_testing.runner import run_playbook

pytestmark = pytest.mark.slow

FACTS_MODULE = os.path.join(REPO, "plugins", "modules", "npu_topology_facts.py")
SNAP = "a3-16die"


def changed_count(stdout):
    """changed=N of localhost in the PLAY RECAP."""
    match = re.search(r"^localhost\s*:.*\bchanged=(\d+)", stdout.split("PLAY RECAP")[-1], re.M)
    assert match, stdout
    return int(match.group(1))


def a3_topology():
    return {
        "schema_version": 1,
        "vendor": "ascend",
        "device_type": "A3",
        "npus": [
            {"npu_id": i // 2, "chip_id": i % 2, "logic_id": i, "phy_id": i, "health": "OK", "hbm_total_mb": 65536}
            for i in range(16)
        ],
    }


def write_play(tmp_path, host_root, extra_vars=None, name="play.yml"):
    role_vars = {"npuops_host_root": str(host_root)}
    role_vars.update(extra_vars or {})
    tasks = []
    if os.path.isfile(os.path.join(SNAPSHOTS, SNAP, "snapshot.yml")):
        role_vars["npuops_snapshot"] = os.path.join(SNAPSHOTS, SNAP)
    else:
        # Until the recorded snapshots land, give the role the facts it would gather.
        tasks.append(
            {"name": "Known facts", "ansible.builtin.set_fact": {"npu_topology": a3_topology(), "cacheable": True}}
        )
    tasks.append(
        {
            "name": "Soft share",
            "ansible.builtin.import_role": {"name": "npuops.fleet.softshare_host"},
            "vars": role_vars,
        }
    )
    path = tmp_path / name
    path.write_text(
        json.dumps(
            [{"name": "Under test", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}]
        )
    )
    return str(path)


@pytest.fixture
def host_root(tmp_path):
    assert os.path.isfile(FACTS_MODULE), FACTS_MODULE
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    return root


def test_check_mode_then_created_then_unchanged(tmp_path, host_root):
    play = write_play(tmp_path, host_root)
    check = run_playbook(play, "localhost,", ["--check"])
    assert check.returncode == 0, check.stdout
    assert changed_count(check.stdout) > 0
    assert os.listdir(str(host_root / "etc")) == [] and not (host_root / "share_device").exists()

    first = run_playbook(play, "localhost,")
    assert first.returncode == 0, first.stdout
    assert changed_count(first.stdout) > 0
    share = host_root / "share_device"
    assert sorted(int(n) for n in os.listdir(str(share))) == list(range(16))
    assert (host_root / "etc" / "vnpu.cfg").read_text() == ""
    assert (host_root / "etc" / "enpu").is_dir()
    out = host_root / "etc" / "npuops" / "softshare"
    docs = list(yaml.safe_load_all((out / "device-plugin-softsharedev.yaml").read_text()))
    args = docs[-1]["spec"]["template"]["spec"]["containers"][0]["args"][0].split()
    assert "-softShareDevConfigDir=/share_device" in args and "-useSingleDieMode=true" in args
    labels = yaml.safe_load((out / "node-labels-localhost.yaml").read_text())
    assert labels["metadata"]["labels"]["huawei.com/scheduler.chip1softsharedev.enable"] == "true"

    second = run_playbook(play, "localhost,")
    assert second.returncode == 0, second.stdout
    assert changed_count(second.stdout) == 0, second.stdout


@pytest.mark.parametrize(
    "extra,message",
    [
        ({"npuops_softshare_version": "6.0.0"}, "predates soft share"),
        ({"npuops_softshare_extra_args": ["-useAscendDocker=true"]}, "useAscendDocker"),
        ({"npuops_softshare_root": "/missing/share_device"}, "does not exist"),
    ],
)
def test_bad_configuration_fails_before_writing(tmp_path, host_root, extra, message):
    proc = run_playbook(write_play(tmp_path, host_root, extra), "localhost,")
    assert proc.returncode != 0 and message in proc.stdout
    assert os.listdir(str(host_root / "etc")) == []
