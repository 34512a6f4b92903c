#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""What the host CPU partition buys a worker CPU: wake-up latency with a noisy neighbour,
partition off vs on, in one run (the anchor: the 33 ms max measured before the partition
existed with the neighbour free, 5 ms confined, on this 2-core machine).

- The worker CPU is the last CPU this process may use; the plan is the shape npu_cpu_plan
  writes for it (one device, its pool that CPU, the other CPUs the frontend's), and the
  housekeeping CPUs are what ``plan/cpu_partition.partition`` computes from it.
- The measurement: ``cyclictest`` (rt-tests), one thread pinned to the worker CPU,
  ``--policy=other`` (SCHED_OTHER: a vLLM worker is not a real-time thread; ``-p 0`` alone
  runs it SCHED_FIFO 2 in rt-tests 2.4), 1 ms interval, a latency histogram in microseconds
  (p50, p99 from it; overflows above the last bucket count as above it).
- The neighbour: ``stress-ng --cpu <number of CPUs>``. Off: free to run anywhere. On: held on
  the housekeeping CPUs by a cpuset cgroup (the mechanism ``AllowedCPUs=`` drives on cgroup v2
  and the v1 cpuset controller gives here), as system.slice is once partitioned; where no
  cpuset can be made, by its scheduler affinity (what the manager's ``CPUAffinity=`` gives).
  The kernel masks (workqueues, default IRQ affinity) are left as they are: this machine is
  shared.

Needs root, cyclictest and stress-ng (``scripts/install-system-deps.sh bench``) and 2 CPUs;
prints why not otherwise. ``NPUOPS_BENCH_PARTITION_ROUNDS`` (default 4) rounds of off then on,
``NPUOPS_BENCH_PARTITION_SECONDS`` (default 10) each. Prints a row per run, the medians of
each case, the on/off ratios of the medians, and the load average before and after.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist  # noqa: E402
from ansible_collections.npuops.fleet.plugins.module_utils.plan import cpu_partition  # noqa: E402

SECONDS = int(os.environ.get("NPUOPS_BENCH_PARTITION_SECONDS", "10"))
# off and on alternate, so a load that comes and goes (a shared machine) falls on both alike
ROUNDS = int(os.environ.get("NPUOPS_BENCH_PARTITION_ROUNDS", "4"))
BUCKETS = 100000  # microseconds: a 100 ms histogram
V1_CPUSET = "/sys/fs/cgroup/cpuset"
V2_ROOT = "/sys/fs/cgroup"
GROUP = "npuops-bench-housekeeping"


def plan_for(cpus):
    worker = cpus[-1]
    rest = cpulist.format(cpus[:-1])
    return {
        "policy": "strict",
        "skipped": False,
        "npus": {"0": {"pool": str(worker), "irq": "", "main": str(worker)}},
        "cpu_budget": {"workers": str(worker), "frontend": rest, "reserved": "", "spare": ""},
    }


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


class Cpuset(object):
    """A cpuset cgroup holding the housekeeping CPUs (v1 cpuset hierarchy, else v2)."""

    def __init__(self, cpus):
        self.path = None
        self.how = "sched_setaffinity (no cpuset cgroup could be made)"
        for base, cpus_file, kind in (
            (V1_CPUSET, "cpuset.cpus", "cgroup v1 cpuset"),
            (V2_ROOT, "cpuset.cpus", "cgroup v2 cpuset"),
        ):
            path = os.path.join(base, GROUP)
            try:
                if base == V2_ROOT:
                    with open(os.path.join(V2_ROOT, "cgroup.subtree_control")) as handle:
                        if "cpuset" not in handle.read().split():
                            continue
                elif not os.path.isfile(os.path.join(base, "cpuset.cpus")):
                    continue
                if os.path.isdir(path):  # left by a run that was killed
                    os.rmdir(path)
                os.mkdir(path)
                _write(os.path.join(path, cpus_file), cpus)
                if base == V1_CPUSET:
                    with open(os.path.join(base, "cpuset.mems")) as handle:
                        _write(os.path.join(path, "cpuset.mems"), handle.read().strip())
                self.path, self.how = path, "%s (%s)" % (kind, cpus)
                return
            except OSError:
                if os.path.isdir(path):
                    try:
                        os.rmdir(path)
                    except OSError:
                        pass

    def add(self, pid):
        _write(os.path.join(self.path, "cgroup.procs"), "%d\n" % pid)

    def remove(self):
        """Remove the cpuset once the neighbour's last process has left it (a few ms)."""
        for _attempt in range(100):
            if not self.path:
                return
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.05)


def percentile(hist, overflow, fraction):
    total = sum(hist.values()) + overflow
    need = fraction * total
    seen = 0
    for us in sorted(hist):
        seen += hist[us]
        if seen >= need:
            return us
    return BUCKETS


def run_case(worker, housekeeping, confine):
    stress = shutil.which("stress-ng")
    ncpu = len(os.sched_getaffinity(0))
    cpuset = Cpuset(cpulist.format(housekeeping)) if confine else None
    how = "free (any CPU)"

    def pin_to_housekeeping():
        os.sched_setaffinity(0, housekeeping)

    def join_cpuset():  # in the cpuset before it execs: its workers fork inside it
        cpuset.add(os.getpid())

    pre = None
    if confine:
        pre = pin_to_housekeeping if cpuset.path is None else join_cpuset
    neighbour = subprocess.Popen(
        [stress, "--cpu", str(ncpu), "--timeout", "%ds" % (SECONDS + 5), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=pre,
        start_new_session=True,
    )
    try:
        if confine:
            how = cpuset.how
        with tempfile.NamedTemporaryFile("w+", suffix=".hist") as hist_file:
            out = subprocess.run(
                [
                    "cyclictest",
                    "-q",
                    "-m",
                    "-t1",
                    "-a",
                    str(worker),
                    "--policy=other",
                    "-i",
                    "1000",
                    "-D",
                    "%ds" % SECONDS,
                    "-h",
                    str(BUCKETS),
                    "--histfile=%s" % hist_file.name,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                universal_newlines=True,
                timeout=SECONDS + 60,
                check=False,
            )
            with open(hist_file.name) as written:
                text = written.read() + out.stdout
    finally:
        os.killpg(neighbour.pid, 9)
        neighbour.wait()
        if cpuset:
            cpuset.remove()
    hist, overflow, maximum = {}, 0, None
    for line in text.splitlines():
        if line.startswith("# Histogram Overflows:"):
            overflow = int(line.split(":")[1].split()[0])
        elif line.startswith("# Max Latencies:"):
            maximum = int(line.split(":")[1].split()[0])
        elif line[:1].isdigit():
            fields = line.split()
            if len(fields) >= 2 and int(fields[1]):
                hist[int(fields[0])] = int(fields[1])
    samples = sum(hist.values()) + overflow
    return {
        "how": how,
        "samples": samples,
        "p50": percentile(hist, overflow, 0.50),
        "p99": percentile(hist, overflow, 0.99),
        "max": maximum,
    }


def main():
    cpus = sorted(os.sched_getaffinity(0))
    why = None
    if os.geteuid() != 0:
        why = "needs root (cpuset cgroup, mlockall)"
    elif not shutil.which("cyclictest") or not shutil.which("stress-ng"):
        why = "needs cyclictest and stress-ng: scripts/install-system-deps.sh bench"
    elif len(cpus) < 2:
        why = "needs 2 CPUs (one worker, one housekeeping)"
    if why:
        print("bench_partition: not run - %s" % why)
        return 0
    part = cpu_partition.partition(plan_for(cpus), min_housekeeping=1)
    worker = cpus[-1]
    housekeeping = set(cpulist.parse(part["housekeeping"]))
    print(
        "Worker CPU %d (isolated %s), housekeeping %s; cyclictest --policy=other -i 1000 -D %ds on the "
        "worker CPU, stress-ng --cpu %d as the neighbour.\n"
        % (worker, part["isolated"], part["housekeeping"], SECONDS, len(cpus))
    )
    load = os.getloadavg()
    rows = []
    for number in range(ROUNDS):
        for name, confine in (("off", False), ("on", True)):
            rows.append((number + 1, name, run_case(worker, housekeeping, confine)))
    print("| round | partition | neighbour | samples | p50 us | p99 us | max us |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for number, name, row in rows:
        print(
            "| %d | %s | %s | %d | %d | %d | %s |"
            % (number, name, row["how"], row["samples"], row["p50"], row["p99"], row["max"])
        )

    def median(name, key):
        values = sorted(r[key] for _n, c, r in rows if c == name and r[key] is not None)
        return values[len(values) // 2] if values else None

    print("\n| partition | median p50 us | median p99 us | median max us |")
    print("|---|---:|---:|---:|")
    for name in ("off", "on"):
        print("| %s | %s | %s | %s |" % (name, median(name, "p50"), median(name, "p99"), median(name, "max")))

    def ratio(key):
        off, on = median("off", key), median("on", key)
        return "%.1fx" % (float(off) / max(on, 1)) if off is not None and on is not None else "n/a"

    print(
        "\nOff/on (medians): p99 %s, max %s (higher is the partition's gain). Load average "
        "%.1f before, %.1f after (2 CPUs shared with other work: every figure moves with it)."
        % (ratio("p99"), ratio("max"), load[0], os.getloadavg()[0])
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
