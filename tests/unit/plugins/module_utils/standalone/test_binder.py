# -*- coding: utf-8 -*-
"""The binder (standalone/): its parsers, and the zipapp the module installs run on real
processes of this machine (CPUs 0 and 1)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.standalone import rules, smi, targets
from npuops_testing.binder import BINDER_APP as BINDER, allowed, gpu_plan
from npuops_testing.gpu_hosts import SHOWPIDGPUS

HAVE_TWO_CPUS = {0, 1} <= set(os.sched_getaffinity(0))
needs_two_cpus = pytest.mark.skipif(not HAVE_TWO_CPUS, reason="needs CPUs 0 and 1 allowed")

# Stand-in vLLM: spawns one worker per NPU; each worker runs threads named like the real
# ones (comm set through prctl(PR_SET_NAME)), writes its pid and tids, then waits.
STAND_IN_VLLM = r"""
import ctypes, json, os, subprocess, sys, threading, time
PR_SET_NAME = 15
libc = ctypes.CDLL(None, use_errno=True)

def set_name(name):
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()), 0, 0, 0)

def worker(out):
    ready = []
    names = ["acl_thread", "release_thread", "worker_thread", "release_thread_extra_long_name"]
    stop = threading.Event()
    def body(name):
        set_name(name)
        ready.append((name, threading.get_native_id() if hasattr(threading, "get_native_id")
                      else libc.syscall(186)))
        stop.wait(120)
    for name in names:
        threading.Thread(target=body, args=(name,), daemon=True).start()
    while len(ready) < len(names):
        time.sleep(0.01)
    set_name("VLLMWorker_TP0")
    with open(out + ".tmp", "w") as handle:
        json.dump({"pid": os.getpid(), "threads": dict(ready)}, handle)
    os.rename(out + ".tmp", out)
    stop.wait(120)

if sys.argv[1] == "worker":
    worker(sys.argv[2])
else:
    procs = [subprocess.Popen([sys.executable, __file__, "worker", "%s.%d" % (sys.argv[2], i)])
             for i in range(int(sys.argv[3]))]
    for p in procs:
        p.wait()
