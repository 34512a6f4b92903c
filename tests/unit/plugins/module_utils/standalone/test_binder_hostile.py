# -*- coding: utf-8 -*-
"""The binder runs as root on a host where other users write: a health server that trickles
its answer, a resolver that never answers, a metrics dir another uid can write (and race), a
symlinked metrics dir, plan and IRQ state files nested 200,000 deep."""

import json
import os
import socket
import stat
import subprocess
import time

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.standalone import metrics, procs
from npuops_testing.binder import BINDER_APP as BINDER, PLAN, tcp_server

SAMPLES = [("npuops_instance_up", [("instance", "svc")], 1)]


def _run(args, timeout=60):
    proc = subprocess.run(
        [BINDER, "--json"] + args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=timeout,
        env=dict(os.environ, PATH="/nonexistent"),
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _trickle(conn, stop):
    """One byte every 0.2 s: a status line and headers that never end."""
    for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 10000:
        if stop.wait(0.2):
            break
        conn.sendall(bytes([byte]))


@pytest.fixture
def trickle():
    with tcp_server(_trickle) as base:
        yield base + "/health"


def test_a_trickling_health_server_cannot_hold_the_ready_check(trickle):
    start = time.time()
    assert procs.ready(trickle, timeout=1.0) is False
    assert time.time() - start < 5  # bounded by the one deadline, not by the byte rate


def test_an_answer_with_huge_headers_is_cut_at_the_size_bound():
    def huge(conn, _stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * (procs.MAX_RESPONSE_HEAD * 4))

    with tcp_server(huge) as base:
        assert procs.ready(base + "/", 5.0) is False


def test_a_healthy_server_is_ready():
    def healthy(conn, _stop):
        conn.recv(1024)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    with tcp_server(healthy) as base:
        assert procs.ready(base.replace("127.0.0.1", "localhost") + "/health", 5.0) is True


def test_a_resolver_that_never_answers_is_bounded(monkeypatch):
    real = socket.getaddrinfo
    calls = []

    def slow(host, *args, **kwargs):
        if host == "health.invalid":
            calls.append(host)
            time.sleep(5)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    start = time.time()
    assert procs.ready("http://health.invalid:8000/health", timeout=0.5) is False
    assert procs.ready("http://health.invalid:8000/health", timeout=0.5) is False
    assert time.time() - start < 3 and calls == ["health.invalid"]  # one lookup at a time


def test_the_binder_with_a_trickling_ready_url_ends_by_its_deadlines(tmp_path, trickle):
    plan = tmp_path / "svc.plan.json"
    plan.write_text(json.dumps(PLAN))
    worker = subprocess.Popen(["sleep", "60"])
    try:
        start = time.time()
        code, result, log = _run(
            [
                "--plan",
                str(plan),
                "--pid",
                str(worker.pid),
                "--npu",
                "0",
                "--ready-url",
                trickle,
                "--ready-timeout",
                "2",
                "--thread-wait",
                "0",
                "--interval",
                "0.2",
                "--check",
            ]
        )
        assert time.time() - start < 20, log
        assert code == 0 and "did not answer" in log, log
    finally:
        worker.kill()
        worker.wait()


def test_metrics_refuse_a_symlinked_dir(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "textfiles"
    link.symlink_to(target)
    with pytest.raises(ValueError, match="symlink"):
        metrics.write(str(link), "svc", SAMPLES)
    assert os.listdir(str(target)) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to race as another uid")
def test_metrics_dir_writable_by_another_uid_cannot_make_root_chmod_a_file(tmp_path):
    """Another uid that can write the metrics dir swaps every temporary file it sees for a
    link to a root-only file while root writes 200 times: the file stays 0600."""
    os.chmod(str(tmp_path), 0o755)
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    os.chown(str(textfiles), 65534, 65534)
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    os.chmod(str(secret), 0o600)
    racer = subprocess.Popen(
        [
            "python3",
            "-c",
            (
                "import os, sys, time\n"
                "os.setgid(65534); os.setuid(65534)\n"
                "d, target, end = sys.argv[1], sys.argv[2], time.time() + 20\n"
                "while time.time() < end:\n"
                "    for name in os.listdir(d):\n"
                "        if name.endswith('.tmp'):\n"
                "            try:\n"
                "                os.unlink(os.path.join(d, name))\n"
                "                os.symlink(target, os.path.join(d, name))\n"
                "            except OSError:\n"
                "                pass\n"
            ),
            str(textfiles),
            str(secret),
        ]
    )
    try:
        time.sleep(0.3)
        for dummy in range(200):
            try:
                metrics.write(str(textfiles), "svc", SAMPLES)
            except OSError:
                pass  # the racer removed our file: the write fails, nothing else happens
    finally:
        racer.kill()
        racer.wait()
    assert stat.S_IMODE(os.stat(str(secret)).st_mode) == 0o600
    assert secret.read_text() == "root only\n"
    written = textfiles / "npuops_svc.prom"
    if written.exists() and not written.is_symlink():
        assert stat.S_IMODE(os.stat(str(written)).st_mode) == 0o644


@pytest.mark.parametrize("which", ["plan", "irq-state"])
def test_files_nested_200000_deep_are_clean_errors(tmp_path, which):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200000 + "]" * 200000)
    plan = tmp_path / "svc.plan.json"
    plan.write_text(json.dumps(PLAN))
    args = [
        "--plan",
        str(deep if which == "plan" else plan),
        "--once",
        "--pid",
        str(os.getpid()),
        "--npu",
        "0",
        "--check",
        "--no-migrate",
    ]
    if which == "irq-state":
        args += ["--irq-state", str(deep)]
    code, result, log = _run(args)
    assert code == 1 and "nested too deep" in result["failed"], log
    assert "Traceback" not in log


def test_the_missing_message_prints_the_time_really_waited(tmp_path):
    plan = tmp_path / "svc.plan.json"
    plan.write_text(json.dumps(PLAN))
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        code, result, log = _run(
            [
                "--plan",
                str(plan),
                "--root-pid",
                str(sleeper.pid),
                "--once",
                "--check",
                "--no-migrate",
                "--timeout",
                "900",
            ]
        )
    finally:
        sleeper.kill()
        sleeper.wait()
    assert code == 2 and result["missing"] == [0, 1]
    assert "shows no worker process after 0s" in log and "900s" not in log
