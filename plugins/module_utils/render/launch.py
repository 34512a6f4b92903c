# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a vLLM instance's launch files from a plan: bash wrapper, systemd unit (plan JSON:
``render/plan_json``, re-exported here).

Pure functions (text in, text out). ``instance_view`` resolves which devices and CPUs an
instance owns; ``render_wrapper`` / ``render_unit`` / ``render_plan_json`` turn that into
files. Every value that reaches a shell is ``shlex.quote``d, every value that reaches a unit
file is systemd-escaped, so hostile arguments reach vLLM verbatim and run nothing.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import shlex

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist, cpuset
from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema, vendors
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch_flags
from ansible_collections.npuops.fleet.plugins.module_utils.render.plan_json import (  # noqa: F401 pylint: disable=unused-import
    PLAN_JSON_SCHEMA,
    render_plan_json,
)

NAME_RE = schema.INSTANCE_NAME
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# Variables bash will not pass on as they were exported: readonly ones (``export`` fails and
# ``set -e`` aborts the wrapper) and special ones whose value bash makes up or resets (the
# value never reaches vLLM). test_launch checks the list against the installed bash.
BASH_READONLY = frozenset(["SHELLOPTS", "BASHOPTS", "UID", "EUID", "PPID", "BASH_VERSINFO"])
BASH_SPECIAL = frozenset(
    [
        "GROUPS",
        "FUNCNAME",
        "RANDOM",
        "SRANDOM",
        "LINENO",
        "_",
        "SECONDS",
        "EPOCHSECONDS",
        "EPOCHREALTIME",
        "BASHPID",
        "BASH_ARGV",
        "BASH_ARGC",
        "BASH_LINENO",
        "BASH_SOURCE",
        "BASH_SUBSHELL",
        "BASH_COMMAND",
        "BASH_ALIASES",
        "BASH_CMDS",
        "DIRSTACK",
        "HISTCMD",
        "PIPESTATUS",
        "OPTIND",
        "SHLVL",
    ]
)
# Characters a path may hold to be written into a unit file as it is (ExecStart=, the binder's
# arguments): no blank, quote, backslash, '$', '%' or ';', which systemd would expand or split.
PATH_CHARS_RE = re.compile(r"^[A-Za-z0-9_./+,:=@~-]+\Z")
MAX_NAME_BYTES = 255  # NAME_MAX: one path component
ADDITIONAL_CONFIG_FLAGS = ("--additional-config", "--additional_config")
BINDINGS = ("host", "vllm")
# Characters systemd takes literally in a command line word (no quoting needed).
_SYSTEMD_SAFE_RE = re.compile(r"^[A-Za-z0-9_./:@+=,-]+\Z")


def check_name(name):
    """An instance name is used in file and unit names (rule: ``schema.INSTANCE_NAME``)."""
    problem = schema.instance_name_problem(name)
    if problem:
        raise WrapperError("name %s: %s" % (_short(name), problem))
    return name


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_dir(path, option):
    """``dest`` / ``unit_dir``: absolute, no ``.``/``..``, components of at most 255 bytes, and
    only characters a unit file carries as they are (``PATH_CHARS_RE``)."""
    if not isinstance(path, str) or not path.startswith("/") or not PATH_CHARS_RE.match(path):
        raise WrapperError(
            "%s: %s must be an absolute path of [A-Za-z0-9_./+,:=@~-] (no blank, "
            "quote, backslash, '$', '%%' or ';': the unit file names it)" % (option, _short(path))
        )
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise WrapperError("%s: %s has '.' or '..' components" % (option, _short(path)))
    if any(len(p) > MAX_NAME_BYTES for p in parts) or len(path) > 1024:
        raise WrapperError("%s: %s is too long" % (option, _short(path)))
    return "/" + "/".join(parts)


def _vendor(plan):
    return vendors.of_plan(plan).name


def _cpus(value, source):
    cpus = cpuset.parse_option(value, source)
    return list(cpus) if cpus else []