"""

PLAN = {
    "mode": "topo_affinity",
    "device_type": "A2",
    "numa_nodes": {"0": "0-1"},
    "npus": {
        "0": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "0", "acl": "1", "release": "0"},
        "1": {"pool": "0-1", "numa_nodes": [0], "irq": "0-1", "main": "1", "acl": "0", "release": "1"},
    },
    "npuops_instance": {
        "schema": 1,
        "name": "svc",
        "vendor": "ascend",
        "devices": [0, 1],
        "main": "0-1",
        "pool": "0-1",
        "binding": "host",
    },
}


def comm(pid, tid):
    with open("/proc/%d/task/%d/comm" % (pid, tid)) as handle:
        return handle.read().strip()


@pytest.fixture
def workers(tmp_path):
    """Start the stand-in vLLM with 2 workers; yields [{pid, threads}] and stops them."""
    script = tmp_path / "vllm_stand_in.py"
    script.write_text(STAND_IN_VLLM)
    prefix = str(tmp_path / "worker")
    proc = subprocess.Popen([sys.executable, str(script), "serve", prefix, "2"])
    infos = []
    try:
        deadline = time.time() + 20
        for index in range(2):
            path = "%s.%d" % (prefix, index)
            while not os.path.exists(path):
                assert time.time() < deadline, "stand-in workers did not start"
                assert proc.poll() is None, "stand-in vLLM died"
                time.sleep(0.05)
            with open(path) as handle:
                infos.append(json.load(handle))
        yield proc, infos
    finally:
        for info in infos:
            try:
                os.kill(info["pid"], signal.SIGKILL)
            except OSError:
                pass
        proc.kill()
        proc.wait()


def write_plan(tmp_path, plan=None):
    path = tmp_path / "svc.plan.json"
    path.write_text(json.dumps(PLAN if plan is None else plan))
    return str(path)


def run_binder(args, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [BINDER, "--json"] + args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        env=full_env,
        timeout=60,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


# pure parsers ----------------------------------------------------------------------------


def test_parse_npu_processes_reference_samples():
    chip = (
        "| NPU     Chip              | Process id    | Process name             |\n"
        "| 0       0                 | 3428811       | python3.10               |\n"
        "| 1       0                 | 3428818       | python3.10               |\n"
    )
    assert smi.parse_npu_processes(chip) == [(0, 0, 3428811, 0), (1, 0, 3428818, 0)]
    npu_only = (
        "| NPU ID                    | Process id    | Process name   |\n"
        "| 0                          | 2018733       | VLLMWorker_TP  |\n"
    )
    assert smi.parse_npu_processes(npu_only) == [(0, None, 2018733, 0)]
    messy = (
        "ignored before header\n| NPU Chip | Process id |\n| malformed |\n"
        "| xx yy | 1001 | vllm |\n| 0 0 | 1234 | vllm |\n+====+\n"
        "| No running processes found in NPU 3 |\n"
    )
    assert smi.parse_npu_processes(messy) == [(0, 0, 1234, 0)]


def test_real_a3_table_each_worker_belongs_to_its_big_allocation():
    """Real A3 host: workers also hold a 126 MB context on chip 2/0; home = most memory."""
    from npuops_testing import fixture_text

    rows = smi.parse_npu_processes(fixture_text("ascend/a3-16die_npu-smi-info_v25.3.rc1.txt"))
    assert (2, 0, 2268928, 126) in rows and (3, 1, 2268928, 58953) in rows
    npu_map = {n: {0: 2 * n, 1: 2 * n + 1} for n in range(8)}  # A3: two dies per card
    logic = [(smi.resolve_logic(npu_map, n, c), pid, mem) for n, c, pid, mem in rows]
    homes = smi.home_devices(logic)
    assert homes == {2268921: 4, 2268924: 5, 2268925: 6, 2268928: 7, 2905025: 8, 2906560: 9, 2907938: 10, 2909355: 11}


@pytest.mark.parametrize(
    "rel",
    [
        "ascend/a2-910b3x8_npu-smi-info_v23.0.7.txt",
        "ascend/a3-softshare-container_npu-smi-info.txt",
        "ascend/atlas800i-a2-910b4x8_npu-smi-info_v25.0.rc1.1.txt",
    ],
)
def test_real_idle_tables_show_no_workers(rel):
    """Real idle hosts: the device table above the process header is never read as workers."""
    from npuops_testing import fixture_text

    text = fixture_text(rel)
    assert "No running processes found" in text
    assert smi.parse_npu_processes(text) == []
    # the same table with one worker row appended is read
    assert smi.parse_npu_processes(text + "| 3       0                 | 4242 | python3 | 1 |\n") == [(3, 0, 4242, 1)]


def test_parse_npu_map_and_resolve():
    a3 = "NPU ID  Chip ID  Chip Logic ID  Chip Phy-ID Chip Name\n0 0 0 0 Ascend\n0 1 1 1 Ascend\n0 2 - - Mcu\n"
    npu_map = smi.parse_npu_map(a3)
    assert npu_map == {0: {0: 0, 1: 1}}
    assert smi.resolve_logic(npu_map, 0, 1) == 1
    assert smi.resolve_logic(npu_map, 0, None) is None  # ambiguous
    container = "NPU ID  Chip ID  Chip Logic ID  Chip Name\n8 0 0 Ascend\n9 0 1 Ascend\n"
    assert smi.resolve_logic(smi.parse_npu_map(container), 9, 0) == 1
    a5 = "NPU ID  Slot ID  Chip ID  Chip Phy-ID  Chip Name\n0 0 0 0 Ascend950DT\n2 2 0 2 X\n"
    assert smi.parse_npu_map(a5) == {0: {0: 0}, 2: {0: 2}}
    assert smi.resolve_logic({}, 3, None) == 3


def test_gpu_queries():
    assert smi.parse_gpu_bus_ids("0, 00000000:18:00.0\n1, 00000000:2A:00.0\n") == {"0000:18:00.0": 0, "0000:2a:00.0": 1}
    assert smi.parse_compute_apps("4242, 00000000:2A:00.0, 1024\nbad\n") == [(4242, "0000:2a:00.0", 1024)]
    assert smi.home_devices([(0, 7, 300), (1, 7, 70000), (1, 8, 5)]) == {7: 1, 8: 1}


def test_thread_role_uses_kernel_comm_truncation():
    target = {"main": [0], "acl": [1], "release": [2]}
    assert targets.desired_cpus("acl_thread", target) == ([1], "acl")
    assert targets.desired_cpus("release_thread", target) == ([2], "release")
    # a longer name as the kernel shows it (15 chars)
    assert targets.desired_cpus("release_thread_x"[:15], target) == ([2], "release")
    assert targets.desired_cpus("python3", target) == ([0], "main")


@pytest.mark.parametrize("text", ["0-", "a", "1,,2", "$(id)"])
def test_bad_cpulists_rejected(text):
    with pytest.raises(rules.BindError, match="NPU0 main: invalid cpulist item"):
        rules.parse_cpulist(text, "NPU0 main")


def test_plan_errors_are_messages(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    code, result, err = run_binder(["--plan", str(bad), "--pid", "1", "--npu", "0"])
    assert code == 1 and "not valid JSON" in result["failed"]
    assert "Traceback" not in err
    code, result, dummy = run_binder(
        ["--plan", write_plan(tmp_path), "--instance", "other", "--pid", "1", "--npu", "0"]
    )
    assert code == 1 and "not 'other'" in result["failed"]


# real processes --------------------------------------------------------------------------


@pytest.mark.slow
@needs_two_cpus
def test_binds_real_workers_and_second_run_is_unchanged(tmp_path, workers):
    _proc, infos = workers
    plan = write_plan(tmp_path)
    w0, w1 = infos
    args = [
        "--plan",
        plan,
        "--instance",
        "svc",
        "--pid",
        str(w0["pid"]),
        "--npu",
        "0",
        "--pid",
        str(w1["pid"]),
        "--npu",
        "1",
    ]
    code, result, log = run_binder(args)
    assert code == 0, log
    assert result["changed"] is True
    # worker 0: main 0, acl 1, release 0
    t0 = w0["threads"]
    assert allowed(w0["pid"], t0["acl_thread"]) == "1"
    assert allowed(w0["pid"], t0["release_thread"]) == "0"
    assert allowed(w0["pid"], t0["worker_thread"]) == "0"
    assert allowed(w0["pid"], w0["pid"]) == "0"
    # the long name is cut by the kernel and still matched
    assert comm(w0["pid"], t0["release_thread_extra_long_name"]) == "release_thread_"
    assert allowed(w0["pid"], t0["release_thread_extra_long_name"]) == "0"
    # worker 1: main 1, acl 0, release 1
    t1 = w1["threads"]
    assert allowed(w1["pid"], t1["acl_thread"]) == "0"
    assert allowed(w1["pid"], t1["release_thread"]) == "1"
    assert allowed(w1["pid"], t1["worker_thread"]) == "1"
    assert "The CPU allocation plan is as follows:" in log
    assert "NPU0: main=[0]  acl=[1]  release=[0]" in log
    assert "[migrate] NPU:0 -> NUMA [0]" in log
    assert all(w["migrated"] for w in result["workers"])

    code, again, log = run_binder(args)
    assert code == 0
    assert again["changed"] is False
    assert all(not w["changed"] and w["unchanged"] == w["threads"] for w in again["workers"])
    assert "[migrate]" not in log
    assert "binding unchanged" in log


@pytest.mark.slow
@needs_two_cpus
def test_check_mode_changes_nothing(tmp_path, workers):
    _proc, infos = workers
    w0 = infos[0]
    before = allowed(w0["pid"], w0["threads"]["acl_thread"])
    code, result, dummy = run_binder(["--plan", write_plan(tmp_path), "--check", "--pid", str(w0["pid"]), "--npu", "0"])
    assert code == 0 and result["changed"] is True
    assert allowed(w0["pid"], w0["threads"]["acl_thread"]) == before


@pytest.mark.slow
@needs_two_cpus
def test_discovers_workers_through_npu_smi_and_warns_without_migratepages(tmp_path, workers):
    proc, infos = workers
    bindir = tmp_path / "bin"
    bindir.mkdir()
    table = (
        "+----+\n| NPU   Chip  | Process id | Process name | Process memory(MB) |\n"
        "+====+\n| 0  0  | %d | python3 | 100 |\n| 1  0  | %d | python3 | 100 |\n"
        "| 1  0  | 1 | init-not-ours | 1 |\n" % (infos[0]["pid"], infos[1]["pid"])
    )
    npu_map = "NPU ID  Chip ID  Chip Logic ID  Chip Name\n0 0 0 Ascend\n1 0 1 Ascend\n"
    (bindir / "table.txt").write_text(table)
    (bindir / "map.txt").write_text(npu_map)
    smi = bindir / "npu-smi"
    smi.write_text(
        '#!/bin/sh\nif [ "$2" = "-m" ]; then /bin/cat "%s"; else /bin/cat "%s"; fi\n'
        % (bindir / "map.txt", bindir / "table.txt")
    )
    smi.chmod(0o755)
    code, result, log = run_binder(
        ["--plan", write_plan(tmp_path), "--timeout", "10", "--interval", "0.2"],
        env={"PATH": str(bindir), "MAINPID": str(proc.pid)},
    )
    assert code == 0, log
    # pid 1 is on NPU1 but not a descendant of MAINPID: left alone
    assert sorted(w["pid"] for w in result["workers"]) == sorted(i["pid"] for i in infos)
    assert allowed(infos[1]["pid"], infos[1]["threads"]["acl_thread"]) == "0"
    assert "The 'migratepages' command is not available" in log
    assert not any(w["migrated"] for w in result["workers"])


@pytest.mark.slow
@needs_two_cpus
def test_an_amd_instance_is_bound_from_rocm_smi(tmp_path, workers):
    """An AMD plan: the binder asks rocm-smi (the vendor row's process query), not npu-smi;
    rocm-smi puts the first worker on GPU1 and the second on GPU0, and each is pinned to its
    GPU's pool (GPU targets: every thread on the pool). A process on both GPUs is left alone."""
    proc, infos = workers
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "out.txt").write_text(
        SHOWPIDGPUS % {"w0": infos[0]["pid"], "w1": infos[1]["pid"], "both": proc.pid, "idle": 1}
    )
    tool = bindir / "rocm-smi"
    tool.write_text('#!/bin/sh\n[ "$1" = "--showpidgpus" ] && exec /bin/cat "%s"\nexit 2\n' % (bindir / "out.txt"))
    tool.chmod(0o755)
    code, result, log = run_binder(
        ["--plan", write_plan(tmp_path, gpu_plan("amd")), "--timeout", "10", "--interval", "0.2", "--no-migrate"],
        env={"PATH": str(bindir), "MAINPID": str(proc.pid)},
    )
    assert code == 0, log
    assert sorted((w["pid"], w["device"]) for w in result["workers"]) == sorted(
        [(infos[0]["pid"], 1), (infos[1]["pid"], 0)]
    )
    for name in ("acl_thread", "release_thread", "worker_thread"):
        assert allowed(infos[0]["pid"], infos[0]["threads"][name]) == "1"
        assert allowed(infos[1]["pid"], infos[1]["threads"][name]) == "0"
    assert "GPU1" in log and "NPU0" not in log


