#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""A stand-in vLLM process tree, for the binder's tests, its bench and the demo's drift loop.

    STAND_IN_PYTHON=$(which python3) python3 vllm_stand_in.py main PREFIX WORKERS LATE_AFTER

The main process (the API server) starts ``<P>::EngineCore``, which starts ``WORKERS`` workers
(``<P>`` is ``$VLLM_PROCESS_NAME_PREFIX``, default ``VLLM``, as vLLM reads it), each with
``acl_thread``, ``release_thread`` and ``worker_thread`` threads named through prctl, as
torch_npu names them; with LATE_AFTER > 0 a worker starts one more thread that many seconds
later. The layout follows real vLLM 0.32 (docs/research: the real process tree):

- ``STAND_IN_TITLES=A,B``: a worker is spawned as a plain ``python3`` child and keeps that
  title A seconds, is ``<P>::Worker`` B seconds, then takes its final title (without it the
  worker is spawned under its final title). vLLM retitles through setproctitle, which
  overwrites the process's own argv; so does this stand-in (through /proc/self/mem).
- the final title is ``<P>::Worker_TP<n>`` with several workers, ``<P>::Worker`` with one
  (TP=1), or ``STAND_IN_FINAL`` (``{rank}`` replaced) when set.
- ``STAND_IN_DP=D``: D engines ``<P>::EngineCore_DP<r>``, each with WORKERS workers.
- ``STAND_IN_UNIPROC=1``: the engine starts no worker and runs the worker threads itself
  (vLLM's uniproc executor, GPU TP=1).
- ``STAND_IN_DECOYS=N``: the main process also starts N processes titled like workers
  (``<P>::Worker_TP0``, ``<P>::Worker``) that are no workers, each with one ``acl_thread``.
- ``STAND_IN_THREADS=N``: each worker starts N more plain threads (a bench's 100-thread worker).
- ``STAND_IN_START_ORDER=1,0``: the engine starts its workers in this order of local ranks
  (vLLM >= 0.33 may start them at once, so rank 1 can be the first), each 0.1 s after the last.
- ``STAND_IN_SPAWN_DELAY=S``: an engine waits S seconds before it starts its workers (vLLM
  loads its config first), ``STAND_IN_PAD=N``: room in argv for a title of N characters.

Each worker writes ``PREFIX.<index>`` (its pid, thread ids and the CPUs it inherited, JSON) when
its threads run, and
``PREFIX.<index>.final`` once it carries its final title; each engine writes
``PREFIX.engine[<r>]`` and, as it starts its workers, ``PREFIX.spawn[<r>]`` (the CPUs they
inherit), each decoy ``PREFIX.decoy<i>``. Nothing else is touched; every process
exits after STAND_IN_LIFETIME seconds (default 300).
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
TITLE_PREFIX = os.environ.get("VLLM_PROCESS_NAME_PREFIX", "VLLM")
# room in argv for the titles a process gives itself later
PAD = "#" * int(os.environ.get("STAND_IN_PAD", "200"))


def set_name(name):
    LIBC.prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)  # PR_SET_NAME


def set_title(title):
    """What setproctitle does on Linux: the title over the process's own argv area (the first
    word of /proc/<pid>/cmdline) and its comm."""
    with open("/proc/self/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48, 49)
    data = title.encode()[: end - start - 1]
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(start)
        mem.write(data + b"\0" * (end - start - len(data)))
    set_name(title[:15])


def tid():
    return threading.get_native_id() if hasattr(threading, "get_native_id") else LIBC.syscall(186)


def spawn(title, *args):
    # argv[0] is the title, as setproctitle leaves it in /proc/<pid>/cmdline; sys.executable
    # is empty in a process whose argv[0] is a title, so the caller passes the interpreter.
    # Without a title it is a plain multiprocessing-like child: python3 <script> ...
    python = os.environ["STAND_IN_PYTHON"]
    return subprocess.Popen([title or python, __file__] + list(args) + [PAD], executable=python)


def write_text(path, text):
    """Write ``path`` whole or not at all (a reader polls for it)."""
    with open(path + ".tmp", "w") as handle:
        handle.write(text)
    os.rename(path + ".tmp", path)


def write_json(path, doc):
    write_text(path, json.dumps(doc))


def titles():
    steps = [float(x) for x in os.environ.get("STAND_IN_TITLES", "").split(",") if x]
    return (steps + [0.0, 0.0])[:2] if steps else None


def final_title(rank, count):
    template = os.environ.get("STAND_IN_FINAL")
    if template:
        return "%s::%s" % (TITLE_PREFIX, template.replace("{rank}", str(rank)))
    return "%s::Worker%s" % (TITLE_PREFIX, "_TP%d" % rank if count > 1 else "")


def start_order(count):
    """The local ranks in the order the engine starts them: ``STAND_IN_START_ORDER`` (``1,0``:
    rank 1 first, as vLLM >= 0.33's concurrent start may), else rank order."""
    text = os.environ.get("STAND_IN_START_ORDER")
    order = [int(x) for x in text.split(",")] if text else list(range(count))
    if sorted(order) != list(range(count)):
        raise SystemExit("STAND_IN_START_ORDER=%s is no order of %d ranks" % (text, count))
    return order


def worker(out, rank, count, late_after):
    ready, stop = [], threading.Event()

    def body(name, record):
        set_name(name)
        record.append((name, tid()))
        stop.wait(LIFETIME)

    names = ["acl_thread", "release_thread", "worker_thread"]
    names += ["pt_gloo_%d" % i for i in range(int(os.environ.get("STAND_IN_THREADS", "0")))]
    for name in names:
        threading.Thread(target=body, args=(name, ready), daemon=True).start()
    while len(ready) < len(names):
        time.sleep(0.01)
    write_json(out, {"pid": os.getpid(), "threads": dict(ready[:3]), "start_cpus": START_CPUS})
    steps = titles()
    if steps:
        time.sleep(steps[0])
        set_title("%s::Worker" % TITLE_PREFIX)
        time.sleep(steps[1])
        set_title(final_title(rank, count))
    write_text(out + ".final", final_title(rank, count))
    if late_after > 0:
        time.sleep(late_after)
        late = []
        threading.Thread(target=body, args=("late_worker", late), daemon=True).start()
        while not late:
            time.sleep(0.01)
        write_text(out + ".late", str(late[0][1]))
    stop.wait(LIFETIME)


def engine(prefix, index, count, late_after, dp_rank):
    write_text(prefix + ".engine%s" % ("" if dp_rank is None else dp_rank), str(os.getpid()))
    if os.environ.get("STAND_IN_UNIPROC") == "1":
        worker("%s.%d" % (prefix, index), 0, 1, late_after)
        return
    time.sleep(float(os.environ.get("STAND_IN_SPAWN_DELAY", "0")))
    write_json(
        prefix + ".spawn%s" % ("" if dp_rank is None else dp_rank), {"cpus": sorted(os.sched_getaffinity(0))}
    )  # what its workers inherit
    workers = []
    for position, rank in enumerate(start_order(count)):
        if position:
            time.sleep(0.1)  # a later start tick (10 ms) for each worker started after another
        title = None if titles() else final_title(rank, count)
        workers.append(spawn(title, "worker", "%s.%d" % (prefix, index + rank), str(rank), str(count), str(late_after)))
    for proc in workers:
        proc.wait()


def decoy(out, title):
    set_title(title)
    body = threading.Thread(target=lambda: (set_name("acl_thread"), time.sleep(LIFETIME)))
    body.daemon = True
    body.start()
    write_json(out, {"pid": os.getpid()})
    time.sleep(LIFETIME)


START_CPUS = sorted(os.sched_getaffinity(0))  # what the process inherited


def main(argv):
    role, prefix = argv[1], argv[2]
    if role == "worker":
        worker(prefix, int(argv[3]), int(argv[4]), float(argv[5]))
        return
    if role == "decoy":
        decoy(prefix, argv[3])
        return
    count, late_after = int(argv[3]), float(argv[4])
    if role == "engine":
        dp_rank = None if argv[6] == "-" else int(argv[6])
        engine(prefix, int(argv[5]), count, late_after, dp_rank)
        return
    dp = int(os.environ.get("STAND_IN_DP", "1"))
    children = []
    for rank in range(dp):
        title = "%s::EngineCore%s" % (TITLE_PREFIX, "_DP%d" % rank if dp > 1 else "")
        children.append(
            spawn(title, "engine", prefix, str(count), str(late_after), str(rank * count), str(rank) if dp > 1 else "-")
        )
    for index in range(int(os.environ.get("STAND_IN_DECOYS", "0"))):
        title = "%s::Worker%s" % (TITLE_PREFIX, "_TP0" if index % 2 == 0 else "")
        children.append(spawn(None, "decoy", "%s.decoy%d" % (prefix, index), title))
    for proc in children:
        proc.wait()


if __name__ == "__main__":
    main(sys.argv)