def instance_view(plan, name, npus=None, command=None):
    """What instance ``name`` owns under ``plan``.

    Devices: ``npus`` when given, else the plan instance's ``npus``, else every device of the
    plan: the visible list (``visible``). A ``--device-ids`` in ``command`` picks from it, as
    vLLM does (``launch_flags.device_order``): ``devices`` is then the devices in rank order
    (local rank r of DP engine d on ``devices[d*ws + r]``). The CPUs are the plan instance's
    (``main``, ``pool``, ``numa_nodes``, ``frontend``: what npu_cpu_plan decided, never
    recomputed here); a device list that is not the plan instance's raises WrapperError, and
    only where the plan has no such instance, or ``--device-ids`` uses some of its devices,
    are they the union of the devices' entries.
    The wrapper exports the visibility variable (the one place it is written); a plan env or
    plan instance env that sets it (plans of earlier releases did) must name exactly these
    devices and is dropped from ``env``. Returns ``{name, vendor, devices, main, pool,
    numa_nodes, env, device_type, mode}`` with CPU sets as sorted lists of ints. Raises
    WrapperError naming the missing device.
    """
    check_name(name)
    if not isinstance(plan, dict):
        raise WrapperError("plan: must be a dict (the npu_cpu_plan result)")
    schema.check_plan(plan)
    if plan.get("skipped"):
        raise WrapperError("plan: skipped (%s); nothing to launch with" % (plan.get("reason"),))
    row = vendors.of_plan(plan)
    vendor = row.name
    table_key = row.device_key
    table = plan.get(table_key) or {}
    if not isinstance(table, dict) or not table:
        raise WrapperError("plan: has no %s" % table_key)
    instance = (plan.get("instances") or {}).get(name) or {}
    if npus is None:
        npus = instance.get("npus") if instance.get("npus") is not None else instance.get("gpus")
    if npus is None:
        npus = sorted(int(k) for k in table)
    try:
        devices = [int(n) for n in npus]
    except (TypeError, ValueError):
        raise WrapperError("npus: %r is not a list of device ids" % (npus,))
    if not devices:
        raise WrapperError("npus: the instance %s has no devices" % name)
    if len(set(devices)) != len(devices):
        raise WrapperError("npus: %r lists a device twice" % (devices,))
    visible = devices
    planned = _planned_devices(instance)
    if planned is not None and planned != visible:
        _check_planned(table, table_key, visible)
        raise WrapperError(
            "npus: %s are not the devices of plan instance %s (%s); npus must "
            "name the planned devices; leave npus out to use the plan instance's"
            % (",".join(map(str, visible)), name, ",".join(map(str, planned)))
        )
    devices = launch_flags.device_order(command, visible, row) if command else visible
    main, pool, nodes = set(), set(), set()
    gpu_entries = []
    _check_planned(table, table_key, devices)
    for dev in devices:
        entry = table[str(dev)]
        source = "plan %s %d" % (table_key, dev)
        dev_pool = _cpus(entry.get("pool"), source + " pool")
        dev_main = dev_pool if row.is_gpu else _cpus(entry.get("main"), source + " main")
        if not dev_main:
            raise WrapperError("%s: no main CPUs" % source)
        main.update(dev_main)
        pool.update(dev_pool or dev_main)
        if row.is_gpu:
            if entry.get("numa_node") is not None:
                nodes.add(int(entry["numa_node"]))
            gpu_entries.append(
                {"nic": entry.get("nic"), "numa_node": entry.get("numa_node"), "pool": sorted(dev_pool or dev_main)}
            )
        else:
            nodes.update(int(n) for n in entry.get("numa_nodes") or [])
    env = {}
    for source, extra in (("plan env", plan.get("env")), ("plan instance %s env" % name, instance.get("env"))):
        if extra:
            # npu_cpu_plan writes the visibility variable into each instance's env: accepted
            # when it names the devices derived here (the wrapper exports that value itself).
            extra = check_env(extra, source)
            for var in row.visibility:
                extra = drop_visibility(
                    extra,
                    var,
                    visible,
                    source,
                    "npus must name the planned devices; leave npus out to use the plan instance's",
                )
            env.update(extra)
    if planned is not None and instance.get("main") and instance.get("pool") and sorted(devices) == sorted(visible):
        # the plan instance's own CPUs: what the plan decided, not a union recomputed here
        # (a --device-ids that uses only some of them: the CPUs of the devices it uses)
        source = "plan instance %s" % name
        main = _cpus(instance["main"], source + " main")
        pool = _cpus(instance["pool"], source + " pool")
        nodes = set(_node_list(instance.get("numa_nodes"), source + " numa_nodes"))
    frontend = _cpus(instance.get("frontend"), "plan instance %s frontend" % name)
    host_cpus = set()
    for node, cpus in sorted((plan.get("numa_nodes") or {}).items()):
        host_cpus.update(_cpus(cpus, "plan numa_nodes %s" % node) if cpus else [])
    return {
        "name": name,
        "vendor": vendor,
        "devices": devices,
        "visible": visible,
        "main": sorted(main),
        "pool": sorted(pool),
        "numa_nodes": sorted(nodes),
        "env": env,
        "frontend": sorted(frontend),
        "gpus": gpu_entries,
        "host_cpus": sorted(host_cpus),
        "device_type": plan.get("device_type"),
        "mode": plan.get("mode"),
    }


