# -*- coding: utf-8 -*-
"""Run the collection through a real ``ansible-playbook`` (integration tests only).

- ``ansible_env(**extra)``: the environment ansible-playbook runs with (the collection from
  .cache/collections, the venv's Python, no colour, no retry files)
- ``run_module(name, args, check=False, diff=False, env=None, fqcn=None)``: runs
  ``npuops.fleet.<name>`` (or ``fqcn``) through a real ``ansible-playbook`` on localhost and
  returns the task result dict (``failed``/``msg`` included, never raises on module failure)
- ``run_playbook(path, inventory=None, extra_args=(), env=None, cwd=None)``: runs a playbook,
  returns the CompletedProcess (stdout and stderr together in ``stdout``)
"""

import json
import os
import subprocess
import sys
import tempfile

from npuops_testing import COLLECTIONS, REPO

BIN = os.path.dirname(sys.executable)


def ansible_env(**extra):
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
            "PATH": BIN + os.pathsep + env.get("PATH", ""),
        }
    )
    env.update(extra)
    return env


def run_module(name, args, check=False, diff=False, env=None, fqcn=None):
    """Run npuops.fleet.<name> with ``args`` through ansible-playbook; return its result.

    ``fqcn`` runs any other module instead (e.g. ``ansible.builtin.stat``); ``name`` is then
    ignored. The result carries ``failed``/``msg`` on module failure rather than raising.
    """
    action = fqcn or "npuops.fleet." + name
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "connection": "local",
            "tasks": [
                {"name": "under test", action: args, "register": "r", "ignore_errors": True},
                {
                    "name": "emit",
                    "ansible.builtin.copy": {"content": "{{ r | to_json }}", "dest": "{{ out_path }}"},
                    "check_mode": False,
                    "diff": False,
                },
            ],
        }
    ]
    with tempfile.TemporaryDirectory() as tmp:
        pb = os.path.join(tmp, "play.yml")
        out = os.path.join(tmp, "result.json")
        with open(pb, "w") as handle:
            json.dump(play, handle)
        cmd = [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", pb, "-e", json.dumps({"out_path": out})]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        proc = subprocess.run(
            cmd,
            env=ansible_env(**(env or {})),
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        if not os.path.exists(out):
            raise AssertionError("ansible-playbook failed before the module ran:\n" + proc.stdout)
        with open(out) as handle:
            return json.load(handle)


def run_playbook(path, inventory=None, extra_args=(), env=None, cwd=None):
    cmd = [os.path.join(BIN, "ansible-playbook"), path]
    if inventory:
        cmd[1:1] = ["-i", inventory]
    cmd.extend(extra_args)
    return subprocess.run(
        cmd,
        env=ansible_env(**(env or {})),
        cwd=cwd or REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
