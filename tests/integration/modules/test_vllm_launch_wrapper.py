# -*- coding: utf-8 -*-
"""vllm_launch_wrapper through a real ansible-playbook, on sandbox roots."""

import io
import json
import os
import zipfile
import subprocess
import sys

import pytest

from npuops_testing.binder import BINDER_APP
from npuops_testing.runner import run_module

PLAN = {
    "policy": "strict",
    "mode": "topo_affinity",
    "device_type": "A2",
    "skipped": False,
    "numa_nodes": {"0": "0-1"},
    "npus": {
        "0": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "0", "acl": "1", "release": "0"},
        "1": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "1", "acl": "0", "release": "1"},
    },
    "instances": {"svc": {"npus": [0, 1], "env": {}}},
}
HOSTILE = ["$(touch /tmp/npuops-pwned-mod)", "it's", "a\nb", "`id`", "*", "-x"]

pytestmark = pytest.mark.slow


def args(tmp_path, **extra):
    base = {
        "name": "svc",
        "plan": PLAN,
        "command": ["vllm", "serve", "/models/m"] + HOSTILE,
        "env": {"HCCL_X": "1"},
        "host_root": str(tmp_path),
    }
    base.update(extra)
    return base


def read(tmp_path, path):
    with open(os.path.join(str(tmp_path), path.lstrip("/")), "rb") as handle:
        return handle.read()


def test_created_then_unchanged_then_diff_on_change(tmp_path):
    first = run_module("vllm_launch_wrapper", args(tmp_path))
    assert not first.get("failed"), first
    assert first["changed"] is True
    paths = [f["path"] for f in first["files"]]
    assert paths == [
        "/usr/local/lib/npuops/svc-launch",
        "/usr/local/lib/npuops/svc.plan.json",
        "/usr/local/lib/npuops/svc-bind",
        "/etc/systemd/system/vllm-svc.service",
        "/etc/systemd/system/vllm-svc-bind.service",
        "/etc/systemd/system/vllm-svc-reconcile.service",
        "/etc/systemd/system/vllm-svc-reconcile.timer",
        "/var/lib/prometheus/node-exporter",
    ]  # the reconciler's metrics go there
    assert os.path.isdir(os.path.join(str(tmp_path), "var/lib/prometheus/node-exporter"))
    assert first["units"] == ["vllm-svc.service", "vllm-svc-bind.service", "vllm-svc-reconcile.timer"]
    assert first["unit_name"] == "vllm-svc.service" and first["unit_changed"] is True
    assert first["main_cpus"] == "0-1"
    launch = os.path.join(str(tmp_path), "usr/local/lib/npuops/svc-launch")
    assert os.stat(launch).st_mode & 0o777 == 0o755
    text = read(tmp_path, "/usr/local/lib/npuops/svc-launch").decode()
    assert "exec taskset -c 0-1 vllm serve /models/m '$(touch /tmp/npuops-pwned-mod)'" in text
    unit = read(tmp_path, "/etc/systemd/system/vllm-svc.service").decode()
    assert "ExecStartPost" not in unit and "Wants=network-online.target vllm-svc-bind.service" in unit
    assert "AllowedCPUs=0-1" in unit
    bind = read(tmp_path, "/etc/systemd/system/vllm-svc-bind.service").decode()
    assert "ExecStart=/usr/local/lib/npuops/svc-bind --plan /usr/local/lib/npuops/svc.plan.json" in bind
    assert "BindsTo=vllm-svc.service" in bind
    plan_doc = json.loads(read(tmp_path, "/usr/local/lib/npuops/svc.plan.json"))
    assert plan_doc["npuops_instance"]["devices"] == [0, 1]

    # the installed binder is exactly the tested package, as one zipapp behind this host's
    # shebang: the same bytes the tests build from plugins/module_utils/standalone
    installed = read(tmp_path, "/usr/local/lib/npuops/svc-bind")
    shebang, _nl, body = installed.partition(b"\n")
    assert shebang.startswith(b"#!/")
    with open(BINDER_APP, "rb") as handle:
        assert body == handle.read().partition(b"\n")[2]
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        assert "ansible_collections/npuops/fleet/plugins/module_utils/standalone/binder.py" in archive.namelist()
    helped = subprocess.run(
        [os.path.join(str(tmp_path), "usr/local/lib/npuops/svc-bind"), "--help"],
        stdout=subprocess.PIPE,
        universal_newlines=True,
        check=False,
    )
    assert helped.returncode == 0 and "--plan" in helped.stdout

    second = run_module("vllm_launch_wrapper", args(tmp_path))
    assert second["changed"] is False and second["unit_changed"] is False

    third = run_module("vllm_launch_wrapper", args(tmp_path, env={"HCCL_X": "2"}), diff=True)
    assert third["changed"] is True
    assert [f["path"] for f in third["files"] if f["changed"]] == ["/usr/local/lib/npuops/svc-launch"]
    (diff,) = third["diff"]
    assert "export HCCL_X='1'" in diff["before"] and "export HCCL_X='2'" in diff["after"]


