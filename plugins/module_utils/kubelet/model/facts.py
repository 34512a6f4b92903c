# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``kubernetes`` section of the facts: the kubelet as this host runs it, read via HostIO.

``gather(io)`` -> None on a host without a kubelet (no unit, no config, no state), else::

    kubelet: {version, config_file, config_dir, flags_from, config (the base file),
              dropins [{name, config}], effective (base + drop-ins, as the kubelet merges)}
    cpu_manager_state: parse_cpu_manager_state result or None
    memory_manager_state: ... or None
    device_checkpoint: parse_device_checkpoint result or None
    dra_state: parse_dra_checkpoint result or None (devices allocated through DRA claims)
    errors: [{source, msg}]    # a file that could not be read or parsed, and why
    unreadable_state: {path: why}   # a state file that is there but cannot be read: the
                                    # reset decision refuses to act on it

Each file is read at most ``MAX_BYTES`` (a larger one is an error, not a partial read).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as parse
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import devices as kubelet_devices

MAX_BYTES = 1 << 20
MAX_DROPINS = 64
STATE_DIR = "/var/lib/kubelet"
DEFAULT_CONFIG = "/var/lib/kubelet/config.yaml"
CPU_STATE = STATE_DIR + "/cpu_manager_state"
MEMORY_STATE = STATE_DIR + "/memory_manager_state"
DEVICE_CHECKPOINT = STATE_DIR + "/device-plugins/kubelet_internal_checkpoint"
DRA_STATE = STATE_DIR + "/dra_manager_state"  # pkg/kubelet/cm/dra/manager.go draManagerStateFileName
UNIT = "kubelet.service"
# systemd's unit search path, highest precedence first (systemd.unit(5), system manager)
UNIT_SEARCH = (
    "/etc/systemd/system.control",
    "/run/systemd/system.control",
    "/run/systemd/transient",
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)
SYSTEMCTL_ARGV = [
    "systemctl",
    "show",
    UNIT,
    "-p",
    "ExecStart",
    "-p",
    "Environment",
    "-p",
    "EnvironmentFiles",
    "--no-pager",
]
_VERSION_RE = re.compile(r"\bv?([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,4}[0-9A-Za-z.+-]{0,40})")


def _read(io, path, errors):
    text = io.read_text(path)
    if text is not None and len(text) > MAX_BYTES:
        errors.append({"source": path, "msg": "larger than %d bytes; not read" % MAX_BYTES})
        return None
    return text


def _parsed(io, path, func, errors):
    text = _read(io, path, errors)
    if text is None:
        return None
    try:
        return func(text, path)
    except ParseError as err:
        errors.append({"source": path, "msg": err.msg if hasattr(err, "msg") else str(err)})
        return None


def _state(io, path, func, errors, unreadable):
    """A kubelet state file parsed, None when absent; a file that is there but cannot be read
    (corrupt, oversized, an old format, a symlink, a directory or a FIFO where the kubelet keeps
    a regular file) goes into ``unreadable`` too: it is never taken as absent."""
    if not io.exists(path):
        return None
    directory, name = path.rsplit("/", 1)
    real = io.realpath(path)
    parent = io.realpath(directory or "/") if real not in (None, path) else None
    if real not in (None, path) and real != (parent or directory).rstrip("/") + "/" + name:
        # a link on the way is followed when it is the directory's (a data disk)
        problem = "is a symlink (to %s); the kubelet's state files are regular files" % real
    else:
        before = len(errors)
        value = _parsed(io, path, func, errors)
        if value is not None:
            return value
        problem = (
            errors[-1]["msg"]
            if len(errors) > before
            else "is not a regular file the module can read (a directory, a FIFO or a device)"
        )
        if len(errors) > before:
            unreadable[path] = problem
            return None
    errors.append({"source": path, "msg": problem})
    unreadable[path] = problem
    return None


def _unit_files(io):
    """``(main unit path or None, [drop-in paths])`` of kubelet.service as systemd finds them:
    the first directory of ``UNIT_SEARCH`` holding the unit; drop-ins from every directory, a
    name in a earlier directory masking the same name later, applied in name order."""
    main, dropins = None, {}
    for directory in UNIT_SEARCH:
        if main is None and io.exists(directory + "/" + UNIT):
            main = directory + "/" + UNIT
        names = io.listdir(directory + "/" + UNIT + ".d") or []
        for name in names:
            if name.endswith(".conf") and name not in dropins:
                dropins[name] = directory + "/" + UNIT + ".d/" + name
    return main, [dropins[n] for n in sorted(dropins)]


