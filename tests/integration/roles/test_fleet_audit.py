# -*- coding: utf-8 -*-
"""Role npuops.fleet.fleet_audit and playbooks/audit.yml through a real ansible-playbook."""

import json
import os
import re
import tempfile

import pytest

from npuops_testing import REPO, SNAPSHOTS
from npuops_testing.runner import run_playbook

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import (
    html as report_html,
    markdown as report_markdown,
)

NEEDED = [
    os.path.join(REPO, "plugins", "modules", "npu_topology_facts.py"),
    os.path.join(REPO, "plugins", "modules", "npu_cpu_plan.py"),
    os.path.join(REPO, "roles", "npu_facts", "tasks", "main.yml"),
]


def _snapshots():
    if not os.path.isdir(SNAPSHOTS):
        return []
    return sorted(n for n in os.listdir(SNAPSHOTS) if os.path.isfile(os.path.join(SNAPSHOTS, n, "snapshot.yml")))


pytestmark = pytest.mark.slow


def test_the_collection_parts_the_audit_uses_exist():
    assert [p for p in NEEDED if not os.path.exists(p)] == []


def _recap(output):
    return dict(
        (m.group(1), (int(m.group(2)), int(m.group(3)), int(m.group(4))))
        for m in re.finditer(
            r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+"
            r"failed=(\d+)",
            output,
            re.M,
        )
    )


def _read(dest, ext):
    with open(os.path.join(dest, "fleet-report." + ext), encoding="utf-8") as handle:
        return handle.read()


def test_audit_playbook_on_the_demo_fleet_writes_consistent_reports_idempotently():
    assert len(_snapshots()) >= 2, "fewer than 2 host snapshots in tests/snapshots"
    inventory = os.path.join(REPO, "inventories", "demo", "hosts.yml")
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "report")
        args = ["-e", "npuops_audit_dest=" + dest]
        env = {"NPUOPS_DEMO_DIR": os.path.join(tmp, "demo")}
        first = run_playbook(os.path.join(REPO, "playbooks", "audit.yml"), inventory, args, env)
        assert first.returncode == 0, first.stdout[-6000:]
        # the report reaches Ansible's variable storage as plain dicts
        assert "OrderedDict" not in first.stdout and "[WARNING]" not in first.stdout
        report = json.loads(_read(dest, "json"))
        recap = _recap(first.stdout)
        # the report is written by the play on localhost: no audited host is charged a change
        written = recap.pop("localhost")
        assert written[1] > 0, first.stdout[-3000:]
        assert sorted(h["name"] for h in report["hosts"]) == sorted(recap)
        assert all(changed == 0 for dummy, changed, dummy in recap.values()), first.stdout[-3000:]
        # the three files render the very same report
        assert _read(dest, "html") == report_html.render_html(report)
        assert _read(dest, "md") == report_markdown.render_markdown(report)
        failed = set(p["host"] for p in report["problems"] if p["kind"] == "plan_failed")
        for host in report["hosts"]:
            assert host["has_facts"], host["name"]
            status = host["plans"]["strict"]["status"]
            assert status in ("ok", "skipped") or (status == "failed" and host["name"] in failed)
            if host["vendor"] == "ascend":
                assert host["plans"]["vllm_ascend"]["status"] != "absent", host["name"]
            else:
                assert host["plans"]["vllm_ascend"]["applicable"] is False
        assert report["summary"]["problems"]["error"] + report["summary"]["problems"]["warning"] > 0
        # h100-cgroup's facts were recorded inside a 1-CPU job cgroup: the finding says what to do
        (cgroup,) = [p for p in report["problems"] if p["host"] == "h100-cgroup" and p["kind"] == "plan_failed"]
        assert cgroup["evidence"].endswith("GPU 5: NUMA node 1 has 1 allowed CPUs for 4 GPUs")
        assert cgroup["fix"].startswith("the facts were gathered in a cpuset of 1 CPU ")
        assert "gather the facts outside the job's cgroup, or pass allowed_cpus" in cgroup["fix"]
        # the design-document A2 host shows vllm-ascend's NPU0/NPU1 overlap on 0-23; its demo
        # instances run with host binding, so the prediction is a note: not in effect
        overlap = [p for p in report["problems"] if p["host"] == "a2-designdoc" and p["kind"] == "vllm_not_in_effect"]
        assert overlap and "NPU0+NPU1 share 0-23" in overlap[0]["evidence"]
        assert "not in effect: qwen3-8b-a, qwen3-8b-b run with host binding" in overlap[0]["evidence"]
        assert overlap[0]["severity"] == "info"
        assert not [p for p in report["problems"] if p["host"] == "a2-designdoc" and p["kind"] == "vllm_overlap"]
        assert "hosts," in first.stdout and "fleet-report.md,json,html" in first.stdout
        second = run_playbook(os.path.join(REPO, "playbooks", "audit.yml"), inventory, args, env)
        assert second.returncode == 0, second.stdout[-6000:]
        assert all(changed == 0 for dummy, changed, dummy in _recap(second.stdout).values()), second.stdout[-3000:]