def _check_planned(table, table_key, devices):
    """WrapperError naming the first of ``devices`` the plan's table has no entry for."""
    for dev in devices:
        if not isinstance(table.get(str(dev)), dict):
            raise WrapperError(
                "plan: %s %d is not in the plan (planned: %s)" % (table_key[:-1].upper(), dev, ", ".join(sorted(table)))
            )


def _planned_devices(instance):
    """The plan instance's devices (``npus``, GPU plans of earlier releases ``gpus``) as ints,
    or None when the plan has no such instance."""
    listed = instance.get("npus") if instance.get("npus") is not None else instance.get("gpus")
    if listed is None:
        return None
    try:
        return [int(n) for n in listed]
    except (TypeError, ValueError):
        raise WrapperError("plan instance: npus %r is not a list of device ids" % (listed,))


def _node_list(value, source):
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value):
        raise WrapperError("%s: %r is not a list of NUMA node ids" % (source, value))
    return value


def visibility_var(vendor):
    """The device visibility variable of a vendor's runtime (the first of its table row)."""
    return (vendors.get(vendor) or vendors.VENDORS["ascend"]).visibility[0]


def _device_ids(value):
    try:
        return [int(part) for part in value.split(",")]
    except ValueError:
        return None


def drop_visibility(env, var, devices, source, hint=None):
    """``env`` without the visibility variable ``var``, which must name exactly ``devices``.

    A value equal to the derived device list (same ids, same order, spaces ignored) is
    accepted and dropped: the wrapper exports it itself. Any other value contradicts the
    instance and raises WrapperError naming ``source``, the value and the devices.
    """
    out = dict(env)
    if var not in out:
        return out
    value = out.pop(var)
    if _device_ids(value.replace(" ", "")) != list(devices):
        expected = ",".join(str(d) for d in devices)
        raise WrapperError(
            "%s: %s=%s contradicts the instance's devices (%s); %s"
            % (
                source,
                var,
                value,
                expected,
                hint or "the wrapper exports %s itself: leave it out of env and choose the devices with npus" % var,
            )
        )
    return out


MAX_ENV_VALUE = 131072 - 1  # MAX_ARG_STRLEN: one NAME=value string, NUL included


def check_env(env, source="env"):
    """Validate an environment dict: names are shell identifiers, values strings without NUL."""
    if not isinstance(env, dict):
        raise WrapperError("%s: must be a dict of NAME: value" % source)
    out = {}
    for key, value in env.items():
        if not isinstance(key, str) or not ENV_NAME_RE.match(key):
            raise WrapperError("%s: %s is not a valid environment variable name" % (source, _short(key)))
        if key in BASH_READONLY or key in BASH_SPECIAL:
            raise WrapperError(
                "%s: %s is a bash %s variable: the wrapper (bash) cannot pass it to "
                "vLLM" % (source, key, "readonly" if key in BASH_READONLY else "special")
            )
        if isinstance(value, bool):
            value = "1" if value else "0"
        if value is None:
            # null would export NAME='' silently
            raise WrapperError(
                "%s: %s: value must be a string, a number or a boolean, got null "
                "(quote it; '' for an empty value)" % (source, key)
            )
        if not isinstance(value, (str, int, float)):
            # str() would pass the Python repr ("['a', 'b']") to vLLM
            raise WrapperError(
                "%s: %s must be a string or a number, got a %s (join a list "
                "yourself, e.g. {{ items | join(',') }})"
                % (
                    source,
                    key,
                    "list"
                    if isinstance(value, (list, tuple))
                    else "mapping"
                    if isinstance(value, dict)
                    else type(value).__name__,
                )
            )
        value = str(value)
        if "\x00" in value:
            raise WrapperError("%s: %s contains a NUL byte" % (source, key))
        if len(value) > MAX_ENV_VALUE:
            raise WrapperError(
                "%s: %s is longer than %d characters (the kernel's limit for one "
                "environment string)" % (source, key, MAX_ENV_VALUE)
            )
        out[key] = value
    return out