def test_check_mode_writes_nothing(tmp_path):
    result = run_module("vllm_launch_wrapper", args(tmp_path), check=True, diff=True)
    assert result["changed"] is True
    assert os.listdir(str(tmp_path)) == []
    assert any("exec taskset" in d["after"] for d in result["diff"])


def test_plan_instance_env_from_npu_cpu_plan(tmp_path):
    """A plan as npu_cpu_plan of an earlier release returned it: the instance env names its
    devices' visibility; accepted, exported once by the wrapper, absent from the plan JSON."""
    plan = dict(PLAN, instances={"svc": {"npus": [1, 0], "env": {"ASCEND_RT_VISIBLE_DEVICES": "1,0", "HCCL_Y": "y"}}})
    result = run_module("vllm_launch_wrapper", args(tmp_path, plan=plan, systemd=False))
    assert not result.get("failed"), result
    text = read(tmp_path, "/usr/local/lib/npuops/svc-launch").decode()
    assert text.count("ASCEND_RT_VISIBLE_DEVICES") == 1
    assert "export ASCEND_RT_VISIBLE_DEVICES=1,0\n" in text and "export HCCL_Y='y'\n" in text
    doc = json.loads(read(tmp_path, "/usr/local/lib/npuops/svc.plan.json"))
    assert doc["npuops_instance"]["devices"] == [1, 0]
    assert "instances" not in doc and "ASCEND_RT_VISIBLE_DEVICES" not in json.dumps(doc)

    again = run_module("vllm_launch_wrapper", args(tmp_path, plan=plan, npus=[1, 0], systemd=False))
    assert not again.get("failed") and again["changed"] is False, again

    other = tmp_path / "other"
    other.mkdir()
    bad = run_module("vllm_launch_wrapper", args(other, plan=plan, npus=[0]))
    assert bad.get("failed"), bad
    assert ("npus: 0 are not the devices of plan instance svc (1,0)") in bad["msg"]
    assert "Traceback" not in bad["msg"] and os.listdir(str(other)) == []
    user = run_module("vllm_launch_wrapper", args(other, env={"ASCEND_RT_VISIBLE_DEVICES": "1"}))
    assert user.get("failed") and "env: ASCEND_RT_VISIBLE_DEVICES=1 contradicts" in user["msg"]
    assert os.listdir(str(other)) == []


def test_vllm_binding_no_binder_no_systemd(tmp_path):
    result = run_module("vllm_launch_wrapper", args(tmp_path, binding="vllm", systemd=False))
    assert [f["path"] for f in result["files"]] == [
        "/usr/local/lib/npuops/svc-launch",
        "/usr/local/lib/npuops/svc.plan.json",
    ]
    assert result["unit"] is None
    assert b"taskset" not in read(tmp_path, "/usr/local/lib/npuops/svc-launch")


def test_hostile_args_run_verbatim(tmp_path):
    result = run_module("vllm_launch_wrapper", args(tmp_path, systemd=False))
    assert not result.get("failed"), result
    bindir = tmp_path / "bin"
    bindir.mkdir()
    out = tmp_path / "argv"
    (bindir / "vllm").write_text(
        "#!%s\nimport os, sys\nopen(%r, 'wb').write(b'\\0'.join("
        "os.fsencode(a) for a in sys.argv[1:]))\n" % (sys.executable, str(out))
    )
    (bindir / "taskset").write_text('#!/bin/sh\nshift 2\nexec "$@"\n')
    for tool in ("vllm", "taskset"):
        (bindir / tool).chmod(0o755)
    launch = os.path.join(str(tmp_path), "usr/local/lib/npuops/svc-launch")
    proc = subprocess.run(
        [launch],
        env={"PATH": "%s:/usr/bin:/bin" % bindir},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout
    expected = ["serve", "/models/m"] + HOSTILE + ["--additional-config", '{"enable_cpu_binding":false}']
    assert out.read_bytes().split(b"\0") == [a.encode() for a in expected]
    assert not os.path.exists("/tmp/npuops-pwned-mod")


# one refusal through ansible-playbook; every bad input of the module, in-process:
# tests/unit/plugins/modules/test_module_refusals.py
@pytest.mark.parametrize(
    "extra, needle",
    [
        ({"npus": [5]}, "NPU 5 is not in the plan"),
    ],
)
def test_bad_inputs_fail_cleanly(tmp_path, extra, needle):
    result = run_module("vllm_launch_wrapper", args(tmp_path, **extra))
    assert result.get("failed") and needle in result["msg"], result
    assert "Traceback" not in result["msg"]
    assert os.listdir(str(tmp_path)) == []


def test_symlinked_dest_refused_nothing_written(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "usr" / "local" / "lib").mkdir(parents=True)
    os.symlink(str(elsewhere), str(tmp_path / "usr" / "local" / "lib" / "npuops"))
    result = run_module("vllm_launch_wrapper", args(tmp_path))
    assert result.get("failed") and "symlink" in result["msg"]
    assert os.listdir(str(elsewhere)) == []
    assert not (tmp_path / "etc").exists()
