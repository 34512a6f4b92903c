# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""npuops-bind: pin a running vLLM instance's workers to their planned CPUs.

Standalone (standard library, Python 3.7+; it imports nothing from the collection and keeps
its own copies of the few rules it needs, checked against the main ones by a unit test).
``vllm_launch_wrapper`` installs it beside the wrapper; the unit's ``ExecStartPost`` runs it.
It waits (bounded by ``--timeout``) until each device shows its worker (npu-smi / nvidia-smi),
then pins every thread to the device's main CPUs, ``acl_thread`` / ``release_thread`` to theirs,
and runs ``migratepages`` onto the pool's node. Only differing affinities are written.
Exit codes: 0 done, 1 bad input or a failed bind, 2 some devices showed no worker in time.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time

LOG = logging.getLogger("npuops-bind")
COMM_LEN = 15  # TASK_COMM_LEN - 1: Linux cuts thread names to 15 characters
ACL_THREAD = "acl_thread"
RELEASE_THREAD = "release_thread"
EXIT_OK, EXIT_ERROR, EXIT_MISSING = 0, 1, 2
_CPULIST_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*\Z")
_BUS_RE = re.compile(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\Z")
_SHORT_BUS_RE = re.compile(r"^[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\Z")
_LONG_BUS_RE = re.compile(r"^0000[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\Z")


class BindError(Exception):
    """A worker could not be bound, or the plan is unusable; the message says why."""


# ---- cpulists ----------------------------------------------------------------------------
def parse_cpulist(text, source="cpulist"):
    """``"0-2,5"`` -> ``[0, 1, 2, 5]``; ints and empty values accepted."""
    if isinstance(text, int):
        return [text]
    text = str(text if text is not None else "").replace(" ", "")
    if not text:
        return []
    if not _CPULIST_RE.match(text):
        raise BindError("%s: %r is not a cpulist" % (source, text))
    cpus = set()
    for part in text.split(","):
        lo, _sep, hi = part.partition("-")
        if int(hi or lo) < int(lo):
            raise BindError("%s: descending range %r" % (source, part))
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def format_cpulist(cpus):
    parts = []
    for cpu in sorted(set(cpus)):
        if parts and parts[-1][1] == cpu - 1:
            parts[-1][1] = cpu
        else:
            parts.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in parts)


# ---- npu-smi / nvidia-smi text (minimal parsers: this script runs on its own) --------------
def parse_npu_map(text):
    """``npu-smi info -m`` -> {npu_id: {chip_id: logic_id}} (ints); Mcu rows skipped."""
    lines = [l for l in (text or "").splitlines() if l.strip()]
    if not lines:
        return {}
    header = [h.strip() for h in re.split(r"\s{2,}", lines[0].strip())]
    if "NPU ID" not in header:
        return {}
    col_npu = header.index("NPU ID")
    col_chip = header.index("Chip ID") if "Chip ID" in header else None
    col_logic = header.index("Chip Logic ID") if "Chip Logic ID" in header else None
    result = {}
    for line in lines[1:]:
        cells = line.split()
        try:
            npu = int(cells[col_npu])
            chip = int(cells[col_chip]) if col_chip is not None else 0
            logic = cells[col_logic] if col_logic is not None else cells[col_npu]
        except (IndexError, ValueError):
            continue
        if logic.isdigit():
            result.setdefault(npu, {})[chip] = int(logic)
    return result


def _memory(cell):
    match = re.match(r"^\s*(\d+)", cell or "")
    return int(match.group(1)) if match else 0


def parse_npu_processes(text):
    """``npu-smi info`` process table -> [(npu_id, chip_id or None, pid, memory_mb)]."""
    rows = []
    in_section = False
    with_chip = False
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not in_section:
            if line.startswith("| NPU") and "Process id" in line:
                in_section = True
                first = " ".join(line.split("|")[1].split())
                with_chip = first.startswith("NPU Chip")
            continue
        if not line.startswith("| "):
            continue
        cells = line.split("|")
        if len(cells) < 3:
            continue
        ids = cells[1].split()
        pid = cells[2].strip()
        if not ids or not ids[0].isdigit() or not pid.isdigit():
            continue
        chip = None
        if with_chip:
            if len(ids) < 2 or not ids[1].isdigit():
                continue
            chip = int(ids[1])
        memory = _memory(cells[4]) if len(cells) > 4 else 0
        rows.append((int(ids[0]), chip, int(pid), memory))
    return rows


