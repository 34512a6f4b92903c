# -*- coding: utf-8 -*-
"""Test helpers shared by every test file (import by plain name: ``from helpers import ...``).

- ``REPO``, ``FIXTURES`` (tests/fixtures/real), ``SNAPSHOTS`` (tests/snapshots)
- ``fixture_text(rel)``: a real fixture with its ``# Source:`` first line stripped
- ``run_module(name, args, check=False, diff=False, env=None, fqcn=None)``: runs
  ``npuops.fleet.<name>`` (or ``fqcn``) through a real ``ansible-playbook`` on localhost and
  returns the task result dict (``failed``/``msg`` included, never raises on module failure)
- ``run_playbook(path, inventory=None, extra_args=())``: runs a playbook, returns CompletedProcess
"""

import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "real")
SNAPSHOTS = os.path.join(REPO, "tests", "snapshots")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
BIN = os.path.dirname(sys.executable)


def fixture_text(rel):
    """Text of tests/fixtures/real/<rel> without its '# Source:' first line."""
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        text = handle.read()
    if text.startswith("# Source:"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text


def ansible_env(**extra):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "PATH": BIN + os.pathsep + env.get("PATH", ""),
    })
    env.update(extra)
    return env


def run_module(name, args, check=False, diff=False, env=None, fqcn=None):
    """Run npuops.fleet.<name> with ``args`` through ansible-playbook; return its result.

    ``fqcn`` runs any other module instead (e.g. ``ansible.builtin.stat``); ``name`` is then
    ignored. The result carries ``failed``/``msg`` on module failure rather than raising.
    """
    action = fqcn or "npuops.fleet." + name
    play = [{
        "hosts": "localhost", "gather_facts": False, "connection": "local",
        "tasks": [{"name": "under test", action: args,
                   "register": "r", "ignore_errors": True},
                  {"name": "emit", "ansible.builtin.copy": {
                      "content": "{{ r | to_json }}", "dest": "{{ out_path }}"}, "check_mode": False,
                   "diff": False}],
    }]
    with tempfile.TemporaryDirectory() as tmp:
        pb = os.path.join(tmp, "play.yml")
        out = os.path.join(tmp, "result.json")
        with open(pb, "w") as handle:
            json.dump(play, handle)
        cmd = [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", pb,
               "-e", json.dumps({"out_path": out})]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        proc = subprocess.run(cmd, env=ansible_env(**(env or {})), cwd=tmp,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              check=False)
        if not os.path.exists(out):
            raise AssertionError("ansible-playbook failed before the module ran:\n" + proc.stdout)
        with open(out) as handle:
            return json.load(handle)


def run_playbook(path, inventory=None, extra_args=(), env=None, cwd=None):
    cmd = [os.path.join(BIN, "ansible-playbook"), path]
    if inventory:
        cmd[1:1] = ["-i", inventory]
    cmd.extend(extra_args)
    return subprocess.run(cmd, env=ansible_env(**(env or {})), cwd=cwd or REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)


def irq_sandbox(root, interrupts, msi, affinity="0-3"):
    """Build the host paths the IRQ code reads under ``root`` (a pathlib.Path): proc/interrupts,
    sys/bus/pci/devices/<bus>/msi_irqs/<n> for ``msi`` ({bus: [irq, ...]}) and
    proc/irq/<n>/smp_affinity_list = ``affinity`` for every IRQ. Returns ``root``."""
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "interrupts").write_text(interrupts)
    for bus, irqs in msi.items():
        msi_dir = root / "sys" / "bus" / "pci" / "devices" / bus / "msi_irqs"
        msi_dir.mkdir(parents=True)
        for number in irqs:
            (msi_dir / str(number)).write_text("msi\n")
            irq_dir = root / "proc" / "irq" / str(number)
            irq_dir.mkdir(parents=True, exist_ok=True)
            (irq_dir / "smp_affinity_list").write_text(affinity + "\n")
    return root
