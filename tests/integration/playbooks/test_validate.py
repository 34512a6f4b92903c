# -*- coding: utf-8 -*-
"""Every configuration mistake is refused before anything is written: site.yml and an
"existing provisioning" playbook that imports the roles, on a recorded A3 (16 dies) and a recorded
H100 host. Each case: refused, the message names the npuops_* variable, and both sandbox trees
are unchanged (a recursive listing with the hash of every file, before and after)."""

import hashlib
import json
import os

import pytest

from npuops_testing import REPO
from npuops_testing.fleet import make_fleet, need, recap
from npuops_testing.runner import run_playbook

SITE = os.path.join(REPO, "playbooks", "site.yml")
CMD = ["vllm", "serve", "/models/m"]
HOSTS = {"a3": "a3-16die", "h100": "h100-numaoff"}
REUSE = [
    {
        "name": "Existing provisioning",
        "hosts": "all",
        "gather_facts": False,
        "tasks": [
            {"name": "Facts", "ansible.builtin.import_role": {"name": "npuops.fleet.npu_facts"}},
            {"name": "Binding", "ansible.builtin.import_role": {"name": "npuops.fleet.cpu_binding"}},
            {"name": "Launch", "ansible.builtin.import_role": {"name": "npuops.fleet.vllm_launch"}},
        ],
    }
]