def test_role_records_failures_as_findings_instead_of_failing_hosts():
    snaps = _snapshots()
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "out")
        hosts = {"broken-host": {"npuops_snapshot": os.path.join(tmp, "no-such-snapshot")}}
        if snaps:
            hosts["good-host"] = {"npuops_snapshot": os.path.join(SNAPSHOTS, snaps[0])}
        inventory = os.path.join(tmp, "hosts.yml")
        with open(inventory, "w") as handle:
            json.dump(
                {
                    "all": {
                        "hosts": hosts,
                        "vars": {
                            "ansible_connection": "local",
                            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                        },
                    }
                },
                handle,
            )
        play = os.path.join(tmp, "play.yml")
        with open(play, "w") as handle:
            json.dump(
                [
                    {
                        "name": "audit only",
                        "hosts": "all",
                        "gather_facts": False,
                        "roles": [
                            {
                                "role": "npuops.fleet.fleet_audit",
                                "npuops_audit_dest": dest,
                                "npuops_audit_formats": ["json"],
                            }
                        ],
                    }
                ],
                handle,
            )
        proc = run_playbook(play, inventory, (), None, cwd=tmp)
        assert proc.returncode == 0, proc.stdout[-6000:]
        assert sorted(os.listdir(dest)) == ["fleet-report.json"]
        report = json.loads(_read(dest, "json"))
        names = [h["name"] for h in report["hosts"]]
        assert names == sorted(hosts)
        broken = [p for p in report["problems"] if p["host"] == "broken-host"]
        assert [p["kind"] for p in broken] == ["no_facts"]
        assert "no-such-snapshot" in broken[0]["evidence"]
        if snaps:
            good = [h for h in report["hosts"] if h["name"] == "good-host"][0]
            assert good["has_facts"] and good["plans"]["strict"]["status"] in ("ok", "skipped")


def _one_host_inventory(tmp):
    snaps = _snapshots()
    hosts = {"only-host": {"npuops_snapshot": os.path.join(SNAPSHOTS, snaps[0])}}
    inventory = os.path.join(tmp, "hosts.yml")
    with open(inventory, "w") as handle:
        json.dump(
            {
                "all": {
                    "hosts": hosts,
                    "vars": {
                        "ansible_connection": "local",
                        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                    },
                }
            },
            handle,
        )
    return inventory


def test_without_a_dest_the_report_goes_next_to_the_callers_play():
    with tempfile.TemporaryDirectory() as tmp:
        play = os.path.join(tmp, "play.yml")
        with open(play, "w") as handle:
            json.dump(
                [
                    {
                        "name": "audit",
                        "hosts": "all",
                        "gather_facts": False,
                        "roles": [{"role": "npuops.fleet.fleet_audit", "npuops_audit_formats": ["json"]}],
                    }
                ],
                handle,
            )
        proc = run_playbook(play, _one_host_inventory(tmp), (), None, cwd=tmp)
        assert proc.returncode == 0, proc.stdout[-6000:]
        assert os.listdir(os.path.join(tmp, "fleet-report")) == ["fleet-report.json"]


def test_the_collections_own_audit_playbook_requires_a_dest():
    """playbooks/audit.yml (npuops.fleet.audit) never writes into the collection: without
    npuops_audit_dest it stops before any work."""
    before = sorted(os.listdir(os.path.join(REPO, "playbooks")))
    with tempfile.TemporaryDirectory() as tmp:
        proc = run_playbook("npuops.fleet.audit", _one_host_inventory(tmp), (), None, cwd=tmp)
    assert proc.returncode != 0
    assert "npuops_audit_dest is required" in proc.stdout, proc.stdout[-3000:]
    assert "Gather NPU/GPU topology facts" not in proc.stdout  # failed before npu_facts
    assert sorted(os.listdir(os.path.join(REPO, "playbooks"))) == before
