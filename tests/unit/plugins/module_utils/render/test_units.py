# -*- coding: utf-8 -*-
"""render/units.py: the service, bind and reconcile units of an instance; systemd-analyze
verify accepts all four."""

import shutil
import subprocess

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.render import units

VIEW = {
    "name": "svc0",
    "vendor": "ascend",
    "devices": [0, 1],
    "main": list(range(2, 22)),
    "pool": list(range(0, 24)),
    "frontend": list(range(120, 128)),
    "env": {},
}
BINDER, PLAN, WRAPPER = (
    "/usr/local/lib/npuops/svc0-bind",
    "/usr/local/lib/npuops/svc0.plan.json",
    "/usr/local/lib/npuops/svc0-launch",
)


def test_service_is_confined_to_frontend_and_pools_and_pulls_in_the_binder():
    lines = units.service_unit(VIEW, WRAPPER).splitlines()
    assert "ExecStart=/usr/local/lib/npuops/svc0-launch" in lines
    assert "AllowedCPUs=0-23,120-127" in lines and "CPUAffinity=0-23,120-127" in lines
    assert "Wants=network-online.target vllm-svc0-bind.service" in lines
    assert not any(l.startswith(("ExecStartPost", "TimeoutStartSec")) for l in lines)
    plain = units.service_unit(VIEW, WRAPPER, binding="vllm")
    assert "AllowedCPUs" not in plain and "bind.service" not in plain
    # with a reconciler, the service starts its timer too (the timer no longer runs on its own
    # schedule from boot, whatever the service does)
    wants = units.service_unit(VIEW, WRAPPER, reconcile=True).splitlines()
    assert "Wants=network-online.target vllm-svc0-bind.service vllm-svc0-reconcile.timer" in wants
    assert "reconcile.timer" not in units.service_unit(VIEW, WRAPPER, binding="vllm", reconcile=True)


def _setting(text, key):
    (value,) = [l.split("=", 1)[1] for l in text.splitlines() if l.startswith(key + "=")]
    return value


def test_a_crash_loop_reaches_the_start_limit():
    """systemd's default limit (5 starts in 10 s) can never be hit with RestartSec=10: the unit
    sets one a crash loop reaches, in [Unit] where systemd 252 reads it."""
    text = units.service_unit(VIEW, WRAPPER)
    unit_section = text.split("[Service]", maxsplit=1)[0]
    assert "StartLimitIntervalSec=" in unit_section and "StartLimitBurst=" in unit_section
    interval = int(_setting(text, "StartLimitIntervalSec"))
    burst = int(_setting(text, "StartLimitBurst"))
    restart_sec = int(_setting(text, "RestartSec"))
    assert _setting(text, "Restart") == "on-failure"
    # burst starts of a process that dies at once span (burst - 1) * RestartSec seconds
    assert (burst - 1) * restart_sec < interval
    # ... and a model load of several minutes per start still counts as a loop
    assert interval >= burst * (restart_sec + 300)


def test_bind_unit_runs_outside_the_start_path_and_waits_for_readiness():
    lines = units.bind_unit(
        VIEW, BINDER, PLAN, 600, "http://127.0.0.1:8001/health", irq_state="/var/lib/npuops/irq-state.json"
    ).splitlines()
    assert "BindsTo=vllm-svc0.service" in lines and "After=vllm-svc0.service" in lines
    assert "WantedBy=vllm-svc0.service" in lines
    (exec_line,) = [l for l in lines if l.startswith("ExecStart=")]
    assert exec_line == (
        "ExecStart=/usr/local/lib/npuops/svc0-bind --plan "
        "/usr/local/lib/npuops/svc0.plan.json --instance svc0 --unit "
        "vllm-svc0.service --irq-state /var/lib/npuops/irq-state.json "
        "--timeout 600 --follow 600 --ready-url http://127.0.0.1:8001/health"
    )
    no_migrate = units.bind_unit(VIEW, BINDER, PLAN, migrate=False, ready_url="http://x:1/health")
    assert "--no-migrate" in no_migrate and "--ready-url" not in no_migrate


