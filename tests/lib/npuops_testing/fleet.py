# -*- coding: utf-8 -*-
"""Fleets of recorded hosts for playbook and role tests (integration tests only).

- ``need(*snaps)``: fail unless every ``tests/snapshots/<snap>/snapshot.yml`` exists
- ``make_fleet(tmp_path, {name: (snapshot, extra vars)})``: an inventory file of local hosts,
  each replaying its snapshot with a sandbox root copied from the snapshot's ``fs/``
  (``snapshot.copy_host_tree``: on-disk names unescaped to host paths)
- ``written(tmp_path, host, snap)``: files under the host's sandbox root that differ from the
  snapshot (what the play wrote)
- ``recap(stdout)``: PLAY RECAP -> {host: {ok, changed, unreachable, failed, skipped}}
- ``play(tmp_path, tasks, name="play.yml")``: a one-play playbook file over ``all``
"""

import filecmp
import json
import os
import re

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot
from npuops_testing import SNAPSHOTS

RECAP = re.compile(
    r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+"
    r"skipped=(\d+)"
)


def need(*snaps):
    for snap in snaps:
        if not os.path.isfile(os.path.join(SNAPSHOTS, snap, "snapshot.yml")):
            pytest.fail("tests/snapshots/%s/snapshot.yml is missing: a recorded host the tests use" % snap)


def recap(stdout):
    out = {}
    for line in stdout.split("PLAY RECAP", 1)[-1].splitlines():
        match = RECAP.match(line.strip())
        if match:
            ok, changed, unreach, failed, skipped = (int(x) for x in match.groups()[1:])
            out[match.group(1)] = {
                "ok": ok,
                "changed": changed,
                "unreachable": unreach,
                "failed": failed,
                "skipped": skipped,
            }
    return out


def make_fleet(tmp_path, hosts):
    """hosts: {name: (snapshot, extra vars)} -> inventory path; sandbox roots under tmp_path."""
    inv = {"all": {"hosts": {}}}
    for name, (snap, extra) in hosts.items():
        root = tmp_path / "demo" / name / "root"
        if not root.exists():
            snapshot.copy_host_tree(os.path.join(SNAPSHOTS, snap), str(root))
            (root / "etc").mkdir(exist_ok=True)
        hvars = {
            "ansible_connection": "local",
            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "npuops_snapshot": os.path.join(SNAPSHOTS, snap),
            "npuops_host_root": str(root),
            "npuops_vllm_instances": [],
        }
        hvars.update(extra)
        inv["all"]["hosts"][name] = hvars
    path = tmp_path / "hosts.yml"
    path.write_text(json.dumps(inv))
    return str(path)


def written(tmp_path, host, snap):
    root = str(tmp_path / "demo" / host / "root")
    found = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            real = os.path.join(dirpath, name)
            rel = os.path.relpath(real, root)
            orig = snapshot.disk_path(os.path.join(SNAPSHOTS, snap), "/" + rel)
            if not os.path.isfile(orig) or not filecmp.cmp(real, orig, shallow=False):
                found.add("/" + rel)
    return found


def play(tmp_path, tasks, name="play.yml"):
    path = tmp_path / name
    path.write_text(json.dumps([{"name": "Under test", "hosts": "all", "gather_facts": False, "tasks": tasks}]))
    return str(path)