def check_command(command):
    """The vLLM argv: a non-empty list of strings, program first (no leading '-', no NUL)."""
    if not isinstance(command, (list, tuple)) or not command:
        raise WrapperError("command: must be a non-empty list of arguments (argv)")
    for index, arg in enumerate(command):
        if not isinstance(arg, str):
            raise WrapperError("command[%d]: %r is not a string" % (index, arg))
        if "\x00" in arg:
            raise WrapperError("command[%d]: contains a NUL byte" % index)
    if not command[0] or command[0].startswith("-"):
        raise WrapperError("command[0]: %r must be the program to run (vllm, python3, ...)" % (command[0],))
    if len(command) == 1 and len(command[0].split()) > 1:
        # Ansible turns a string given for a list option into a one-element list: exec would
        # look for a program named after the whole line and the service could never start
        raise WrapperError(
            "command: %s is one string; give the command as a list of arguments, "
            "e.g. [vllm, serve, /models/m, --port, '8000']" % _short(command[0])
        )
    return list(command)


def merge_additional_config(command, settings):
    """Merge ``settings`` into every ``--additional-config`` JSON object of ``command``.

    Handles ``--additional-config=JSON`` and ``--additional-config JSON`` (and the
    underscore spelling vLLM also accepts); appends the option when absent. Returns
    ``(argv, overridden)`` where ``overridden`` lists keys whose user value we replaced.
    Raises WrapperError on JSON that is not an object.
    """
    argv = list(command)
    overridden = []
    found = False

    def merged(text, where):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as err:
            raise WrapperError(
                "command %s: --additional-config is not valid JSON (%s): %s" % (where, str(err)[:200], _short(text))
            )
        yaml_subset.check_depth(value, "command %s: --additional-config" % where, WrapperError)
        if not isinstance(value, dict):
            raise WrapperError("command %s: --additional-config must be a JSON object, got %s" % (where, _short(text)))
        for key, new in settings.items():
            if key in value and value[key] != new:
                overridden.append(key)
            value[key] = new
        return json.dumps(value, separators=(",", ":"))

    index = 1
    while index < len(argv):
        arg = argv[index]
        for flag in ADDITIONAL_CONFIG_FLAGS:
            if arg == flag:
                if index + 1 >= len(argv):
                    raise WrapperError("command[%d]: %s has no value" % (index, flag))
                argv[index + 1] = merged(argv[index + 1], "[%d]" % (index + 1))
                found = True
                index += 1
                break
            if arg.startswith(flag + "="):
                argv[index] = flag + "=" + merged(arg[len(flag) + 1 :], "[%d]" % index)
                found = True
                break
        index += 1
    if not found:
        argv.extend([ADDITIONAL_CONFIG_FLAGS[0], json.dumps(settings, separators=(",", ":"))])
    return argv, overridden


def launch_argv(view, command, binding="host", vllm=None):
    """The final argv the wrapper execs (before quoting) and warnings about it. ``vllm``: the
    instance's vLLM (``{version, source}``, None unknown): its flags come from
    ``vllm_flags`` (``launch_flags.numa_flags``)."""
    if binding not in BINDINGS:
        raise WrapperError("binding: %r must be one of %s" % (binding, ", ".join(BINDINGS)))
    argv = check_command(command)
    warnings = []
    launch_flags.check_device_ids(view, argv, vllm)
    if binding == "host" and view["vendor"] == "ascend":
        # Our binder owns the threads; vllm-ascend's in-process binding would re-pin them.
        argv, overridden = merge_additional_config(argv, {"enable_cpu_binding": False})
        if overridden:
            warnings.append(
                "command: enable_cpu_binding in --additional-config was set to false "
                "because binding=host (our binder pins the workers)"
            )
    plain = launch_flags.numa_flags(view, argv, binding, vllm, start_cpus(view))
    warnings.extend(plain["warnings"])
    argv = argv + plain["add"]
    if plain["lists"]:
        argv, note = numa_bind_args(view, argv)
        warnings.extend(note)
    if binding == "host":
        # the whole tree starts on the frontend and the workers' CPUs; the binder then moves
        # each process and thread to its own
        argv = ["taskset", "-c", cpulist.format(start_cpus(view))] + argv
    return argv, warnings


def vllm_summary(view, command, binding="host", vllm=None):
    """The instance's vLLM as the module returns it: ``{version, source, numa_bind}``, the
    last saying which NUMA binding the instance really gets."""
    numa = launch_flags.numa_flags(view, check_command(command), binding, vllm, start_cpus(view))
    return dict(vllm or {"version": None, "source": None}, numa_bind=numa["numa"])


