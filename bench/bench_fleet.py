#!/usr/bin/env python
"""Fleet-scale run: playbooks/site.yml over N simulated hosts (default 256, forks 16) against a
baseline playbook of the same shape made of ansible.builtin.ping tasks, in the same process run.

The inventory is generated from tests/snapshots (hosts cycle through the snapshots, each with
its own sandbox root in a temporary directory, local connection). Module invocations per host
are the task results the PLAY RECAP counts (ok + failed; skipped tasks run no module). Prints a
Markdown table; figures go in docs/performance.md under "## Fleet run".

Runs, in order: site.yml first run (writes), the ping baseline, site.yml again (no change),
then (unless --no-variants) the no-change run with the jsonfile fact cache cold (it fills the
cache) and warm (facts and cacheable plans read from it: npu_facts and the plan are skipped),
and with `strategy: free` (ANSIBLE_STRATEGY=free, no cache).

Usage: .venv/bin/python bench/bench_fleet.py [--hosts 256] [--forks 16] [--no-variants]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot  # noqa: E402

SNAPSHOTS = os.path.join(REPO, "tests", "snapshots")
SITE = os.path.join(REPO, "playbooks", "site.yml")
RECAP = re.compile(
    r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+"
    r"skipped=(\d+)"
)
# Example instances per snapshot family, as in inventories/demo.
TP4 = [
    {"name": "svc-a", "npus": [0, 1, 2, 3], "command": ["vllm", "serve", "/m", "-tp", "4"]},
    {"name": "svc-b", "npus": [4, 5, 6, 7], "command": ["vllm", "serve", "/m", "-tp", "4"]},
]
EXTRA = {
    "a3-16die": {
        "npuops_vllm_instances": [
            {"name": "svc", "npus": list(range(16)), "command": ["vllm", "serve", "/m", "-tp", "16"]}
        ]
    },
    "atlas300-310p": {"npuops_vllm_instances": [], "npuops_irq_enabled": False},
    "h100-cgroup": {"npuops_cpu_allowed": "0-95"},
    "x86-none": {"npuops_vllm_instances": []},
}


def recap(text):
    out = {}
    for line in text.split("PLAY RECAP", 1)[-1].splitlines():
        match = RECAP.match(line.strip())
        if match:
            out[match.group(1)] = [int(x) for x in match.groups()[1:]]
    return out


def env(forks, extra=None):
    e = dict(os.environ)
    e.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO, ".cache", "collections"),
            "ANSIBLE_FORKS": str(forks),
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "PATH": os.path.dirname(sys.executable) + os.pathsep + e.get("PATH", ""),
        }
    )
    e.update(extra or {})
    return e


def run(playbook, inventory, forks, extra=None):
    start = time.monotonic()
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory, playbook],
        env=env(forks, extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:])
        raise SystemExit("%s failed (rc=%d)" % (playbook, proc.returncode))
    return wall, recap(proc.stdout)


def build(tmp, nhosts):
    snaps = sorted(d for d in os.listdir(SNAPSHOTS) if os.path.isfile(os.path.join(SNAPSHOTS, d, "snapshot.yml")))
    hosts = {}
    for i in range(nhosts):
        snap = snaps[i % len(snaps)]
        name = "%s-%03d" % (snap, i)
        root = os.path.join(tmp, "roots", name)
        snapshot.copy_host_tree(os.path.join(SNAPSHOTS, snap), root)
        os.makedirs(os.path.join(root, "etc"), exist_ok=True)
        hvars = {
            "ansible_connection": "local",
            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "npuops_snapshot": os.path.join(SNAPSHOTS, snap),
            "npuops_host_root": root,
            "npuops_vllm_instances": TP4,
        }
        hvars.update(EXTRA.get(snap, {}))
        hosts[name] = hvars
    inventory = os.path.join(tmp, "hosts.yml")
    with open(inventory, "w") as handle:
        json.dump({"all": {"hosts": hosts}}, handle)
    return inventory, len(snaps)


def _span(values):
    return "%d-%d" % (min(values), max(values)) if min(values) != max(values) else str(values[0])


def baseline(tmp, tasks_per_host):
    play = [
        {
            "name": "Baseline",
            "hosts": "all",
            "gather_facts": False,
            "tasks": [{"name": "Ping %d" % i, "ansible.builtin.ping": {}} for i in range(tasks_per_host)],
        }
    ]
    path = os.path.join(tmp, "baseline.yml")
    with open(path, "w") as handle:
        json.dump(play, handle)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=256)
    parser.add_argument("--forks", type=int, default=16)
    parser.add_argument("--no-variants", action="store_true", help="skip the fact-cache and strategy-free runs")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench_fleet.")
    try:
        inventory, nsnaps = build(tmp, args.hosts)
        rows = []
        site1, rec1 = run(SITE, inventory, args.forks)
        invocations = [r[0] + r[3] for r in rec1.values()]  # ok + failed: modules that ran
        per_host = max(invocations)
        base, dummy = run(baseline(tmp, per_host), inventory, args.forks)
        site2, rec2 = run(SITE, inventory, args.forks)
        changed2 = sum(r[1] for r in rec2.values())
        rows.append(("baseline: %d x ansible.builtin.ping" % per_host, base, per_host, "-"))
        rows.append(("site.yml, first run (writes)", site1, _span(invocations), sum(r[1] for r in rec1.values())))
        rows.append(("site.yml, second run (no change)", site2, _span([r[0] for r in rec2.values()]), changed2))
        if not args.no_variants:
            cache = {
                "ANSIBLE_CACHE_PLUGIN": "ansible.builtin.jsonfile",
                "ANSIBLE_CACHE_PLUGIN_CONNECTION": os.path.join(tmp, "facts"),
                "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "86400",
            }
            for label, extra in (
                ("site.yml, no change, jsonfile fact cache cold (fills it)", cache),
                ("site.yml, no change, jsonfile fact cache warm", cache),
                ("site.yml, no change, strategy free", {"ANSIBLE_STRATEGY": "free"}),
            ):
                wall, rec = run(SITE, inventory, args.forks, extra)
                rows.append((label, wall, _span([r[0] for r in rec.values()]), sum(r[1] for r in rec.values())))
        print(
            "Fleet run: %d hosts from %d snapshots, forks %d, %d CPUs, ansible local connection"
            % (args.hosts, nsnaps, args.forks, os.cpu_count() or 0)
        )
        print()
        print("| run | wall s | s per host | task results per host | changed (all hosts) | ratio vs baseline |")
        print("|---|---|---|---|---|---|")
        for name, wall, per, changed in rows:
            print("| %s | %.1f | %.3f | %s | %s | %.2f |" % (name, wall, wall / args.hosts, per, changed, wall / base))
        return 0 if changed2 == 0 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
