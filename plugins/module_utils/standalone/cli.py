# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The command line of npuops-bind (``standalone/binder``): its options, their defaults and
the checks argparse cannot make (``--pid``/``--npu`` pairs, an http(s) ``--ready-url``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse

from . import irqs


def parse_args(argv, description=None):
    """The binder's options (``--help`` lists them); argparse's exit 2 on a bad command line."""
    parser = argparse.ArgumentParser(prog="npuops-bind", description=description)
    add = parser.add_argument
    add("--plan", required=True, help="plan JSON written by vllm_launch_wrapper")
    add("--instance", help="refuse a plan written for another instance")
    add("--timeout", type=float, default=900.0, help="seconds for every device to show its worker")
    add("--interval", type=float, default=2.0, help="polling interval (s)")
    add("--tool-timeout", type=float, default=30.0, help="seconds one npu-smi/nvidia-smi call may take")
    add("--thread-wait", type=float, default=60.0, help="seconds a worker may take to start its acl/release threads")
    add(
        "--follow",
        type=float,
        default=0.0,
        help="keep re-binding new threads and processes this long after all is bound (s)",
    )
    add("--once", action="store_true", help="one pass: bind what runs now, wait for nothing")
    add(
        "--root-pid",
        type=int,
        default=None,
        help="the service's main process (default: $MAINPID when set, else --unit's)",
    )
    add("--unit", help="systemd unit of the instance: its MainPID is the root when none is given")
    add("--no-frontend", dest="frontend", action="store_false", help="leave the frontend processes alone")
    add("--ready-url", help="http URL answering 200 once the server is ready (memory moves then)")
    add("--ready-timeout", type=float, default=1800.0, help="seconds to wait for --ready-url")
    add(
        "--uniproc-after",
        type=float,
        default=60.0,
        help="an EngineCore with no worker child this long after it started runs the model "
        "itself (vLLM's uniproc executor) and is bound as its device's worker; sooner when "
        "--ready-url answers or the device tools show it (s)",
    )
    add("--no-migrate", dest="migrate", action="store_false", help="never move memory")
    add(
        "--migrate-shared",
        action="store_true",
        help="also move pages shared with other processes (migratepages with CAP_SYS_NICE)",
    )
    add("--migrate-timeout", type=float, default=600.0, help="seconds one migratepages may take")
    add("--pid", type=int, action="append", default=[], help="bind this known worker pid (with --npu), skip discovery")
    add("--npu", type=int, action="append", default=[], help="the device of the matching --pid")
    add("--irq-state", help="IRQ state file of npu_irq_affinity: re-pin the instance's IRQs")
    add("--all-irqs", action="store_true", help="with --irq-state: every IRQ, not only ours")
    add("--proc-irq", default=irqs.PROC_IRQ, help="where the IRQ directories are (a sandbox)")
    add("--metrics-dir", help="write npuops_<instance>.prom here (node_exporter textfiles)")
    add("--check", action="store_true", help="report, change nothing")
    add("--json", action="store_true", help="write a JSON report to stdout")
    args = parser.parse_args(argv)
    if len(args.pid) != len(args.npu):
        parser.error("--pid and --npu must be given in pairs")
    if args.ready_url and not args.ready_url.startswith(("http://", "https://")):
        parser.error("--ready-url must be an http(s) URL")
    return args