def _systemctl(io):
    """``systemctl show`` of the kubelet on a live host (None elsewhere, or when it fails)."""
    inner = getattr(io, "inner", io)
    if getattr(inner, "host_root", "/") != "/":
        return None  # a sandbox root: the real host's units are not its units
    result = io.run(SYSTEMCTL_ARGV, timeout=10)
    if result.missing or result.timed_out or result.rc != 0 or "ExecStart=" not in (result.stdout or ""):
        return None
    return result.stdout


def read_flags(io, errors):
    """(config file, config dir, files read) the kubelet is started with: its ExecStart as
    systemd resolves it (``systemctl show`` on a live host, else the unit files, drop-in
    precedence, ``ExecStart=`` resets, ``Environment=`` and ``EnvironmentFile=`` expanded)."""
    used = []
    shown = _systemctl(io)
    settings = None
    if shown is not None:
        try:
            settings = parse.parse_systemctl_show(shown, " ".join(SYSTEMCTL_ARGV))
            used.append(" ".join(SYSTEMCTL_ARGV))
        except ParseError as err:
            errors.append({"source": " ".join(SYSTEMCTL_ARGV), "msg": str(err)})
    if settings is None or not settings["exec_start"]:
        main, dropins = _unit_files(io)
        units = []
        for path in ([main] if main else []) + dropins:
            entries = _parsed(io, path, parse.parse_unit, errors)
            if entries is not None:
                units.append((path, entries))
                used.append(path)
        settings = parse.service_settings(units)
    environment = dict(settings["environment"])
    for path, optional in settings["environment_files"]:
        values = _parsed(io, path, parse.parse_env_file, errors)
        if values is None:
            if not optional and not io.exists(path):
                errors.append(
                    {
                        "source": path,
                        "msg": "an EnvironmentFile= of the kubelet that does not exist: systemd refuses to start it",
                    }
                )
            continue
        environment.update(values)  # the files' values win over Environment=
        used.append(path)
    if not settings["exec_start"]:
        return None, None, sorted(set(used))
    try:
        argv = parse.expand_command(settings["exec_start"], environment)
        flags = parse.config_flags(argv)
    except ParseError as err:
        errors.append({"source": "kubelet ExecStart", "msg": str(err)})
        return None, None, sorted(set(used))
    return flags["config"], flags["config_dir"], sorted(set(used))


def kubelet_version(io):
    path = io.which("kubelet")
    if not path:
        return None
    result = io.run([path, "--version"], timeout=10)
    if result.missing or result.timed_out or result.rc != 0:
        return None
    match = _VERSION_RE.search(result.stdout or "")
    return ("v" + match.group(1)) if match else None


def read_dropins(io, config_dir, errors):
    if not config_dir:
        return []
    names = sorted(n for n in (io.listdir(config_dir) or []) if n.endswith(".conf"))
    if len(names) > MAX_DROPINS:
        errors.append(
            {"source": config_dir, "msg": "more than %d drop-ins; the first %d read" % (MAX_DROPINS, MAX_DROPINS)}
        )
        names = names[:MAX_DROPINS]
    out = []
    for name in names:
        config = _parsed(io, config_dir + "/" + name, parse.parse_config, errors)
        if config is not None:
            out.append({"name": name, "config": config})
    return out


def gather(io, config_file=None, config_dir=None, version=True):
    """The kubernetes facts section, or None when nothing of a kubelet is on this host."""
    errors = []
    flag_config, flag_dir, used = read_flags(io, errors)
    config_file = config_file or flag_config or DEFAULT_CONFIG
    config_dir = config_dir or flag_dir
    base = _parsed(io, config_file, parse.parse_config, errors)
    dropins = read_dropins(io, config_dir, errors)
    unreadable = {}
    states = {
        "cpu_manager_state": _state(io, CPU_STATE, parse.parse_cpu_manager_state, errors, unreadable),
        "memory_manager_state": _state(io, MEMORY_STATE, parse.parse_memory_manager_state, errors, unreadable),
        "device_checkpoint": _parsed(io, DEVICE_CHECKPOINT, parse.parse_device_checkpoint, errors),
    }
    states.update(read_device_states(io, errors))
    if base is None and not dropins and not used and not any(states.values()) and not errors:
        return None
    effective = parse.merge_configs(base or {}, [(d["name"], d["config"]) for d in dropins])
    out = {
        "kubelet": {
            "version": kubelet_version(io) if version else None,
            "config_file": config_file,
            "config_dir": config_dir,
            "flags_from": used,
            "config": base,
            "dropins": dropins,
            "effective": effective,
        },
        "errors": errors,
        "unreadable_state": unreadable,
    }
    out.update(states)
    return out


def read_device_states(io, errors):
    """The kubelet's records of devices beyond the device plugins' checkpoint: the DRA
    manager's claims (``dra_manager_state``: claim, its pods, each driver's devices)."""
    return {"dra_state": _parsed(io, DRA_STATE, kubelet_devices.parse_dra_checkpoint, errors)}
