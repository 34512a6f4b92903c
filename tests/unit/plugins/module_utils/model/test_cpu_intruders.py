# -*- coding: utf-8 -*-
"""Processes outside the vLLM trees allowed on a partitioned host's isolated CPUs: found in
/proc (kernel threads and the vLLM trees left out), named with their unit, and the drift rows
of kind cpu_intruder."""

import json

from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import LiveHostIO
from ansible_collections.npuops.fleet.plugins.module_utils.model import binding, cpu_intruders, drift_kinds


def stat(pid, comm, flags=0x400100, cpu=0):
    # pid (comm) state ppid pgrp session tty tpgid flags ... field 39 = processor
    fields = ["S", "1", str(pid), str(pid), "0", "-1", str(flags)] + ["0"] * 29 + [str(cpu), "0"]
    return "%d (%s) %s\n" % (pid, comm, " ".join(fields))


PROCS = {
    # pid: (comm, flags, last cpu, Cpus_allowed_list, cgroup)
    1: ("systemd", 0x400100, 0, "0-1", "0::/init.scope\n"),
    2: ("kthreadd", 0x208040, 5, "0-7", "0::/\n"),
    40: ("ksoftirqd/5", 0x4208040, 5, "5", "0::/\n"),
    300: ("sshd", 0x400140, 4, "0-7", "0::/system.slice/ssh.service\n"),
    301: ("backup", 0x400000, 6, "6", "0::/user.slice/user-0.slice/session-3.scope\n"),
    302: ("rsyslogd", 0x400140, 1, "0-1", "0::/system.slice/rsyslog.service\n"),
    400: ("python3", 0x400000, 4, "2-7", "0::/npuops-vllm.slice/vllm-svc0.service\n"),
    401: ("python3", 0x400000, 5, "2-7", "0::/system.slice/vllm-svc1.service\n"),
}


def host(tmp_path, isolated="2-7"):
    root = tmp_path / "root"
    for pid, (comm, flags, cpu, allowed, cgroup) in PROCS.items():
        d = root / "proc" / str(pid)
        d.mkdir(parents=True)
        (d / "stat").write_text(stat(pid, comm, flags, cpu))
        (d / "status").write_text("Name:\t%s\nCpus_allowed_list:\t%s\n" % (comm, allowed))
        (d / "cgroup").write_text(cgroup)
    (root / "var/lib/npuops").mkdir(parents=True)
    (root / "var/lib/npuops/cpu_partition.json").write_text(json.dumps({"isolated": isolated}))
    return root


def test_scan_names_the_intruders_and_their_units(tmp_path):
    io = LiveHostIO(str(host(tmp_path)))
    assert cpu_intruders.isolated_cpus(io) == set(range(2, 8))
    found = cpu_intruders.scan(io, cpu_intruders.isolated_cpus(io))
    assert found == [
        {"pid": 300, "comm": "sshd", "unit": "ssh.service", "cpus": "2-7", "last_cpu": 4},
        {"pid": 301, "comm": "backup", "unit": "session-3.scope", "cpus": "6", "last_cpu": 6},
    ]


def test_drift_rows_of_kind_cpu_intruder(tmp_path):
    root = host(tmp_path)
    state = binding.gather(LiveHostIO(str(root)), host_root=str(root))
    rows = [r for r in binding.drift(state) if r["kind"] == drift_kinds.CPU_INTRUDER]
    assert [r["evidence"] for r in rows] == [
        "pid 300 (sshd, ssh.service) may run on worker CPUs 2-7 (last ran on CPU 4)",
        "pid 301 (backup, session-3.scope) may run on worker CPUs 6 (last ran on CPU 6)",
    ]
    assert "restart ssh.service" in rows[0]["fix"]


def test_no_partition_no_scan(tmp_path):
    root = host(tmp_path)
    (root / "var/lib/npuops/cpu_partition.json").unlink()
    state = binding.gather(LiveHostIO(str(root)), host_root=str(root))
    assert "cpu_intruders" not in state and binding.drift(state) == []


def test_the_binders_reader_finds_this_process_on_the_real_proc(tmp_path, monkeypatch):
    """The reconciler's metric (npuops_cpu_intruders) reads the real /proc through the binder's
    own reader: this test process, in no vLLM tree, is allowed on its own CPUs."""
    import os
    from ansible_collections.npuops.fleet.plugins.module_utils.standalone import binder

    state = tmp_path / "cpu_partition.json"
    mine = sorted(os.sched_getaffinity(0))
    state.write_text(json.dumps({"isolated": ",".join(str(c) for c in mine)}))
    monkeypatch.setattr(cpu_intruders, "STATE_FILE", str(state))
    isolated = cpu_intruders.isolated_cpus(binder._ProcReader)
    assert isolated == set(mine)
    found = cpu_intruders.scan(binder._ProcReader, isolated)
    assert os.getpid() in [p["pid"] for p in found]