def start_cpus(view):
    """The CPUs the instance starts on: its frontend and its devices' main CPUs."""
    return sorted(set(view["main"]) | set(view.get("frontend") or []))


def numa_bind_args(view, argv):
    """vLLM's own NUMA binding of GPU workers, from the plan: ``--numa-bind --numa-bind-nodes
    <node per GPU> --numa-bind-cpus <pool per GPU>`` (both indexed by the worker's GPU index, in
    the instance's device order; vllm/config/parallel.py). Left out when the command already
    sets it or a GPU has no NUMA node (numa=off hosts)."""
    if any(a == "--numa-bind" or a.startswith(("--numa-bind=", "--numa-bind-")) for a in argv):
        return argv, ["command: --numa-bind is set by the command; the plan's nodes are not added"]
    gpus = view.get("gpus") or []
    nodes = [g.get("numa_node") for g in gpus]
    if not gpus or not all(isinstance(n, int) and not isinstance(n, bool) for n in nodes):
        return argv, []
    return (
        argv
        + ["--numa-bind", "--numa-bind-nodes"]
        + [str(n) for n in nodes]
        + ["--numa-bind-cpus"]
        + [cpulist.format(g["pool"]) for g in gpus]
    ), []


def gpu_env(view):
    """Launch environment a GPU instance gets from its plan: devices numbered in PCI order (the
    plan's indexes are nvidia-smi's, which are PCI order) and UCX on the instance's NICs."""
    row = vendors.get(view["vendor"])
    if row is None or not row.is_gpu:
        return {}
    env = dict(row.launch_env)
    nics = []
    for gpu in view.get("gpus") or []:
        if gpu.get("nic") and gpu["nic"] not in nics:
            nics.append(gpu["nic"])
    if nics:
        env["UCX_NET_DEVICES"] = ",".join(nic + ":1" for nic in nics)
    return env


def visibility_env(view):
    """The visibility variable and its value: the instance's visible devices (``--device-ids``
    picks among them)."""
    return visibility_var(view["vendor"]), ",".join(str(d) for d in view.get("visible") or view["devices"])


def quote_always(value):
    """Single-quoted shell word, even when shlex would leave it bare (``=mlx5_0`` reads as
    ``==`` in an assignment to shellcheck)."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


def render_wrapper(view, command, env=None, binding="host", vllm=None):
    """Bash launch wrapper text for one instance. ``view`` comes from ``instance_view``."""
    argv, _warnings = launch_argv(view, command, binding, vllm)
    devices = visibility_env(view)[1]
    row = vendors.get(view["vendor"]) or vendors.VENDORS["ascend"]
    merged_env = gpu_env(view)
    plan_env, env = view.get("env") or {}, check_env(env or {}, "env")
    visible = view.get("visible") or view["devices"]
    for name in row.visibility:
        plan_env = drop_visibility(plan_env, name, visible, "plan env")
        env = drop_visibility(env, name, visible, "env")
    merged_env.update(plan_env)
    merged_env.update(env)
    lines = [
        "#!/usr/bin/env bash",
        "# vLLM instance %s, generated by npuops.fleet vllm_launch_wrapper; do not edit." % view["name"],
        "# devices: %s  main CPUs: %s  binding: %s" % (devices, cpulist.format(view["main"]), binding),
        "# vLLM: %s" % launch_flags.describe(view, vllm),
        # Arguments are single-quoted on purpose: '$(...)' and '\\' must stay literal.
        "# shellcheck disable=SC1003,SC2016",
        "set -euo pipefail",
        "",
    ]
    lines.extend("export %s=%s" % (name, shlex.quote(devices)) for name in row.visibility)
    lines.extend("unset %s" % name for name in row.clear)
    for name in row.clear:
        if name in merged_env:
            raise WrapperError(
                "env: %s would renumber the devices under %s; the wrapper unsets it" % (name, "/".join(row.visibility))
            )
    for key in sorted(merged_env):
        lines.append("export %s=%s" % (key, quote_always(merged_env[key])))
    lines.append("")
    lines.append("exec " + " ".join(shlex.quote(a) for a in argv))
    return "\n".join(lines) + "\n"


def systemd_quote(word):
    """One word of a systemd command line / setting, escaped (``%`` and ``$`` doubled)."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in word):
        raise WrapperError("systemd unit: %r contains a control character" % (word,))
    word = word.replace("%", "%%")
    if _SYSTEMD_SAFE_RE.match(word):
        return word
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$")
    return '"%s"' % escaped