def home_devices(rows):
    """{pid: device} where each pid holds the most device memory: a worker also opens a small
    context (~126 MB) on another chip of its instance (real A3 table: pid 2268928, 126 MB on
    chip 2/0, 58953 MB on chip 3/1). Ties keep the first row."""
    best = {}
    for device, pid, memory in rows:
        if device is None:
            continue
        if pid not in best or memory > best[pid][1]:
            best[pid] = (device, memory)
    return dict((pid, dev) for pid, (dev, _mem) in best.items())


def resolve_logic(npu_map, npu, chip):
    """Logic id of (card, chip) through the ``-m`` map; the card id when there is no map."""
    chips = npu_map.get(npu)
    if chips:
        if chip is None:
            return list(chips.values())[0] if len(chips) == 1 else None
        return chips.get(chip)
    if not npu_map and chip in (None, 0):
        return npu
    return None


def normalise_bus_id(text):
    """Copy of parse/pci.normalise_bus_id: ``0000:c1:00.0`` form, 8-digit domain cut; else None."""
    text = (text or "").strip()
    if _SHORT_BUS_RE.match(text):
        text = "0000:" + text
    elif _LONG_BUS_RE.match(text):
        text = text[4:]
    return text.lower() if _BUS_RE.match(text) else None


def parse_gpu_bus_ids(text):
    """``nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader`` -> {bus: index}."""
    rows = [[p.strip() for p in line.split(",")] for line in (text or "").splitlines()]
    return dict((normalise_bus_id(r[1]), int(r[0])) for r in rows if len(r) >= 2 and r[0].isdigit())


def parse_compute_apps(text):
    """``nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory ...`` ->
    [(pid, bus, memory_mib)]."""
    out = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            memory = _memory(parts[2]) if len(parts) > 2 else 0
            out.append((int(parts[0]), normalise_bus_id(parts[1]), memory))
    return out


# ---- host access ---------------------------------------------------------------------------
def run(argv, timeout=60):
    """(rc, stdout) of a command run by name from PATH; rc None when it is not installed.
    It runs in its own session: on timeout the whole group is killed, so a child left
    holding the output pipe cannot hang the binder."""
    env = dict(os.environ, LC_ALL="C", LANG="C", LC_MESSAGES="C")
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    except OSError:
        return None, ""
    try:
        out, _err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _err = proc.communicate()
        return -9, out.decode("utf-8", "replace")
    return proc.returncode, out.decode("utf-8", "replace")


def list_threads(pid):
    # /proc directly: the binder only runs on Linux hosts, where it is the ground truth
    try:
        return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid) if t.isdigit())
    except OSError:
        return []


def thread_comm(pid, tid):
    try:
        with open("/proc/%d/task/%d/comm" % (pid, tid)) as handle:
            return handle.read().rstrip("\n")
    except (IOError, OSError):
        return ""


