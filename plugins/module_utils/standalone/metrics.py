# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus textfile metrics of one binder run, for node_exporter's textfile collector:
``<dir>/npuops_<instance>.prom``, written to a temporary file in the same directory
(``.npuops-<hex>.tmp``, which the textfile collector skips) and renamed, so a scrape never
reads half a file. Every metric is a gauge with ``# HELP`` and ``# TYPE`` lines, snake_case with its unit (``promtool check metrics`` is clean).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

_NAME_RE = r"^[A-Za-z0-9_.@-]{1,200}\Z"

HELP = (
    ("npuops_binding_drift_threads", "Threads found off their planned CPUs by the last binder run."),
    ("npuops_binding_threads", "Threads the last binder run checked."),
    ("npuops_irq_drift", "1 when the IRQ's affinity differed from the plan at the last run."),
    ("npuops_worker_remote_memory_ratio", "Share of a worker's resident memory outside its planned NUMA node."),
    ("npuops_cpu_intruders", "Processes outside the vLLM trees allowed on a partitioned host's isolated CPUs."),
    ("npuops_instance_up", "1 when the instance's main process runs, 0 when it is down."),
    ("npuops_instance_workers_missing", "Devices of the instance that showed no worker."),
    ("npuops_binder_last_run_success", "1 when the last binder run bound everything it found."),
    ("npuops_binder_last_run_timestamp_seconds", "Unix time the last binder run ended."),
)


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels):
    return "{%s}" % ",".join('%s="%s"' % (key, _escape(value)) for key, value in labels)


def render(samples):
    """Exposition text of ``samples``: ``[(metric, [(label, value)], number)]``; the metrics
    in HELP's order, each with its HELP and TYPE lines once."""
    lines = []
    for name, text in HELP:
        rows = [(labels, value) for metric, labels, value in samples if metric == name]
        if not rows:
            continue
        lines.append("# HELP %s %s" % (name, text))
        lines.append("# TYPE %s gauge" % name)
        for labels, value in rows:
            number = repr(float(value)) if isinstance(value, float) else str(int(value))
            lines.append("%s%s %s" % (name, _labels(labels), number))
    return "\n".join(lines) + "\n"


def failure_samples(instance, failed=True):
    """The samples of a run that could not bind at all (a bad plan, a crash): its success
    (0) and its time, so the last success is never left exported."""
    import time  # pylint: disable=import-outside-toplevel

    labels = [("instance", instance)]
    return [
        ("npuops_binder_last_run_success", labels, int(not failed)),
        ("npuops_binder_last_run_timestamp_seconds", labels, float(int(time.time()))),
    ]


def write(directory, instance, samples):
    """Write ``npuops_<instance>.prom`` atomically (``host/paths.write_atomic_at``); returns
    its path. Everything acts on one descriptor of ``directory`` (opened without following a
    link: a symlinked metrics dir is refused) and on the temporary file's own descriptor (mode
    set with fchmod): whoever can write the directory (node_exporter's user) cannot swap a
    path under the binder, which runs as root."""
    # imported here: a run without --metrics-dir writes nothing
    from ansible_collections.npuops.fleet.plugins.module_utils.host import paths  # pylint: disable=import-outside-toplevel

    if not isinstance(instance, str) or not re.match(_NAME_RE, instance):
        raise ValueError("instance name %r cannot name a metrics file" % (instance,))
    name = "npuops_%s.prom" % instance
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        dir_fd = os.open(directory, flags)
    except OSError as err:
        if os.path.islink(directory):
            raise ValueError("metrics dir %s is a symlink; refusing to write through it" % directory)
        raise err
    try:
        paths.write_atomic_at(dir_fd, name, render(samples).encode("utf-8"), mode=0o644)
    finally:
        os.close(dir_fd)
    return os.path.join(directory, name)
