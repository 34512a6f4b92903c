# -*- coding: utf-8 -*-
"""Two npu_irq_affinity runs at once (two instances' tasks, two playbooks) and a binder's IRQ
reconcile pass landing while a run is under way: real files in a sandbox root, the module's
body run in separate processes.

- the irqbalance environment file: each run reads it, adds its ``--banirq`` entries and writes
  it back; without the lock one run's entries were lost in most trials;
- the ``/proc/irq`` write and its state-file row: a reconcile pass between the two read the
  old row and pinned the IRQ back to the old CPUs until its next pass."""

import json
import multiprocessing
import os
import threading
import time

from ansible_collections.npuops.fleet.plugins.module_utils.host import locks
from ansible_collections.npuops.fleet.plugins.module_utils.parse import irqbalance_conf
from ansible_collections.npuops.fleet.plugins.module_utils.standalone import irqs
from ansible_collections.npuops.fleet.plugins.modules import npu_irq_affinity
from npuops_testing.sandbox import irq_sandbox

TRIALS = 20
NPUS = 8
BUS = ["0000:%02x:00.0" % (0x10 + n) for n in range(NPUS)]
INTERRUPTS = "           CPU0       CPU1       CPU2       CPU3\n" + "".join(
    " %d:   1   0   0   0  ITS-MSI %d Edge      %s\n" % (irq, irq, name)
    for n in range(NPUS)
    for irq, name in ((1000 + 10 * n, "sq_send_trigger_irq"), (1001 + 10 * n, "cq_update_irq"))
)
MSI = dict((BUS[n], [1000 + 10 * n, 1001 + 10 * n]) for n in range(NPUS))
PLAN = {
    "mode": "topo_affinity",
    "device_type": "A2",
    "skipped": False,
    "numa_nodes": {"0": "0-1", "1": "2-3"},
    "npus": dict((str(n), {"pool": "2-3", "numa_nodes": [1], "irq": "2-3", "main": "3"}) for n in range(NPUS)),
}
TOPOLOGY = {
    "npus": [{"logic_id": n, "bus_id": BUS[n]} for n in range(NPUS)],
    "irqbalance": {"installed": True, "active": True},
}
STATE = "/var/lib/npuops/irq-state.json"
CONFIG = "/etc/default/irqbalance"


class FakeModule(object):
    def __init__(self, **params):
        self.params = dict(
            plan=PLAN,
            topology=TOPOLOGY,
            npus=None,
            irqbalance="ban",
            irq_state=STATE,
            allow_foreign_plan=True,
            host_root="/",
            reserved_cpus=None,
        )
        self.params.update(params)
        self.check_mode = False


def _instance_run(root, npus, barrier):
    barrier.wait(10)
    npu_irq_affinity.pin_irqs(FakeModule(host_root=root, npus=npus))


def _banned(root):
    with open(root + CONFIG) as handle:
        parsed = irqbalance_conf.parse_config(handle.read(), CONFIG)
    return set(parsed["banned_irqs"])


