#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Dump everything the collection computes from the recorded snapshots, to prove a refactor
changed no behaviour.

    python scripts/compare_outputs.py dump OUTDIR [--tree TREE]
    python scripts/compare_outputs.py diff OLD NEW

``dump`` writes, for every snapshot under ``tests/snapshots/``: the facts, the plans of both
policies (whole host, and two instances where the host has devices), the ASCII CPU map, the
rendered launch files of every instance, the soft-share outputs; and, for the whole fleet, the
report in JSON, Markdown and HTML. ``diff`` compares two dumps file by file and prints the
counts. ``--tree`` dumps another checkout (e.g. a ``git worktree`` of the commit before a
refactor): its collection is linked under a temporary collections path and imported from there.

The function names below are those of the module_utils layout of 0.2 (``module_utils/<layer>/``);
``LEGACY`` maps them to the flat layout of 0.1 so a 0.1 tree can be dumped for comparison.
"""

from __future__ import print_function

import argparse
import filecmp
import importlib
import json
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "ansible_collections.npuops.fleet.plugins."

# new dotted name -> old dotted name (flat module_utils of 0.1)
LEGACY = {
    "module_utils.host.hostio": "module_utils.hostio",
    "module_utils.model.topology": "module_utils.topology",
    "module_utils.model.rules": "module_utils.softshare",
    "module_utils.plan.dispatch": "module_utils.plan",
    "module_utils.render.cpumap": "module_utils.cpumap",
    "module_utils.render.launch": "module_utils.wrapper",
    "module_utils.softshare.plugin_config": "module_utils.softshare",
    "plugin_utils.manifests": "module_utils.softshare.plugin_config",
    "plugin_utils.report.analysis": "plugin_utils.fleet_report",
    "plugin_utils.report.markdown": "plugin_utils.report_markdown",
    "plugin_utils.report.html": "plugin_utils.report_html",
}


def _link_tree(tree):
    """A collections path whose npuops/fleet is ``tree``; returns the path."""
    base = tempfile.mkdtemp(prefix="npuops-compare-")
    target = os.path.join(base, "ansible_collections", "npuops")
    os.makedirs(target)
    os.symlink(os.path.abspath(tree), os.path.join(target, "fleet"))
    return base


def _load(name):
    try:
        return importlib.import_module(PKG + name)
    except ImportError:
        if name not in LEGACY:
            raise
        return importlib.import_module(PKG + LEGACY[name])


def _json(value):
    return json.dumps(value, indent=1, sort_keys=True, default=str) + "\n"


def _write(out, rel, text):
    path = os.path.join(out, rel)
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write(text)


def _attempt(func, *args, **kwargs):
    """(result, None) or (None, 'ExceptionName: message'): failures are outputs too."""
    try:
        return func(*args, **kwargs), None
    except Exception as err:  # pylint: disable=broad-except
        return None, "%s: %s" % (type(err).__name__, err)


def _instances(facts):
    ids = [n["logic_id"] for n in facts.get("npus") or []] or [g["index"] for g in facts.get("gpus") or []]
    if len(ids) < 2:
        return None
    half = len(ids) // 2
    return [{"name": "svc0", "npus": ids[:half]}, {"name": "svc1", "npus": ids[half:]}]


def dump_host(out, name, snap):
    hostio = _load("module_utils.host.hostio")
    topology = _load("module_utils.model.topology")
    dispatch = _load("module_utils.plan.dispatch")
    cpumap = _load("module_utils.render.cpumap")
    launch = _load("module_utils.render.launch")
    rules = _load("module_utils.model.rules")
    capacity = getattr(rules, "softshare_capacity", None) or rules.capacity
    plugin_config = _load("module_utils.softshare.plugin_config")
    manifests = _load("plugin_utils.manifests")

    facts, err = _attempt(topology.gather, hostio.SnapshotHostIO(snap), timeout=30)
    _write(out, name + "/facts.json", _json(facts if err is None else {"error": err}))
    entry = {"facts": facts, "facts_error": err or "", "plan_errors": {}}
    if facts is None:
        return entry
    for policy in ("strict", "vllm_ascend"):
        plan, perr = _attempt(dispatch.make_plan, facts, policy=policy)
        _write(out, "%s/plan-%s.json" % (name, policy), _json(plan if perr is None else {"error": perr}))
        entry["plan_" + policy] = plan
        entry["plan_errors"][policy] = perr or ""
        if plan is not None:
            text, merr = _attempt(cpumap.render_text, plan, facts)
            _write(out, "%s/cpumap-%s.txt" % (name, policy), text if merr is None else merr)
        instances = _instances(facts)
        if not instances:
            continue
        iplan, perr = _attempt(dispatch.make_plan, facts, policy=policy, instances=instances)
        _write(out, "%s/plan-%s-instances.json" % (name, policy), _json(iplan if perr is None else {"error": perr}))
        if iplan is None or policy != "strict":
            continue
        for inst in instances:
            files = {}
            view, verr = _attempt(launch.instance_view, iplan, inst["name"])
            if view is None:
                files["error"] = verr
            else:
                command = ["vllm", "serve", "/models/x", "--port", "8000"]
                files["wrapper"] = _attempt(launch.render_wrapper, view, command, {"HCCL_BUFFSIZE": "512"}, "host")
                if hasattr(launch, "render_unit"):
                    files["unit"] = _attempt(launch.render_unit, view, "/opt/w", "/opt/b", "/opt/p.json", "host", 900)
                else:  # render/units: one unit per role (the service unit compared here)
                    units = _load("module_utils.render.units")
                    files["unit"] = _attempt(units.service_unit, view, "/opt/w", "host")
                files["plan_json"] = _attempt(launch.render_plan_json, iplan, view, "host")
                files["argv"] = _attempt(launch.launch_argv, view, command, "host")
            _write(out, "%s/launch-%s.json" % (name, inst["name"]), _json(files))
    if facts.get("vendor") == "ascend" and facts.get("device_type"):
        soft = {
            "capacity": _attempt(capacity, facts.get("npus") or [], facts["device_type"]),
            "daemonset": _attempt(manifests.render_daemonset, "/var/lib/softshare", facts["device_type"], "26.0.0"),
            "labels": _attempt(manifests.render_node_labels, name, plugin_config.node_labels()),
        }
        _write(out, name + "/softshare.json", _json(soft))
    return entry


def dump(out, tree):
    if tree:
        sys.path.insert(0, _link_tree(tree))
    else:
        sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
    snaps = os.path.join(tree or REPO, "tests", "snapshots")
    hosts = {}
    for name in sorted(os.listdir(snaps)):
        if os.path.isfile(os.path.join(snaps, name, "snapshot.yml")):
            hosts[name] = dump_host(out, name, os.path.join(snaps, name))
    analysis = _load("plugin_utils.report.analysis")
    markdown = _load("plugin_utils.report.markdown")
    html = _load("plugin_utils.report.html")
    report = analysis.build_report(hosts)
    _write(out, "report/fleet-report.json", analysis.render_json(report))
    _write(out, "report/fleet-report.md", markdown.render_markdown(report))
    _write(out, "report/fleet-report.html", html.render_html(report))
    print("dumped %d hosts to %s" % (len(hosts), out))


def diff(old, new):
    same, changed, missing = 0, [], []
    for dirpath, _dirs, files in os.walk(old):
        for name in sorted(files):
            a = os.path.join(dirpath, name)
            rel = os.path.relpath(a, old)
            b = os.path.join(new, rel)
            if not os.path.exists(b):
                missing.append(rel)
            elif filecmp.cmp(a, b, shallow=False):
                same += 1
            else:
                changed.append(rel)
    extra = []
    for dirpath, _dirs, files in os.walk(new):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), new)
            if not os.path.exists(os.path.join(old, rel)):
                extra.append(rel)
    for rel in changed:
        print("changed: " + rel)
    for rel in missing:
        print("missing: " + rel)
    for rel in sorted(extra):
        print("new:     " + rel)
    print("%d identical, %d changed, %d missing, %d new" % (same, len(changed), len(missing), len(extra)))
    return 1 if changed or missing else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="cmd")
    p_dump = sub.add_parser("dump")
    p_dump.add_argument("out")
    p_dump.add_argument("--tree", help="another checkout of the collection to dump")
    p_diff = sub.add_parser("diff")
    p_diff.add_argument("old")
    p_diff.add_argument("new")
    args = parser.parse_args(argv)
    if args.cmd == "dump":
        dump(args.out, args.tree)
        return 0
    if args.cmd == "diff":
        return diff(args.old, args.new)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
