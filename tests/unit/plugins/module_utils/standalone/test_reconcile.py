# -*- coding: utf-8 -*-
"""The reconcile side of the binder: resident memory per NUMA node from numa_maps, IRQs pinned
again from the state file npu_irq_affinity writes, and the textfile metrics of a run."""

import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.standalone import irqs, metrics, procs
from npuops_testing import REPO
from npuops_testing.binder import PLAN, allowed, build_binder, stand_in_tree

NUMA_MAPS = os.path.join(REPO, "tests", "fixtures", "numa_maps")
PROMTOOL = shutil.which("promtool")


def _text(name):
    with open(os.path.join(NUMA_MAPS, name)) as handle:
        return handle.read()


def test_memory_by_node_weights_pages_by_their_size(monkeypatch):
    monkeypatch.setattr(procs, "read", lambda path, limit=0: _text("two-node-worker.txt"))
    nodes = procs.memory_by_node(1234)
    four_k = 4096
    assert nodes == {0: (120 + 131072 + 100) * four_k, 1: 131072 * four_k + 1024 * 2048 * 1024 + 8 * four_k}
    assert procs.remote_ratio(nodes, 1) == round(1 - nodes[1] / float(sum(nodes.values())), 6)
    assert procs.remote_ratio(nodes, None) == 0.0 and procs.remote_ratio({}, 0) == 0.0


def test_memory_by_node_on_a_real_numa_maps_of_this_machine(monkeypatch):
    """Real kernel output (captured here with `cat /proc/self/numa_maps`), then a live process."""
    text = _text("this-machine-cat.txt")
    pages = sum(int(f[3:]) for line in text.splitlines() for f in line.split() if f.startswith("N0="))
    with monkeypatch.context() as patch:
        patch.setattr(procs, "read", lambda path, limit=0: text)
        assert procs.memory_by_node(1) == {0: pages * 4096}
    nodes = procs.memory_by_node(os.getpid())
    assert nodes and all(isinstance(n, int) and b > 0 for n, b in nodes.items())
    assert procs.memory_by_node(2**22 + 7) is None  # no such process


def _irq_sandbox(tmp_path, affinity):
    for irq, cpus in affinity.items():
        folder = tmp_path / "irq" / str(irq)
        folder.mkdir(parents=True)
        (folder / "smp_affinity_list").write_text(cpus + "\n")
    state = tmp_path / "irq-state.json"
    state.write_text(
        json.dumps(
            {
                "irqs": [
                    {"irq": 101, "device": 0, "role": "sq", "cpus": "0-1"},
                    {"irq": 102, "device": 0, "role": "cq", "cpus": "0-1"},
                    {"irq": 201, "device": 1, "role": "sq", "cpus": "2-3"},
                ]
            }
        )
    )
    return str(state)


def test_irq_reconcile_pins_moved_irqs_again_and_only_ours(tmp_path, monkeypatch):
    monkeypatch.setattr(irqs, "PROC_IRQ", str(tmp_path / "irq"))
    state = _irq_sandbox(tmp_path, {101: "0-1", 102: "5", 201: "7"})
    entries = irqs.load_state(state, devices=[0])
    assert [e["irq"] for e in entries] == [101, 102]
    rows = irqs.reconcile(entries, check=True)
    assert [(r["irq"], r["drift"]) for r in rows] == [(101, False), (102, True)]
    assert (tmp_path / "irq/102/smp_affinity_list").read_text() == "5\n"  # check: unchanged
    rows = irqs.reconcile(entries)
    assert (tmp_path / "irq/102/smp_affinity_list").read_text() == "0-1\n"
    assert (tmp_path / "irq/201/smp_affinity_list").read_text() == "7\n"  # not this instance's
    assert not any(r["drift"] for r in irqs.reconcile(entries, check=True))


def test_irq_reconcile_refuses_a_hard_linked_target(tmp_path, monkeypatch):
    monkeypatch.setattr(irqs, "PROC_IRQ", str(tmp_path / "irq"))
    state = _irq_sandbox(tmp_path, {101: "3", 102: "0-1", 201: "2-3"})
    outside = tmp_path / "outside"
    outside.write_text("3\n")
    target = tmp_path / "irq/101/smp_affinity_list"
    target.unlink()
    os.link(str(outside), str(target))
    (row,) = [r for r in irqs.reconcile(irqs.load_state(state, [0])) if r["irq"] == 101]
    assert "has 2 hard links" in row["error"]
    assert outside.read_text() == "3\n"


@pytest.mark.parametrize(
    "body,needle",
    [
        ("{", "not valid JSON"),
        ('{"irqs": [{"irq": "7; rm -rf /"}]}', "not an IRQ entry"),
        ('{"irqs": [{"irq": 7, "cpus": "0-99999"}]}', "beyond"),
    ],
)
def test_irq_state_errors_are_messages(tmp_path, body, needle):
    path = tmp_path / "state.json"
    path.write_text(body)
    with pytest.raises(irqs.BindError, match=needle):
        irqs.load_state(str(path))


def test_missing_irq_state_file_means_nothing_to_reconcile(tmp_path):
    assert irqs.load_state(str(tmp_path / "absent.json")) == []


