# -*- coding: utf-8 -*-
"""Role cpu_binding: plan into npuops_plan, IRQ affinity written under the sandbox root,
idempotent, check mode writes nothing, the irqbalance handler never touches services in a
sandbox, and hosts without accelerators skip IRQ work."""

import json

import pytest

from npuops_testing.fleet import make_fleet, need, play, recap, written
from npuops_testing.runner import run_playbook

SNAP = "a2-910b3x8"


def dump_plan(tmp_path):
    return {
        "name": "Dump the plan",
        "ansible.builtin.copy": {
            "content": "{{ npuops_plan | to_json }}",
            "dest": str(tmp_path / "plan-{{ inventory_hostname }}.json"),
        },
        "changed_when": False,
    }


def cpus(cpulist):
    out = set()
    for part in (cpulist or "").split(","):
        if part:
            lo, dummy, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


@pytest.mark.slow
def test_plan_and_irq_affinity_idempotent_in_sandbox(tmp_path):
    need(SNAP, "x86-none", "atlas300-310p")
    inv = make_fleet(
        tmp_path,
        {
            "a2": (
                SNAP,
                {"npuops_vllm_instances": [{"name": "a", "npus": [0, 1, 2, 3]}, {"name": "b", "npus": [4, 5, 6, 7]}]},
            ),
            "duo": (
                "atlas300-310p",
                {"npuops_vllm_instances": [{"name": "c0", "npus": [0, 1]}, {"name": "c1", "npus": [2, 3]}]},
            ),
            "none": ("x86-none", {}),
        },
    )
    pb = play(
        tmp_path,
        [{"name": "Bind", "ansible.builtin.import_role": {"name": "npuops.fleet.cpu_binding"}}, dump_plan(tmp_path)],
    )
    check = run_playbook(pb, inv, ["--check"])
    assert check.returncode == 0, check.stdout
    assert recap(check.stdout)["a2"]["changed"] > 0
    assert written(tmp_path, "a2", SNAP) == set()

    first = run_playbook(pb, inv)
    assert first.returncode == 0, first.stdout
    assert recap(first.stdout)["a2"]["changed"] > 0
    # The handler is notified but never touches a service in a sandbox root.
    handler = first.stdout.split("RUNNING HANDLER [npuops.fleet.cpu_binding : Restart irqbalance with")
    assert len(handler) == 2 and "changed: [a2]" not in handler[1].split("PLAY RECAP")[0]
    plan = json.loads((tmp_path / "plan-a2.json").read_text())
    assert plan["policy"] == "strict" and not plan["skipped"]
    assert sorted(plan["npus"]) == [str(i) for i in range(8)]
    pools = [cpus(plan["npus"][k]["pool"]) for k in plan["npus"]]
    assert sum(len(p) for p in pools) == len(set().union(*pools))  # disjoint
    assert set(plan["instances"]) == {"a", "b"}
    irq_files = sorted(f for f in written(tmp_path, "a2", SNAP) if f.startswith("/proc/irq/"))
    assert irq_files, written(tmp_path, "a2", SNAP)
    # Every IRQ now points at CPUs of the plan's IRQ sets.
    irq_cpus = set().union(*(cpus(plan["npus"][k].get("irq")) for k in plan["npus"]))
    root = tmp_path / "demo" / "a2" / "root"
    affinity = [
        cpus((root / rel.lstrip("/")).read_text().strip()) for rel in irq_files if rel.endswith("smp_affinity_list")
    ]
    assert affinity and all(a and a <= irq_cpus for a in affinity), (affinity, irq_cpus)
    assert not any(f.startswith("/proc/irq/") for f in written(tmp_path, "none", "x86-none"))
    # Atlas 300I Duo: a card's two chips share one PCI function and its IRQs; the lower logic
    # id keeps them (warned), the role does not fail.
    assert recap(first.stdout)["duo"]["failed"] == 0
    duo_irqs = sorted(f for f in written(tmp_path, "duo", "atlas300-310p") if f.startswith("/proc/irq/"))
    # two cards: each one sq and its two cq vectors (every completion vector is pinned)
    assert len(duo_irqs) == 6, duo_irqs
    assert "IRQ 1024 is shared by NPU0 (sq) and NPU1 (sq)" in " ".join(first.stdout.split())

    second = run_playbook(pb, inv)
    assert second.returncode == 0, second.stdout
    assert all(r["changed"] == 0 for r in recap(second.stdout).values()), second.stdout