def tree(root):
    """{relative path: sha256 or 'dir'} of everything under ``root``."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(dirpath, name), root)] = "dir"
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root)] = hashlib.sha256(handle.read()).hexdigest()
    return out


def fleet(tmp_path, extra):
    need(*HOSTS.values())
    hosts = {}
    for name, snap in HOSTS.items():
        hvars = {"npuops_softshare_enabled": name == "a3"}
        hvars.update(extra(name) if callable(extra) else extra)
        hosts[name] = (snap, hvars)
    return make_fleet(tmp_path, hosts)


def inst(name="a", **extra):
    out = {"name": name, "npus": [0, 1], "command": CMD}
    out.update(extra)
    return dict((k, v) for k, v in out.items() if v is not Ellipsis)


# (case, host vars, text every host's message holds)
MISTAKES = [
    (
        "duplicate names",
        {"npuops_vllm_instances": [inst("a"), inst("a", npus=[2, 3])]},
        "npuops_vllm_instances[1] (a): name 'a' is already used by npuops_vllm_instances[0]",
    ),
    (
        "invalid name, a valid one after",
        {"npuops_vllm_instances": [inst("dsv3 a"), inst("b", npus=[2, 3])]},
        "npuops_vllm_instances[0] (dsv3 a): name 'dsv3 a' must be",
    ),
    (
        "npus a string",
        {"npuops_vllm_instances": [inst(npus="0,1,2,3")]},
        "npuops_vllm_instances[0] (a): npus must be a list of integers",
    ),
    (
        "env null",
        {"npuops_vllm_instances": [inst(env={"X": None})]},
        "npuops_vllm_instances[0] (a): env.X: value must be a string",
    ),
    (
        "command a string",
        {"npuops_vllm_instances": [inst(command="vllm serve m")]},
        "npuops_vllm_instances[0] (a): command must be a non-empty list",
    ),
    (
        "command missing",
        {"npuops_vllm_instances": [inst(command=Ellipsis)]},
        "npuops_vllm_instances[0] (a): command is missing",
    ),
    ("unknown device id", {"npuops_vllm_instances": [inst(npus=[0, 99])]}, "npuops_vllm_instances[0] (a): "),
    (
        "device in two instances",
        {"npuops_vllm_instances": [inst("a"), inst("b", npus=[1, 2])]},
        "npuops_vllm_instances[1] (b): ",
    ),
    ("policy not a choice", {"npuops_cpu_policy": "fast", "npuops_vllm_instances": [inst()]}, "npuops_cpu_policy"),
    (
        "instance outside npuops_npus",
        {"npuops_npus": [0, 1, 2, 3], "npuops_vllm_instances": [inst(npus=[6])]},
        "npuops_npus restricts to [0, 1, 2, 3]",
    ),
    # five more
    ("name with a path", {"npuops_vllm_instances": [inst("../etc")]}, "name '../etc' must be"),
    (
        "env value a mapping",
        {"npuops_vllm_instances": [inst(env={"X": {"y": 1}})]},
        "env.X: value must be a string, a number or a boolean, got dict",
    ),
    ("binding not a choice", {"npuops_vllm_instances": [inst(binding="numa")]}, "npuops_vllm_instances"),
    (
        "relative dest",
        {"npuops_vllm_instances": [inst(dest="opt/npuops")]},
        "npuops_vllm_instances[0] (a): dest must be an absolute path",
    ),
    (
        "host env null",
        {"npuops_vllm_env": {"HF_HOME": None}, "npuops_vllm_instances": [inst()]},
        "npuops_vllm_env.HF_HOME: value must be a string",
    ),
    ("irqbalance not a choice", {"npuops_irqbalance": "off", "npuops_vllm_instances": [inst()]}, "npuops_irqbalance"),
    # what the argument specs let through, and the values against the host: the a3
    # host's soft-share stage wrote before the planner refused a list given for a cpulist
    (
        "cpulist given as a list",
        {"npuops_cpu_reserved": [0, 1], "npuops_vllm_instances": [inst()]},
        "npuops_cpu_reserved: must be a string, got a list [0, 1]; a cpulist is one string",
    ),
    (
        "cpulist that is not one",
        {"npuops_cpu_allowed": "0-3,x", "npuops_vllm_instances": [inst()]},
        "npuops_cpu_allowed: invalid cpulist item 'x' in '0-3,x'",
    ),
    (
        "CPU not on the host",
        {"npuops_cpu_reserved": "0-1,700", "npuops_vllm_instances": [inst()]},
        "npuops_cpu_reserved: CPU 700 is not on this host (its online CPUs are 0-",
    ),
    (
        "reserved leaves no CPU",
        {"npuops_cpu_allowed": "0-7", "npuops_cpu_reserved": "0-9", "npuops_vllm_instances": [inst()]},
        "npuops_cpu_reserved: 0-9 covers every CPU of npuops_cpu_allowed (0-7): nothing is left",
    ),
    (
        "unknown id in npuops_npus",
        {"npuops_npus": [0, 1, 99], "npuops_vllm_instances": [inst()]},
        " 99 is not on this host (its ",
    ),
    (
        "unknown RDMA NIC",
        {"npuops_nics": ["mlx5_99"], "npuops_vllm_instances": [inst()]},
        "npuops_nics: mlx5_99 is not an RDMA device of this host",
    ),
    (
        "a boolean for a string",
        {"npuops_k8s_kubelet_version": True, "npuops_vllm_instances": [inst()]},
        "npuops_k8s_kubelet_version: must be a string, got a boolean True",
    ),
    (
        "mode written unquoted",
        {"npuops_softshare_mode": 0o644, "npuops_vllm_instances": [inst()]},
        "npuops_softshare_mode: must be a quoted octal mode such as '0750', got the number 420; YAML "
        "reads an unquoted 0644 as 420; write the mode in quotes, e.g. '0644' or '420'",
    ),
    (
        "a timeout of 0",
        {"npuops_facts_timeout": 0, "npuops_vllm_instances": [inst()]},
        "npuops_facts_timeout: must be 1 or more, got 0",
    ),
    (
        "typo with strict variables",
        {"npuops_strict_variables": True, "npuops_vllm_instance": [inst()]},
        "npuops_vllm_instance is not a variable of npuops.fleet: no role reads it; did you mean npuops_vllm_instances?",
    ),
]


def failures_of(stdout, host):
    """The failure lines ansible-playbook printed for ``host`` (``fatal: [host]: FAILED! => {...}``,
    ``failed: [host] (item=...) => {...}``: one line each, the message JSON-escaped in it)."""
    heads = ("fatal: [%s]" % host, "failed: [%s]" % host)
    return "\n".join(line for line in stdout.splitlines() if line.startswith(heads))


@pytest.mark.slow
def test_site_refuses_every_mistake_and_writes_nothing(tmp_path):
    """One site.yml run over a fleet of 2 x len(MISTAKES) hosts: each mistake on its own A3 and
    H100 host (site.yml's tasks are per host, nothing runs once for the play), so each host's
    refusal and its untouched tree are checked as if it ran alone, for one playbook start."""
    need(*HOSTS.values())
    hosts, cases = {}, {}
    for index, (case, extra, needle) in enumerate(MISTAKES):
        for kind, snap in HOSTS.items():
            name = "m%02d-%s" % (index, kind)
            hvars = {"npuops_softshare_enabled": kind == "a3"}
            hvars.update(extra)
            hosts[name] = (snap, hvars)
            cases[name] = (case, needle)
    inv = make_fleet(tmp_path, hosts)
    roots = dict((h, str(tmp_path / "demo" / h / "root")) for h in hosts)
    before = dict((h, tree(r)) for h, r in roots.items())
    proc = run_playbook(SITE, inv)
    assert proc.returncode != 0, proc.stdout
    rec = recap(proc.stdout)
    # the message first and alone, not followed by the whole argument spec
    assert "argument_spec_data" not in proc.stdout
    assert proc.stdout.count("Validation of arguments failed") == 0
    wrong = []
    for host, (case, needle) in sorted(cases.items()):
        mine = failures_of(proc.stdout, host)
        if rec.get(host, {}).get("failed") != 1 or rec[host]["changed"] != 0:
            wrong.append("%s (%s): recap %s" % (case, host, rec.get(host)))
        if tree(roots[host]) != before[host]:
            wrong.append("%s (%s): its sandbox tree changed" % (case, host))
        if needle not in mine:
            wrong.append("%s (%s): %r not in its failure:\n%s" % (case, host, needle, mine[-3000:]))
        if case == "unknown device id":
            usable = {
                "a3": "NPU 99 is not usable: this host has [0..15]",
                "h100": "GPU 99 is not usable: this host has [0..7]",
            }[host.split("-", 1)[1]]
            if usable not in mine:
                wrong.append("%s (%s): %r not in its failure" % (case, host, usable))
        if case == "device in two instances" and "device 1 is also in npuops_vllm_instances[0]" not in mine:
            wrong.append("%s (%s): the other instance is not named" % (case, host))
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_reuse_playbook_accepts_migrate_and_refuses_before_writing(tmp_path):
    playbook = tmp_path / "reuse.yml"
    playbook.write_text(json.dumps(REUSE))
    inv = fleet(tmp_path, {"npuops_vllm_instances": [inst(migrate=False)]})
    good = run_playbook(str(playbook), inv)
    assert good.returncode == 0, good.stdout
    assert "Supported parameters include" not in good.stdout
    # a mistake in the instances is refused by the binding role's planner before the IRQs are
    # pinned (import npuops.fleet.validate first for every check and the variable's name)
    bad = tmp_path / "bad"
    bad.mkdir()
    inv = fleet(bad, {"npuops_vllm_instances": [inst("a"), inst("a", npus=[2, 3])]})
    roots = dict((h, str(bad / "demo" / h / "root")) for h in HOSTS)
    before = dict((h, tree(r)) for h, r in roots.items())
    proc = run_playbook(str(playbook), inv)
    assert proc.returncode != 0
    assert proc.stdout.count("name 'a' is already used by another instance") >= 2, proc.stdout
    assert dict((h, tree(r)) for h, r in roots.items()) == before


@pytest.mark.slow
def test_a_typo_in_a_variable_name_is_warned_with_the_nearest_name(tmp_path):
    inv = fleet(tmp_path, {"npuops_vllm_instance": [inst()]})
    proc = run_playbook(SITE, inv, ["--check"])
    assert proc.returncode == 0, proc.stdout
    assert (
        "npuops_vllm_instance is not a variable of npuops.fleet: no role reads it; did you mean npuops_vllm_instances?"
    ) in proc.stdout


@pytest.mark.slow
def test_the_documented_switches_are_known_variables(tmp_path):
    """npuops_k8s_node (product.md) was reported as unknown ("did you mean
    npuops_k8s_node_name?"); it, npuops_cpu_partition and npuops_strict_variables are known."""
    inv = fleet(
        tmp_path,
        {
            "npuops_k8s_node": False,
            "npuops_cpu_partition": False,
            "npuops_strict_variables": True,
            "npuops_vllm_instances": [inst()],
        },
    )
    proc = run_playbook(SITE, inv, ["--tags", "facts"])
    assert proc.returncode == 0, proc.stdout
    assert "is not a variable of npuops.fleet" not in proc.stdout


@pytest.mark.slow
def test_a_typo_in_the_play_vars_or_extra_vars_is_found_too(tmp_path):
    """Not only the inventory's variables: a play's ``vars:`` and ``-e`` are looked at too."""
    inv = fleet(tmp_path, {"npuops_vllm_instances": [inst()]})
    playbook = tmp_path / "own.yml"
    playbook.write_text(
        json.dumps(
            [
                {
                    "name": "Own play",
                    "hosts": "all",
                    "gather_facts": False,
                    "vars": {"npuops_cpu_reserverd": "0-1"},
                    "tasks": [{"name": "Check", "ansible.builtin.import_role": {"name": "npuops.fleet.validate"}}],
                }
            ]
        )
    )
    proc = run_playbook(str(playbook), inv, ["-e", json.dumps({"npuops_irq_enable": False})])
    assert proc.returncode == 0, proc.stdout
    # (Ansible shows a warning repeated for several hosts once)
    assert (
        "npuops_cpu_reserverd is not a variable of npuops.fleet: no role reads it; did you mean npuops_cpu_reserved?"
    ) in proc.stdout, proc.stdout
    assert (
        "npuops_irq_enable is not a variable of npuops.fleet: no role reads it; did you mean npuops_irq_enabled?"
    ) in proc.stdout, proc.stdout
    strict = run_playbook(str(playbook), inv, ["-e", json.dumps({"npuops_strict_variables": True})])
    assert strict.returncode != 0
    assert recap(strict.stdout)["a3"]["failed"] == 1 and recap(strict.stdout)["h100"]["failed"] == 1