def test_two_runs_at_once_never_lose_each_others_irqbalance_bans(tmp_path):
    """Two instances (NPUs 0-3 and 4-7) run at once, TRIALS times: every ban of both must be
    in the irqbalance file afterwards (before the lock: 14 to 20 trials of 20 lost entries)."""
    context = multiprocessing.get_context("fork")
    halves = [list(range(0, NPUS // 2)), list(range(NPUS // 2, NPUS))]
    expected = set(irq for irq_list in MSI.values() for irq in irq_list)
    lost = []
    for trial in range(TRIALS):
        root = str(irq_sandbox(tmp_path / str(trial), INTERRUPTS, MSI))
        os.makedirs(root + "/etc/default")
        barrier = context.Barrier(2)
        runs = [context.Process(target=_instance_run, args=(root, half, barrier)) for half in halves]
        for run in runs:
            run.start()
        for run in runs:
            run.join(60)
            assert run.exitcode == 0
        lost.append(len(expected - _banned(root)))
    print("irqbalance bans lost per trial: %s" % lost)
    assert lost == [0] * TRIALS


def test_a_reconcile_pass_in_the_window_never_pins_an_irq_back(tmp_path, monkeypatch):
    """A run moves NPU0's IRQs from CPU 2/3 to CPU 1; a reconcile pass starts after the
    /proc/irq write and before the state file is rewritten. It must wait for the run and then
    find nothing to pin back: the IRQs end on CPU 1 and the state file says so."""
    root = str(irq_sandbox(tmp_path / "root", INTERRUPTS, {BUS[0]: MSI[BUS[0]]}))
    first = npu_irq_affinity.pin_irqs(FakeModule(host_root=root, npus=[0], irqbalance="ignore"))
    assert first["changed"]
    monkeypatch.setattr(irqs, "PROC_IRQ", root + "/proc/irq")
    moved = dict(PLAN, npus=dict(PLAN["npus"], **{"0": dict(PLAN["npus"]["0"], irq="1")}))
    outcome = {}

    def reconcile_pass():
        outcome["rows"] = irqs.reconcile_state(root + STATE, [0])

    real_state_file = npu_irq_affinity.state_file

    def state_file_late(*args, **kwargs):
        # the IRQs are written: a reconcile pass lands here
        runner = threading.Thread(target=reconcile_pass)
        runner.start()
        runner.join(0.5)  # with the lock the pass waits for this run; without, it is done
        outcome["waited"] = runner.is_alive()
        outcome["runner"] = runner
        return real_state_file(*args, **kwargs)

    monkeypatch.setattr(npu_irq_affinity, "state_file", state_file_late)
    npu_irq_affinity.pin_irqs(FakeModule(host_root=root, npus=[0], irqbalance="ignore", plan=moved))
    outcome["runner"].join(30)
    for irq in MSI[BUS[0]]:
        with open("%s/proc/irq/%d/smp_affinity_list" % (root, irq)) as handle:
            assert handle.read().strip() == "1", "IRQ %d pinned back by the reconcile pass" % irq
    with open(root + STATE) as handle:
        assert set(r["cpus"] for r in json.load(handle)["irqs"]) == {"1"}
    assert outcome["waited"] and not any(r["drift"] for r in outcome["rows"])


def test_a_reconcile_pass_does_not_wait_forever_for_a_hung_run(tmp_path, monkeypatch):
    """A run that holds the state lock too long: the pass is skipped with one error row naming
    the lock, the IRQs are left alone."""
    root = str(irq_sandbox(tmp_path / "root", INTERRUPTS, {BUS[0]: MSI[BUS[0]]}))
    npu_irq_affinity.pin_irqs(FakeModule(host_root=root, npus=[0], irqbalance="ignore"))
    monkeypatch.setattr(irqs, "PROC_IRQ", root + "/proc/irq")
    monkeypatch.setattr(irqs, "LOCK_TIMEOUT", 0.2)
    lock = os.open(root + "/var/lib/npuops/" + locks.lock_name("irq-state.json"), os.O_RDWR)
    try:
        locks.hold(lock, "lock", STATE, 1)
        started = time.monotonic()
        rows = irqs.reconcile_state(root + STATE, [0])
        assert time.monotonic() - started < 5
    finally:
        os.close(lock)
    assert len(rows) == 1 and rows[0]["irq"] is None and "held this lock" in rows[0]["error"]


def test_a_planted_lock_symlink_skips_the_pass_and_writes_nothing_through_it(tmp_path, monkeypatch):
    root = str(irq_sandbox(tmp_path / "root", INTERRUPTS, {BUS[0]: MSI[BUS[0]]}))
    npu_irq_affinity.pin_irqs(FakeModule(host_root=root, npus=[0], irqbalance="ignore"))
    monkeypatch.setattr(irqs, "PROC_IRQ", root + "/proc/irq")
    lock = root + "/var/lib/npuops/" + locks.lock_name("irq-state.json")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.remove(lock)
    os.symlink(str(victim), lock)
    rows = irqs.reconcile_state(root + STATE, [0])
    assert len(rows) == 1 and rows[0]["irq"] is None and "symlink" in rows[0]["error"]
    assert victim.read_text() == "keep"


def test_a_state_file_no_run_has_locked_yet_is_reconciled_without_a_lock(tmp_path, monkeypatch):
    root = str(irq_sandbox(tmp_path / "root", INTERRUPTS, {BUS[0]: MSI[BUS[0]]}))
    npu_irq_affinity.pin_irqs(FakeModule(host_root=root, npus=[0], irqbalance="ignore"))
    os.remove(root + "/var/lib/npuops/" + locks.lock_name("irq-state.json"))
    monkeypatch.setattr(irqs, "PROC_IRQ", root + "/proc/irq")
    with open("%s/proc/irq/%d/smp_affinity_list" % (root, MSI[BUS[0]][0]), "w") as handle:
        handle.write("0-3\n")  # irqbalance moved it
    rows = irqs.reconcile_state(root + STATE, [0])
    assert [r["drift"] for r in rows] == [True, False] and not any(r["error"] for r in rows)
    assert not os.path.exists(root + "/var/lib/npuops/" + locks.lock_name("irq-state.json"))
