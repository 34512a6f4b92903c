#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Facts gathering in live mode against a stand-in ``npu-smi`` that answers after 0.5 s.

The stand-in prints the recorded A3 (16-die) outputs of tests/snapshots/a3-16die. Figures are
ratios against baselines measured in this process: the slowest single call (target <= 1.3x)
and the sum of every call run one after another (what serial gathering would cost).
Prints a Markdown table.
"""

import os
import stat
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

DELAY = 0.5
ROUNDS = 3

STUB = """#!%s
import sys, time
time.sleep(%r)
outputs = %r
key = " ".join(["npu-smi"] + sys.argv[1:])
if key not in outputs:
    sys.stderr.write("unknown command\\n")
    sys.exit(1)
sys.stdout.write(outputs[key])
"""


def make_stub(directory):
    data = snapshot.load(os.path.join(REPO, "tests", "snapshots", "a3-16die"))
    outputs = dict((k, v["stdout"]) for k, v in data["commands"].items() if k.startswith("npu-smi"))
    path = os.path.join(directory, "npu-smi")
    with open(path, "w") as handle:
        handle.write(STUB % (sys.executable, DELAY, outputs))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def best(func):
    times = []
    for dummy in range(ROUNDS):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        make_stub(tmp)
        os.environ["PATH"] = tmp + os.pathsep + os.environ.get("PATH", "")
        io = hostio.LiveHostIO()
        singles = dict((" ".join(argv), best(lambda a=argv: io.run(a))) for _name, argv in topology.COMMANDS)
        slowest = max(singles.values())
        serial = sum(singles.values())
        gather = best(lambda: topology.gather(io))
        facts = topology.gather(io)
        assert facts["device_type"] == "A3" and len(facts["npus"]) == 16, facts["errors"]
    print("| measurement | seconds | vs slowest single call | vs serial sum of calls |")
    print("|---|---:|---:|---:|")
    print(
        "| slowest single call (npu-smi stand-in, %.1f s) | %.3f | 1.00x | %.2fx |" % (DELAY, slowest, slowest / serial)
    )
    print("| serial sum of the %d calls | %.3f | %.2fx | 1.00x |" % (len(singles), serial, serial / slowest))
    print(
        "| `topology.gather` (concurrent, live) | %.3f | **%.2fx** | %.2fx |"
        % (gather, gather / slowest, gather / serial)
    )


if __name__ == "__main__":
    main()