@pytest.mark.slow
def test_policy_vllm_ascend_and_irq_disabled(tmp_path):
    need(SNAP)
    inv = make_fleet(
        tmp_path,
        {"a2": (SNAP, {"npuops_cpu_policy": "vllm_ascend", "npuops_irq_enabled": False, "npuops_npus": [0, 1]})},
    )
    pb = play(
        tmp_path,
        [{"name": "Bind", "ansible.builtin.include_role": {"name": "npuops.fleet.cpu_binding"}}, dump_plan(tmp_path)],
    )
    proc = run_playbook(pb, inv)
    assert proc.returncode == 0, proc.stdout
    plan = json.loads((tmp_path / "plan-a2.json").read_text())
    assert plan["policy"] == "vllm_ascend"
    assert sorted(plan["npus"]) == ["0", "1"]
    assert written(tmp_path, "a2", SNAP) == set()


NOTE = "No IRQ pinned: no vLLM instance in the plan uses a device"


def state_devices(tmp_path, host):
    path = tmp_path / "demo" / host / "root" / "var/lib/npuops/irq-state.json"
    return sorted(set(r["device"] for r in json.loads(path.read_text())["irqs"]))


@pytest.mark.slow
def test_irq_devices_instances_pins_only_what_instances_use(tmp_path):
    need(SNAP, "dgx-a100")
    inv = make_fleet(
        tmp_path,
        {
            "idle": (SNAP, {}),
            "half": (SNAP, {"npuops_vllm_instances": [{"name": "a", "npus": [0, 1]}]}),
            "gpu": ("dgx-a100", {}),
        },
    )
    pb = play(tmp_path, [{"name": "Bind", "ansible.builtin.import_role": {"name": "npuops.fleet.cpu_binding"}}])
    check = run_playbook(pb, inv, ["--check", "--diff"])
    assert check.returncode == 0, check.stdout
    assert recap(check.stdout)["idle"]["changed"] == 0 and recap(check.stdout)["gpu"]["changed"] == 0

    first = run_playbook(pb, inv)
    assert first.returncode == 0, first.stdout
    text = " ".join(first.stdout.split())
    # one short line (ansible shows a warning two hosts give once), not the NIC warning wall
    assert text.count(NOTE) == 1, first.stdout
    assert "no spare CPU on the NIC's NUMA node" not in text
    assert not any(f.startswith(("/proc/irq/", "/var/lib/npuops")) for f in written(tmp_path, "idle", SNAP))
    assert not any(f.startswith(("/proc/irq/", "/var/lib/npuops")) for f in written(tmp_path, "gpu", "dgx-a100"))
    half = written(tmp_path, "half", SNAP)
    assert any(f.startswith("/proc/irq/") for f in half), half
    assert state_devices(tmp_path, "half") == [0, 1]
    second = run_playbook(pb, inv)
    assert second.returncode == 0, second.stdout
    assert all(r["changed"] == 0 for r in recap(second.stdout).values()), second.stdout

    # all: an explicit choice pins every device of a host without instances
    every = run_playbook(pb, inv, ["-e", "npuops_irq_devices=all", "--limit", "idle"])
    assert every.returncode == 0, every.stdout
    assert state_devices(tmp_path, "idle") == list(range(8))

    # the instance is gone: what the earlier run pinned for it is taken back
    gone = run_playbook(pb, inv, ["-e", json.dumps({"npuops_vllm_instances": []}), "--limit", "half"])
    assert gone.returncode == 0, gone.stdout
    assert recap(gone.stdout)["half"]["changed"] > 0
    assert state_devices(tmp_path, "half") == []
    root = tmp_path / "demo" / "half" / "root"
    config = [p for p in ("etc/default/irqbalance", "etc/sysconfig/irqbalance") if (root / p).exists()]
    assert config and "--banirq" not in (root / config[0]).read_text()
    again = run_playbook(pb, inv, ["-e", json.dumps({"npuops_vllm_instances": []}), "--limit", "half"])
    assert recap(again.stdout)["half"]["changed"] == 0, again.stdout