@pytest.mark.slow
def test_missing_worker_times_out_bounded(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "npu-smi"
    smi.write_text("#!/bin/sh\necho '| NPU Chip | Process id |'\n")
    smi.chmod(0o755)
    start = time.time()
    code, result, log = run_binder(
        ["--plan", write_plan(tmp_path), "--timeout", "1", "--interval", "0.2"], env={"PATH": str(bindir)}
    )
    assert time.time() - start < 15
    assert code == 2
    assert result["missing"] == [0, 1]
    assert "NPU0 shows no worker process" in log


@pytest.mark.slow
def test_gone_process_is_a_clear_error(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    code, result, log = run_binder(["--plan", write_plan(tmp_path), "--pid", str(proc.pid), "--npu", "0"])
    assert code == 1
    assert "process %d not found" % proc.pid in result["failed"]
    assert "Traceback" not in log


TABLE_ALPHABET = st.sampled_from(list("| 0123456789NPUChipProcess id-+=\nabc"))


@settings(max_examples=200, deadline=None)
@given(st.text(TABLE_ALPHABET, max_size=300))
def test_parsers_never_raise_on_garbage(text):
    for rows in (smi.parse_npu_processes(text), smi.parse_compute_apps(text)):
        assert all(isinstance(r[0], int) for r in rows)
    assert isinstance(smi.parse_npu_map("NPU ID  Chip ID  Chip Logic ID\n" + text), dict)
    assert isinstance(smi.parse_gpu_bus_ids(text), dict)