def test_reconciler_never_restarts_and_writes_metrics():
    service, timer = units.reconcile_units(VIEW, BINDER, PLAN, "2min", metrics_dir="/var/lib/prometheus/node-exporter")
    assert "Type=oneshot" in service and "--once --no-migrate" in service
    assert "--metrics-dir /var/lib/prometheus/node-exporter" in service
    assert "Restart" not in service
    assert "OnUnitActiveSec=2min" in timer and "WantedBy=timers.target" in timer


def test_reconciler_neither_fails_nor_runs_before_the_instance_had_time_to_start():
    """The instance stopped (binder exit 3) or its workers not spawned yet (exit 2) is a state the
    metrics report, not a failed unit (a failed unit degrades the host); a real error (exit 1)
    still fails. The first run is one interval after the timer started, never at once."""
    service, timer = units.reconcile_units(VIEW, BINDER, PLAN, "2min")
    assert _setting(service, "SuccessExitStatus").split() == ["2", "3"]
    assert "1" not in _setting(service, "SuccessExitStatus").split()
    assert not any(l.startswith("ExecCondition") for l in service.splitlines())
    assert _setting(timer, "OnActiveSec") == "2min"
    assert "OnBootSec" not in timer
    for bad in ("5 min", "0s", "1d", "5min; rm", ""):
        with pytest.raises(NpuopsError, match="time span"):
            units.reconcile_units(VIEW, BINDER, PLAN, bad)


@pytest.mark.parametrize(
    "argv,url",
    [
        (["vllm", "serve", "/m"], "http://127.0.0.1:8000/health"),
        (["vllm", "serve", "/m", "--port", "8001"], "http://127.0.0.1:8001/health"),
        (["vllm", "serve", "/m", "--port=9000", "--host", "10.1.2.3"], "http://10.1.2.3:9000/health"),
        (["vllm", "serve", "/m", "--host", "0.0.0.0"], "http://127.0.0.1:8000/health"),
        (["vllm", "serve", "/m", "--host", "::1"], "http://[::1]:8000/health"),
        (["vllm", "serve", "/m", "--host", "$(id)", "--port", "x"], "http://127.0.0.1:8000/health"),
        (["vllm", "serve", "/m", "--uds", "/run/v.sock"], None),
    ],
)
def test_ready_url_from_the_command(argv, url):
    assert units.ready_url(argv) == url


@pytest.mark.parametrize("path", ["/opt/my dir/x", "/opt/$x", "/opt/%i", "relative"])
def test_paths_systemd_cannot_carry_are_refused(path):
    with pytest.raises(NpuopsError, match="must be plain"):
        units.bind_unit(VIEW, path, PLAN)
    with pytest.raises(NpuopsError, match="must be plain"):
        units.service_unit(VIEW, path)


def test_systemd_analyze_verify_accepts_every_unit(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed")
    for name in ("svc0-launch", "svc0-bind"):
        exe = tmp_path / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    binder, wrapper = str(tmp_path / "svc0-bind"), str(tmp_path / "svc0-launch")
    plan = str(tmp_path / "p.json")
    names = units.unit_names("svc0")
    service, timer = units.reconcile_units(VIEW, binder, plan, "5min", metrics_dir=str(tmp_path))
    texts = {
        names["service"]: units.service_unit(VIEW, wrapper),
        names["bind"]: units.bind_unit(VIEW, binder, plan, ready_url="http://127.0.0.1:8000/health"),
        names["reconcile"]: service,
        names["timer"]: timer,
    }
    paths = []
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    proc = subprocess.run(
        [analyze, "verify"] + paths,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        check=False,
        cwd=str(tmp_path),
    )
    bad = [l for l in proc.stdout.splitlines() if "vllm-svc0" in l and "network-online" not in l]
    assert not bad, proc.stdout
