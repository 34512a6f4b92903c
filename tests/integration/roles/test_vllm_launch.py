# -*- coding: utf-8 -*-
"""Role vllm_launch: one wrapper (+ unit) per instance under the sandbox root, plans by itself
when npuops_plan is unknown, idempotent, check mode writes nothing, restart handler guarded,
instance entries validated by meta/argument_specs.yml."""

import json
import os

import pytest

from npuops_testing.fleet import make_fleet, need, play, recap, written
from npuops_testing.runner import ansible_env, run_playbook

SNAP = "a2-910b3x8"
INSTANCES = [
    {
        "name": "qwen-a",
        "npus": [0, 1, 2, 3],
        "command": ["vllm", "serve", "/models/Qwen3-8B", "--tensor-parallel-size", "4"],
        "env": {"VLLM_LOGGING_LEVEL": "INFO"},
    },
    {
        "name": "qwen-b",
        "npus": [4, 5, 6, 7],
        "binding": "vllm",
        "command": ["vllm", "serve", "/models/Qwen3-8B", "--tensor-parallel-size", "4"],
    },
]


@pytest.mark.slow
def test_wrappers_and_units_per_instance_idempotent(tmp_path):
    need(SNAP)
    inv = make_fleet(tmp_path, {"a2": (SNAP, {"npuops_vllm_instances": INSTANCES})})
    # The role alone: no npu_facts, no cpu_binding before it.
    pb = play(tmp_path, [{"name": "Launch", "ansible.builtin.import_role": {"name": "npuops.fleet.vllm_launch"}}])
    check = run_playbook(pb, inv, ["--check", "--diff"])
    assert check.returncode == 0, check.stdout
    assert recap(check.stdout)["a2"]["changed"] > 0
    assert written(tmp_path, "a2", SNAP) == set()

    first = run_playbook(pb, inv)
    assert first.returncode == 0, first.stdout
    files = written(tmp_path, "a2", SNAP)
    for name in ("qwen-a", "qwen-b"):
        mine = [f for f in files if name in f]
        assert mine, files
    assert any(f.endswith(".service") for f in files), files
    assert not any(f.startswith("/proc/irq/") for f in files), files
    # The wrapper gets the real plan: the plan JSON (schema 2) holds the instance's devices,
    # each one's entry and NUMA node; the visibility variable is the wrapper's alone, once.
    root = tmp_path / "demo" / "a2" / "root" / "usr" / "local" / "lib" / "npuops"
    for inst in INSTANCES:
        doc = json.loads((root / ("%s.plan.json" % inst["name"])).read_text())
        assert "instances" not in doc and "ASCEND_RT_VISIBLE_DEVICES" not in json.dumps(doc)
        assert sorted(doc["npus"]) == sorted(str(n) for n in inst["npus"])
        assert doc["npuops_instance"]["schema"] == 2
        assert sorted(doc["npuops_instance"]["device_nodes"]) == sorted(doc["npus"])
        devices = ",".join(str(n) for n in inst["npus"])
        assert doc["npuops_instance"]["devices"] == inst["npus"]
        launch = (root / ("%s-launch" % inst["name"])).read_text()
        assert launch.count("ASCEND_RT_VISIBLE_DEVICES") == 1
        assert "export ASCEND_RT_VISIBLE_DEVICES=%s\n" % devices in launch
    # Handlers notified, services untouched in the sandbox.
    handlers = first.stdout.split("RUNNING HANDLER")[1:]
    assert handlers and not any("changed: [a2]" in h.split("PLAY RECAP")[0] for h in handlers)

    second = run_playbook(pb, inv)
    assert second.returncode == 0, second.stdout
    assert recap(second.stdout)["a2"]["changed"] == 0, second.stdout
    assert "RUNNING HANDLER" not in second.stdout


@pytest.mark.slow
def test_include_role_gives_the_same_files_and_spec_rejects_bad_instances(tmp_path):
    need(SNAP)
    hosts = {"imp": (SNAP, {"npuops_vllm_instances": INSTANCES}), "inc": (SNAP, {"npuops_vllm_instances": INSTANCES})}
    inv = make_fleet(tmp_path, hosts)
    pb = tmp_path / "both.yml"
    pb.write_text(
        "- name: Import\n  hosts: imp\n  gather_facts: false\n  tasks:\n"
        "    - name: Launch\n      ansible.builtin.import_role:\n        name: npuops.fleet.vllm_launch\n"
        "- name: Include\n  hosts: inc\n  gather_facts: false\n  tasks:\n"
        "    - name: Launch\n      ansible.builtin.include_role:\n        name: npuops.fleet.vllm_launch\n"
    )
    proc = run_playbook(str(pb), inv)
    assert proc.returncode == 0, proc.stdout
    rec = recap(proc.stdout)
    assert rec["imp"]["changed"] == rec["inc"]["changed"] > 0
    imp, inc = written(tmp_path, "imp", SNAP), written(tmp_path, "inc", SNAP)
    assert imp == inc and imp
    for rel in imp:
        a = (tmp_path / "demo" / "imp" / "root" / rel.lstrip("/")).read_bytes()
        b = (tmp_path / "demo" / "inc" / "root" / rel.lstrip("/")).read_bytes()
        assert a.replace(b"/imp/", b"/X/") == b.replace(b"/inc/", b"/X/"), rel

    bad = make_fleet(tmp_path / "bad", {"a2": (SNAP, {"npuops_vllm_instances": [{"npus": [0], "command": ["vllm"]}]})})
    proc = run_playbook(
        play(
            tmp_path,
            [{"name": "Launch", "ansible.builtin.import_role": {"name": "npuops.fleet.vllm_launch"}}],
            "bad.yml",
        ),
        bad,
    )
    assert proc.returncode != 0
    assert "name" in proc.stdout and "npuops_vllm_instances" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "bad_instance,needle",
    [
        ({"name": "s", "npus": [4], "command": "vllm serve /models/m"}, "list of arguments"),
        ({"name": "s", "npus": [4]}, "command"),
    ],
)
def test_bad_instances_fail_before_any_file_is_written(tmp_path, bad_instance, needle):
    """A string or missing command in the second instance: the first one is not written either."""
    need(SNAP)
    inv = make_fleet(tmp_path, {"a2": (SNAP, {"npuops_vllm_instances": [INSTANCES[0], bad_instance]})})
    pb = play(tmp_path, [{"name": "Launch", "ansible.builtin.import_role": {"name": "npuops.fleet.vllm_launch"}}])
    proc = run_playbook(pb, inv)
    assert proc.returncode != 0
    assert needle in proc.stdout
    assert not [f for f in written(tmp_path, "a2", SNAP) if "qwen-a" in f]


