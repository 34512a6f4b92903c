#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""A stand-in vLLM process tree, for the binder's tests and the demo's drift loop (make demo).

    STAND_IN_PYTHON=$(which python3) python3 vllm_stand_in.py main PREFIX WORKERS LATE_AFTER

The main process (the API server) starts ``VLLM::EngineCore``, which starts ``WORKERS``
``VLLM::Worker_TP<n>`` processes, each with ``acl_thread``, ``release_thread`` and
``worker_thread`` threads named through prctl, as torch_npu names them; with LATE_AFTER > 0 a
worker starts one more thread that many seconds later. Each worker writes
``PREFIX.<rank>`` (its pid and thread ids, JSON) when its threads run; the engine writes
``PREFIX.engine``. Nothing else is touched; every process exits after STAND_IN_LIFETIME seconds
(default 300).
"""
from __future__ import print_function

import ctypes
import json
import os
import subprocess
import sys
import threading
import time

LIBC = ctypes.CDLL(None, use_errno=True)
LIFETIME = float(os.environ.get("STAND_IN_LIFETIME", "300"))


def set_name(name):
    LIBC.prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)  # PR_SET_NAME


def tid():
    return threading.get_native_id() if hasattr(threading, "get_native_id") else LIBC.syscall(186)


def spawn(title, *args):
    # argv[0] is the title, as setproctitle leaves it in /proc/<pid>/cmdline; sys.executable
    # is empty in a process whose argv[0] is a title, so the caller passes the interpreter
    return subprocess.Popen([title, __file__] + list(args), executable=os.environ["STAND_IN_PYTHON"])


def worker(out, late_after):
    ready, stop = [], threading.Event()

    def body(name, record):
        set_name(name)
        record.append((name, tid()))
        stop.wait(LIFETIME)

    for name in ("acl_thread", "release_thread", "worker_thread"):
        threading.Thread(target=body, args=(name, ready), daemon=True).start()
    while len(ready) < 3:
        time.sleep(0.01)
    with open(out + ".tmp", "w") as handle:
        json.dump({"pid": os.getpid(), "threads": dict(ready)}, handle)
    os.rename(out + ".tmp", out)
    if late_after > 0:
        time.sleep(late_after)
        late = []
        threading.Thread(target=body, args=("late_worker", late), daemon=True).start()
        while not late:
            time.sleep(0.01)
        with open(out + ".late", "w") as handle:
            handle.write(str(late[0][1]))
    stop.wait(LIFETIME)


def main(argv):
    role, prefix = argv[1], argv[2]
    count, late_after = int(argv[3]), float(argv[4])
    if role == "worker":
        worker(prefix, late_after)
    elif role == "engine":
        workers = [spawn("VLLM::Worker_TP%d" % rank, "worker", "%s.%d" % (prefix, rank),
                         str(count), str(late_after)) for rank in range(count)]
        with open(prefix + ".engine", "w") as handle:
            handle.write(str(os.getpid()))
        for proc in workers:
            proc.wait()
    else:
        spawn("VLLM::EngineCore", "engine", prefix, str(count), str(late_after)).wait()


if __name__ == "__main__":
    main(sys.argv)
