#!/usr/bin/env python
"""Build the demo sandbox roots: .demo/<host>/root from tests/snapshots/<snapshot>/fs.

Usage: demo_sandbox.py [--inventory inventories/demo/hosts.yml] [--demo .demo] [--hosts h1,h2]
       demo_sandbox.py --host-tree SNAPSHOT ROOT   (one sandbox root, as molecule builds it)

Each demo host gets a copy of its snapshot's ``fs/`` tree (/proc/interrupts, /proc/irq/*,
the /sys trees the modules read; on-disk names unescaped to host paths, ``%3A`` -> ``:``)
plus an empty ``etc/``. A root that exists already is left
alone, so a second ``make demo`` starts from what the first one wrote (and must change
nothing); ``make demo-clean`` removes .demo. Prints one line per host, JSON on --json.
"""

import argparse
import json
import os
import shutil
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot  # noqa: E402


def inventory_hosts(path):
    """[(host, snapshot name)] from a YAML inventory, in file order."""
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    found = []

    def walk(group):
        group = group or {}
        for host, hvars in (group.get("hosts") or {}).items():
            snap = (hvars or {}).get("npuops_demo_snapshot") or host
            if host not in [h for h, dummy in found]:
                found.append((host, snap))
        for child in (group.get("children") or {}).values():
            walk(child)

    for group in data.values():
        walk(group)
    return found


def build_root(host, snap, demo_dir, snapshots_dir):
    """Create .demo/<host>/root from the snapshot; returns 'created', 'kept' or 'missing'."""
    root = os.path.join(demo_dir, host, "root")
    if os.path.isdir(root):
        return "kept"
    if not os.path.isdir(os.path.join(snapshots_dir, snap)):
        return "missing"
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    snapshot.copy_host_tree(os.path.join(snapshots_dir, snap), tmp)
    os.makedirs(os.path.join(tmp, "etc"), exist_ok=True)
    os.rename(tmp, root)
    return "created"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default=os.path.join(REPO, "inventories", "demo", "hosts.yml"))
    parser.add_argument("--demo", default=os.path.join(REPO, ".demo"))
    parser.add_argument("--snapshots", default=os.path.join(REPO, "tests", "snapshots"))
    parser.add_argument("--hosts", default="", help="comma-separated subset of inventory hosts")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--host-tree",
        nargs=2,
        metavar=("SNAPSHOT", "ROOT"),
        help="copy one snapshot's fs/ tree to ROOT as a host tree and exit",
    )
    args = parser.parse_args(argv)
    if args.host_tree:
        snapshot.copy_host_tree(args.host_tree[0], args.host_tree[1])
        return 0
    wanted = [h for h in args.hosts.split(",") if h]
    result = {}
    for host, snap in inventory_hosts(args.inventory):
        if wanted and host not in wanted:
            continue
        result[host] = {"snapshot": snap, "state": build_root(host, snap, args.demo, args.snapshots)}
    if args.json:
        json.dump(result, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    else:
        for host, info in result.items():
            print("sandbox %-16s %-8s (snapshot %s)" % (host, info["state"], info["snapshot"]))
    missing = [h for h, i in result.items() if i["state"] == "missing"]
    if missing:
        sys.stderr.write("no snapshot for: %s\n" % ", ".join(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