SAMPLES = [
    ("npuops_binding_drift_threads", [("instance", "svc"), ("device", "NPU0"), ("role", "acl")], 1),
    ("npuops_binding_threads", [("instance", "svc"), ("device", "NPU0"), ("role", "acl")], 1),
    ("npuops_irq_drift", [("instance", "svc"), ("device", 0), ("irq", 102)], 1),
    ("npuops_worker_remote_memory_ratio", [("instance", "svc"), ("device", "NPU0")], 0.25),
    ("npuops_instance_workers_missing", [("instance", 'we"ird\\name')], 0),
    ("npuops_binder_last_run_success", [("instance", "svc")], 1),
    ("npuops_binder_last_run_timestamp_seconds", [("instance", "svc")], 1764560000.0),
]


def test_metrics_text_and_atomic_file(tmp_path):
    text = metrics.render(SAMPLES)
    assert text.count("# TYPE ") == 7 and text.endswith("\n")
    assert 'npuops_irq_drift{instance="svc",device="0",irq="102"} 1' in text
    assert 'instance="we\\"ird\\\\name"' in text
    path = metrics.write(str(tmp_path), "svc", SAMPLES)
    assert os.path.basename(path) == "npuops_svc.prom"
    assert sorted(os.listdir(str(tmp_path))) == ["npuops_svc.prom"]  # no temporary left
    with pytest.raises(ValueError):
        metrics.write(str(tmp_path), "../x", SAMPLES)


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian package prometheus) not installed")
def test_metrics_pass_promtool(tmp_path):
    path = metrics.write(str(tmp_path), "svc", SAMPLES)
    with open(path, "rb") as handle:
        proc = subprocess.run(
            [PROMTOOL, "check", "metrics"], stdin=handle, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False
        )
    assert proc.returncode == 0, proc.stdout.decode()


@pytest.mark.slow
@pytest.mark.skipif(not {0, 1} <= set(os.sched_getaffinity(0)), reason="needs CPUs 0 and 1")
def test_reconcile_run_finds_a_moved_thread_pins_it_and_reports_it(tmp_path):
    binder = build_binder(tmp_path)
    plan = tmp_path / "svc.plan.json"
    plan.write_text(json.dumps(PLAN))
    env = dict(os.environ, PATH=str(tmp_path))
    base = [binder, "--json", "--plan", str(plan), "--once", "--no-migrate", "--metrics-dir", str(tmp_path)]
    with stand_in_tree(tmp_path, workers=2) as tree:
        first = subprocess.run(
            base + ["--root-pid", str(tree.main)], env=env, stdout=subprocess.PIPE, universal_newlines=True, check=False
        )
        assert first.returncode == 0
        w0 = tree.workers[0]
        acl = w0.threads["acl_thread"]
        os.sched_setaffinity(acl, {1})  # a hand-run taskset moves the ACL thread
        second = subprocess.run(
            base + ["--root-pid", str(tree.main)], env=env, stdout=subprocess.PIPE, universal_newlines=True, check=False
        )
        result = json.loads(second.stdout)
        assert second.returncode == 0 and result["changed"] is True
        assert allowed(w0.pid, acl) == "0"
        prom = (tmp_path / "npuops_svc.prom").read_text()
        assert 'npuops_binding_drift_threads{instance="svc",device="NPU0",role="acl"} 1' in prom
        assert 'npuops_binding_drift_threads{instance="svc",device="NPU0",role="main"} 0' in prom
        assert 'npuops_worker_remote_memory_ratio{instance="svc",device="NPU0"} 0.0' in prom
        if PROMTOOL:  # every metrics file a test writes passes promtool
            check = subprocess.run(
                [PROMTOOL, "check", "metrics"],
                input=prom.encode(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                check=False,
            )
            assert check.returncode == 0, check.stdout.decode()
        third = subprocess.run(
            base + ["--root-pid", str(tree.main)], env=env, stdout=subprocess.PIPE, universal_newlines=True, check=False
        )
        assert json.loads(third.stdout)["changed"] is False
        assert 'role="acl"} 0' in (tmp_path / "npuops_svc.prom").read_text()


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian package prometheus) not installed")
def test_sample_alert_rules_pass_promtool_and_use_our_metric_names():
    rules_file = os.path.join(REPO, "docs", "alerts", "npuops.rules.yml")
    proc = subprocess.run(
        [PROMTOOL, "check", "rules", rules_file], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False
    )
    assert proc.returncode == 0, proc.stdout.decode()
    with open(rules_file) as handle:
        text = handle.read()
    used = set(name for name, _help in metrics.HELP if name in text)
    assert used >= {
        "npuops_binding_drift_threads",
        "npuops_irq_drift",
        "npuops_worker_remote_memory_ratio",
        "npuops_binder_last_run_timestamp_seconds",
    }


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian package prometheus) not installed")
def test_alert_rules_tell_a_stopped_instance_from_a_dead_worker(tmp_path):
    """promtool's own rule evaluation: npuops_instance_up 0 fires NpuopsInstanceDown only."""
    import shutil

    shutil.copy(os.path.join(REPO, "docs", "alerts", "npuops.rules.yml"), str(tmp_path))
    shutil.copy(os.path.join(REPO, "tests", "fixtures", "alerts", "npuops.rules.test.yml"), str(tmp_path))
    proc = subprocess.run(
        [PROMTOOL, "test", "rules", "npuops.rules.test.yml"],
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout.decode()
