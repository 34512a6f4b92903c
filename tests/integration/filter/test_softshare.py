# -*- coding: utf-8 -*-
"""Soft-share filters through one real ansible-playbook run, called by FQCN."""

import json
import os

import pytest

from npuops_testing.runner import run_playbook
from npuops_testing.softshare_hosts import JOB, facts


@pytest.mark.slow
def test_filters_through_ansible(tmp_path):
    out = tmp_path / "out.json"
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "connection": "local",
            "vars": {"fleet": {"n1": {"npu_topology": facts()}}, "job": JOB},
            "tasks": [
                {
                    "name": "what-if",
                    "ansible.builtin.copy": {
                        "dest": str(out),
                        "content": "{{ {'place': fleet | npuops.fleet.softshare_place([], job, rules='rfc'),"
                        " 'cap': fleet | npuops.fleet.softshare_capacity} | to_json }}",
                    },
                }
            ],
        }
    ]
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(play))
    proc = run_playbook(str(path), inventory="localhost,")
    assert proc.returncode == 0, proc.stdout
    data = json.loads(out.read_text())
    assert data["place"]["rules"] == "rfc" and data["place"]["placed"] is True
    assert data["cap"]["total"]["capacity"] == 800
    assert os.path.exists(str(out))