def parent_pid(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
        return int(stat[stat.rindex(")") + 2:].split()[1])
    except (IOError, OSError, ValueError, IndexError):
        return None


def is_descendant(pid, root):
    seen = 0
    while pid and seen < 4096:
        if pid == root:
            return True
        pid = parent_pid(pid)
        seen += 1
    return False


# ---- the plan ------------------------------------------------------------------------------
def load_plan(path, instance=None):
    try:
        with open(path) as handle:
            doc = json.load(handle)
    except (IOError, OSError) as err:
        raise BindError("plan %s: cannot read (%s)" % (path, err))
    except ValueError as err:
        raise BindError("plan %s: not valid JSON (%s)" % (path, err))
    info = doc.get("npuops_instance") if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        raise BindError("plan %s: no npuops_instance block (write it with vllm_launch_wrapper)"
                        % path)
    if instance is not None and info.get("name") != instance:
        raise BindError("plan %s: is for instance %r, not %r" % (path, info.get("name"), instance))
    return doc


def device_target(doc, device):
    """CPU roles and memory node of one device: {label, main, acl, release, node}."""
    vendor = doc["npuops_instance"].get("vendor", "ascend")
    table = doc.get("gpus" if vendor == "nvidia" else "npus") or {}
    entry = table.get(str(device))
    if not isinstance(entry, dict):
        raise BindError("plan: device %s is not in the plan" % device)
    label = "%s%s" % ("GPU" if vendor == "nvidia" else "NPU", device)
    if vendor == "nvidia":
        main = parse_cpulist(entry.get("pool"), label + " pool")
        acl, release, node = [], [], entry.get("numa_node")
    else:
        main = parse_cpulist(entry.get("main"), label + " main")
        acl = parse_cpulist(entry.get("acl"), label + " acl")
        release = parse_cpulist(entry.get("release"), label + " release")
        nodes = entry.get("numa_nodes") or []
        node = nodes[0] if nodes else node_of(doc, main[0] if main else None)
    if not main:
        raise BindError("plan: %s has no main CPUs" % label)
    return {"label": label, "device": device, "main": main, "acl": acl, "release": release,
            "node": None if node is None else int(node)}


def node_of(doc, cpu):
    for node, cpus in (doc.get("numa_nodes") or {}).items():
        if cpu is not None and cpu in parse_cpulist(cpus, "numa node %s" % node):
            return int(node)
    return None


def all_nodes(doc):
    nodes = doc.get("numa_nodes") or {}
    if nodes:
        return sorted(int(n) for n in nodes)
    try:
        with open("/sys/devices/system/node/online") as handle:
            return parse_cpulist(handle.read().strip(), "node/online")
    except (IOError, OSError):
        return [0]


# ---- discovery -----------------------------------------------------------------------------
def find_workers(doc, devices, root_pid=None):
    """{device: [pids]} of the processes the devices show now."""
    vendor = doc["npuops_instance"].get("vendor", "ascend")
    found = {}
    if vendor == "nvidia":
        _rc, gpus = run(["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"])
        bus_to_index = parse_gpu_bus_ids(gpus)
        _rc, apps = run(["nvidia-smi", "--query-compute-apps=pid,gpu_bus_id,used_memory",
                         "--format=csv,noheader,nounits"])
        rows = [(bus_to_index.get(bus), pid, mem) for pid, bus, mem in parse_compute_apps(apps)]
    else:
        _rc, table = run(["npu-smi", "info"])
        _rc, mapping = run(["npu-smi", "info", "-m"])
        npu_map = parse_npu_map(mapping)
        rows = [(resolve_logic(npu_map, npu, chip), pid, mem)
                for npu, chip, pid, mem in parse_npu_processes(table)]
    for pid, device in sorted(home_devices(rows).items()):
        if device in devices and (root_pid is None or is_descendant(pid, root_pid)):
            found.setdefault(device, []).append(pid)
    return found


def wait_for_workers(doc, devices, timeout, interval, root_pid=None):
    deadline = time.time() + timeout
    while True:
        found = find_workers(doc, devices, root_pid)
        missing = [d for d in devices if d not in found]
        if not missing or time.time() >= deadline:
            return found, missing
        time.sleep(min(interval, max(0.0, deadline - time.time())))


def wait_for_threads(pid, target, timeout, interval):
    """Give a new worker time to start its ACL/release threads (bounded)."""
    wanted = [name for name, cpus in ((ACL_THREAD, target["acl"]),
                                      (RELEASE_THREAD, target["release"])) if cpus]
    deadline = time.time() + timeout
    while wanted:
        names = [thread_comm(pid, t) for t in list_threads(pid)]
        if all(any(n[:COMM_LEN] in c for c in names) for n in wanted):
            return True
        if time.time() >= deadline or not os.path.exists("/proc/%d" % pid):
            return False
        time.sleep(interval)
    return True


# ---- binding -------------------------------------------------------------------------------
def desired_cpus(comm, target):
    if target["acl"] and ACL_THREAD[:COMM_LEN] in comm:
        return target["acl"], "acl"
    if target["release"] and RELEASE_THREAD[:COMM_LEN] in comm:
        return target["release"], "release"
    return target["main"], "main"


def bind_worker(pid, target, check=False):
    """Pin every thread of ``pid``; returns a per-worker report. Raises BindError."""
    threads = list_threads(pid)
    if not threads:
        raise BindError("%s: process %d not found (does this run in the host PID namespace?)"
                        % (target["label"], pid))
    report = {"device": target["device"], "pid": pid, "threads": len(threads), "changed": [],
              "unchanged": 0, "acl": [], "release": []}
    for tid in threads:
        cpus, role = desired_cpus(thread_comm(pid, tid), target)
        if role != "main":
            report[role].append(tid)
        try:
            current = sorted(os.sched_getaffinity(tid))
            if current == cpus:
                report["unchanged"] += 1
                continue
            if not check:
                os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:
            continue  # the thread ended meanwhile
        except OSError as err:
            raise BindError("Failed to bind %d to CPU %s: %s"
                            % (tid, format_cpulist(cpus), err))
        report["changed"].append({"tid": tid, "role": role, "before": format_cpulist(current),
                                  "after": format_cpulist(cpus)})
    LOG.info("[bind] %s pid=%d: %d threads, %d changed, %d unchanged; main=[%s] "
             "acl_thread=%s release_thread=%s", target["label"], pid, len(threads),
             len(report["changed"]), report["unchanged"], format_cpulist(target["main"]),
             report["acl"], report["release"])
    return report


def migrate_memory(pid, target, nodes, check=False):
    """``migratepages`` onto the pool's node; returns True when it ran."""
    if target["node"] is None:
        LOG.warning("[migrate] NUMA node not found. npu=%s", target["label"])
        return False
    tool = shutil.which("migratepages")
    if tool is None:
        LOG.warning("The 'migratepages' command is not available, skipping memory binding. "
                    "(install numactl)")
        return False
    LOG.info("[migrate] %s:%s -> NUMA [%s]", target["label"][:3], target["device"], target["node"])
    if check:
        return True
    rc, _out = run([tool, str(pid), ",".join(str(n) for n in nodes), str(target["node"])])
    if rc != 0:
        LOG.warning("[migrate] migratepages %d exited with %s", pid, rc)
    return rc == 0


def bind(doc, workers, check=False, thread_wait=0.0, interval=0.5):
    """Bind {device: [pids]}; returns the list of worker reports."""
    nodes = all_nodes(doc)
    reports = []
    for device in sorted(workers):
        target = device_target(doc, device)
        for pid in workers[device]:
            if thread_wait > 0 and not wait_for_threads(pid, target, thread_wait, interval):
                LOG.warning("%s pid=%d: acl_thread/release_thread not seen after %.0fs; "
                            "binding what exists", target["label"], pid, thread_wait)
            report = bind_worker(pid, target, check)
            # Memory moves only when the worker was not bound already (idempotent re-runs).
            moved = bool(report["changed"]) and migrate_memory(pid, target, nodes, check)
            report["migrated"] = moved
            reports.append(report)
    return reports


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="npuops-bind", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--plan", required=True, help="plan JSON written by vllm_launch_wrapper")
    parser.add_argument("--instance", help="refuse a plan written for another instance")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds to wait for every device to show its worker")
    parser.add_argument("--interval", type=float, default=2.0, help="polling interval (s)")
    parser.add_argument("--thread-wait", type=float, default=60.0,
                        help="seconds to wait for a worker's acl/release threads")
    parser.add_argument("--root-pid", type=int, default=None,
                        help="only bind descendants of this pid (default: $MAINPID if set)")
    parser.add_argument("--pid", type=int, action="append", default=[],
                        help="bind this known worker pid (with --npu), skip discovery")
    parser.add_argument("--npu", type=int, action="append", default=[],
                        help="the device of the matching --pid")
    parser.add_argument("--check", action="store_true", help="report, change nothing")
    parser.add_argument("--json", action="store_true", help="write a JSON report to stdout")
    args = parser.parse_args(argv)
    if len(args.pid) != len(args.npu):
        parser.error("--pid and --npu must be given in pairs")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(levelname)s %(asctime)s [npuops-bind] %(message)s",
                        datefmt="%m-%d %H:%M:%S")
    result = {"changed": False, "workers": [], "missing": [], "failed": None}
    code = EXIT_OK
    try:
        doc = load_plan(args.plan, args.instance)
        devices = [int(d) for d in doc["npuops_instance"].get("devices") or []]
        targets = [device_target(doc, d) for d in (args.npu or devices)]
        LOG.info("The CPU allocation plan is as follows:")
        for t in targets:
            LOG.info("%s: main=[%s]  acl=[%s]  release=[%s]", t["label"], *(
                " ".join(str(c) for c in t[role]) for role in ("main", "acl", "release")))
        if args.pid:
            workers = {}
            for pid, npu in zip(args.pid, args.npu):
                workers.setdefault(npu, []).append(pid)
            thread_wait = 0.0
        else:
            root = args.root_pid
            if root is None and os.environ.get("MAINPID", "").isdigit():
                root = int(os.environ["MAINPID"])
            workers, result["missing"] = wait_for_workers(doc, devices, args.timeout,
                                                          args.interval, root)
            thread_wait = args.thread_wait
            for device in result["missing"]:
                LOG.warning("%s shows no worker process after %.0fs; not bound",
                            device_target(doc, device)["label"], args.timeout)
            if result["missing"]:
                code = EXIT_MISSING
        result["workers"] = bind(doc, workers, args.check, thread_wait, min(args.interval, 1.0))
        result["changed"] = any(w["changed"] for w in result["workers"])
        LOG.info("binding %s", "changed" if result["changed"] else "unchanged")
    except BindError as err:
        LOG.error("%s", err)
        result["failed"] = str(err)
        code = EXIT_ERROR
    if args.json:
        sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    return code


if __name__ == "__main__":
    # a standalone program: its exit status is the contract with systemd
    raise SystemExit(main())