FAKE_SYSTEMCTL = """#!/bin/sh
# stands in for systemctl: logs each call, every unit is loaded, enabled and running
echo "$*" >>"%s"
case "$1" in
    show) printf 'Id=%%s\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\nUnitFileState=enabled\\n' "$2" ;;
    is-enabled) echo enabled ;;
    is-active) echo active ;;
esac
exit 0
"""


@pytest.mark.slow
def test_handlers_restart_on_change_and_rebind_on_a_plan_change(tmp_path):
    """What the handlers ask systemd for on a host whose instances run (systemctl is a fake that
    logs its calls; the real one is driven by scripts/real-systemd-tier.sh): a change restarts
    only with npuops_vllm_restart_on_change (throttled), and a plan change without restart
    restarts the running bind units (try-restart) of host-bound instances, so the binder never
    holds the old plan while the reconciler applies the new one."""
    need(SNAP)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "systemctl.log"
    fake = bindir / "systemctl"
    fake.write_text(FAKE_SYSTEMCTL % calls)
    fake.chmod(0o755)
    env = {"PATH": "%s%s%s" % (bindir, os.pathsep, ansible_env()["PATH"])}
    inv = make_fleet(tmp_path, {"a2": (SNAP, {"npuops_vllm_instances": INSTANCES})})
    pb = play(tmp_path, [{"name": "Launch", "ansible.builtin.import_role": {"name": "npuops.fleet.vllm_launch"}}])
    real = ["-e", "__npuops_vllm_real_host=true"]

    def run(*extra):
        if calls.exists():
            calls.unlink()
        proc = run_playbook(pb, inv, real + list(extra), env=env)
        assert proc.returncode == 0, proc.stdout
        return proc.stdout, (calls.read_text().splitlines() if calls.exists() else [])

    # the first run writes the plan file: a bind unit that runs already is re-bound to it
    out, log = run()
    assert "daemon-reload" in log and not [c for c in log if c.startswith("restart")], log
    assert [c for c in log if c.startswith("try-restart")] == ["try-restart vllm-qwen-a-bind.service"], log
    # a wrapper change (env) without the switch: reloaded, nothing restarted, the binder kept
    out, log = run("-e", '{"npuops_vllm_env": {"X_TIER": "1"}}')
    assert "daemon-reload" in log
    assert not [c for c in log if c.startswith(("restart", "try-restart"))], log
    # with the switch: the changed instances' services restart (the bind units follow them)
    out, log = run("-e", '{"npuops_vllm_env": {"X_TIER": "2"}, "npuops_vllm_restart_on_change": true}')
    assert sorted(c for c in log if c.startswith("restart")) == [
        "restart vllm-qwen-a.service",
        "restart vllm-qwen-b.service",
    ], log
    assert not [c for c in log if c.startswith("try-restart")], log
    # a plan change without restart: only the host-bound instance has a bind unit to re-bind.
    # (CPU 96 is in qwen-a's pools: its plan JSON holds its own part of the plan only, so a
    # change elsewhere, such as reserving CPU 0, leaves its file and its binder alone)
    out, log = run("-e", '{"npuops_vllm_env": {"X_TIER": "2"}, "npuops_cpu_reserved": "0"}')
    assert not [c for c in log if c.startswith(("restart", "try-restart"))], log
    out, log = run("-e", '{"npuops_vllm_env": {"X_TIER": "2"}, "npuops_cpu_reserved": "96"}')
    assert not [c for c in log if c.startswith("restart")], log
    assert [c for c in log if c.startswith("try-restart")] == ["try-restart vllm-qwen-a-bind.service"], log
    # nothing changed: no handler at all
    out, log = run("-e", '{"npuops_vllm_env": {"X_TIER": "2"}, "npuops_cpu_reserved": "96"}')
    assert "RUNNING HANDLER" not in out
    assert not [c for c in log if c.startswith(("restart", "try-restart", "daemon-reload"))], log
