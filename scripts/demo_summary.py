#!/usr/bin/env python
"""Per-host summary of a demo run: device type, plan mode, pool per NPU/GPU, files written.

Reads the facts and plans the demo stored in Ansible's jsonfile fact cache (through Ansible's
own cache plugin, never by hand), the PLAY RECAP of site.yml, and compares each sandbox root
with the snapshot it was built from to list the files site.yml wrote or changed.
"""

import argparse
import filecmp
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo_sandbox import REPO, inventory_hosts, snapshot  # noqa: E402

RECAP = re.compile(
    r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
    r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)"
)


def parse_recap(text):
    """{host: {ok, changed, unreachable, failed}} from the PLAY RECAP of an ansible-playbook log."""
    out = {}
    in_recap = False
    for line in text.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        if in_recap:
            match = RECAP.match(line.strip())
            if match:
                out[match.group("host")] = {k: int(v) for k, v in match.groupdict().items() if k != "host"}
    return out


def load_cache(cache_dir):
    """{host: facts} from the jsonfile fact cache, read with Ansible's jsonfile plugin."""
    if not os.path.isdir(cache_dir):
        return {}
    from ansible.plugins.loader import cache_loader, init_plugin_loader

    init_plugin_loader()
    cache = cache_loader.get("ansible.builtin.jsonfile", _uri=cache_dir, _prefix="", _timeout=0)
    out = {}
    for key in cache.keys():
        try:
            out[key] = cache.get(key)
        except KeyError:
            continue
    return out


def written_files(root, snap_fs):
    """Sandbox files that are not in the snapshot or differ from it (relative host paths)."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            real = os.path.join(dirpath, name)
            rel = os.path.relpath(real, root)
            orig = snapshot.disk_path(os.path.dirname(snap_fs), "/" + rel)
            if not os.path.isfile(orig) or not filecmp.cmp(real, orig, shallow=False):
                found.append("/" + rel)
    return sorted(found)


def pools(plan):
    """'npu0=144-167 npu1=...' / 'gpu0=0-23:mlx5_0 ...' from a plan."""
    if not plan:
        return "-"
    if plan.get("skipped"):
        return "skipped: %s" % (plan.get("reason") or "")
    parts = []
    for key, entry in sorted((plan.get("npus") or {}).items(), key=lambda kv: int(kv[0])):
        parts.append("npu%s=%s" % (key, entry.get("pool")))
    for key, entry in sorted((plan.get("gpus") or {}).items(), key=lambda kv: int(kv[0])):
        nic = entry.get("nic")
        parts.append("gpu%s=%s%s" % (key, entry.get("pool"), (":" + nic) if nic else ""))
    return " ".join(parts) or "-"


def shorten(paths, limit=4):
    if len(paths) <= limit:
        return ", ".join(paths) or "-"
    return "%s (+%d more)" % (", ".join(paths[:limit]), len(paths) - limit)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", default=os.path.join(REPO, ".demo"))
    parser.add_argument("--inventory", default=os.path.join(REPO, "inventories", "demo", "hosts.yml"))
    parser.add_argument("--snapshots", default=os.path.join(REPO, "tests", "snapshots"))
    parser.add_argument("--site-log")
    parser.add_argument("--audit-log")
    parser.add_argument("--hosts", default="")
    args = parser.parse_args(argv)
    wanted = [h for h in args.hosts.split(",") if h]
    facts = load_cache(os.path.join(args.demo, "facts"))
    recap = {}
    if args.site_log and os.path.exists(args.site_log):
        with open(args.site_log, encoding="utf-8") as handle:
            recap = parse_recap(handle.read())
    rows = []
    for host, snap in inventory_hosts(args.inventory):
        if wanted and host not in wanted:
            continue
        hfacts = facts.get(host) or {}
        topo = hfacts.get("npu_topology") or {}
        plan = hfacts.get("npuops_plan") or {}
        root = os.path.join(args.demo, host, "root")
        files = written_files(root, os.path.join(args.snapshots, snap, "fs")) if os.path.isdir(root) else []
        count = len(topo.get("npus") or []) or len(topo.get("gpus") or [])
        rows.append(
            (
                host,
                topo.get("vendor") or "-",
                "%s x%d" % (topo.get("device_type") or "-", count),
                plan.get("mode") or "-",
                (recap.get(host) or {}).get("changed", "-"),
                pools(plan),
                shorten(files),
            )
        )
    header = ("host", "vendor", "devices", "mode", "changed", "pools (per NPU/GPU)", "files written")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print()
    print("sandbox: %s   site.yml log: %s" % (args.demo, args.site_log or "-"))
    report = os.path.join(args.demo, "report")
    if args.audit_log:
        shown = False
        if os.path.isdir(report):
            for name in sorted(os.listdir(report)):
                print("report: %s" % os.path.join(report, name))
                shown = True
        if not shown:
            with open(args.audit_log, encoding="utf-8") as handle:
                paths = sorted(set(re.findall(r"(/\S+\.(?:html|md|json))", handle.read())))
            for path in paths:
                print("report: %s" % path)
        print("audit.yml log: %s" % args.audit_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
