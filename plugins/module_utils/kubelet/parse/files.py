# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet's own files, text in, plain data out (``ParseError`` only).

- ``parse_config``: a KubeletConfiguration (YAML, as kubeadm writes it, or JSON), a base file
  or a ``--config-dir`` drop-in; ``merge_configs``: the configuration in effect (drop-ins in
  lexical order, mappings merged key by key, everything else replaced, as the kubelet does);
- ``parse_flags``: the ``--config`` / ``--config-dir`` the kubelet is started with, from its
  systemd unit, its drop-ins or kubeadm's ``kubeadm-flags.env``;
- ``parse_cpu_manager_state``: ``/var/lib/kubelet/cpu_manager_state`` (checkpoint v2: policyName,
  defaultCpuSet, entries {podUID: {container: cpuset}}, checksum; v3 ``podEntries``; the v4
  ``data`` string wins over the outer fields when present, as in the kubelet);
- ``parse_memory_manager_state``: ``memory_manager_state`` (policyName, machineState per NUMA
  node, entries {podUID: {container: [{numaAffinity, type, size}]}});
- ``parse_device_checkpoint``: ``device-plugins/kubelet_internal_checkpoint``
  (Data.PodDeviceEntries [{PodUID, ContainerName, ResourceName, DeviceIDs {numaNode: [ids]},
  AllocResp}], RegisteredDevices, Checksum); ``alloc`` is the decoded AllocResp
  (``kubelet/parse/devices.py``). A device without NUMA topology is filed under node -1 by the
  kubelet (``nodeWithoutTopology``); the pre-1.20 list form has no node at all (``None``).

Checksums are carried, not verified: the kubelet's is FNV-32a over a Go value dump.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError, SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import devices as kubelet_devices

KIND = "KubeletConfiguration"
API_VERSION = "kubelet.config.k8s.io/v1beta1"
MAX_ENTRIES = 100000  # pods x containers in one state file
_FLAG_RE = re.compile(r"(?:^|[\s\"'=])--(config|config-dir)(?:=|\s+)([^\s\"']+)")
_NODE_RE = re.compile(r"^-?[0-9]{1,4}\Z")


def _cpus(text, source):
    if not isinstance(text, str):
        raise ParseError(source, "a cpuset must be a string, not %s" % type(text).__name__)
    return cpulist.format(cpulist.parse(text, source))


def _mapping(value, source, what):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(source, "%s must be a mapping" % what)
    return value


def parse_config(text, source="kubelet config"):
    """A KubeletConfiguration (YAML subset or JSON) -> dict; an empty file is ``{}``."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    body = "\n".join(line for line in text.split("\n") if line.strip() != "---")
    if not body.strip():
        return {}
    try:
        value = yaml_subset.loads(body, source)
    except SnapshotError as err:
        raise ParseError(source, str(err))
    if not isinstance(value, dict):
        raise ParseError(source, "a kubelet configuration must be a mapping")
    kind = value.get("kind")
    if kind is not None and kind != KIND:
        raise ParseError(source, "kind is %r, not %s" % (kind, KIND))
    return value


def _merge(base, over):
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def merge_configs(base, dropins):
    """The configuration in effect: ``base`` then each ``(name, config)`` drop-in by name."""
    out = dict(base or {})
    for dummy, config in sorted(dropins or [], key=lambda item: item[0]):
        out = _merge(out, config or {})
    return out


def parse_flags(text, source="kubelet unit"):
    """``{"config": path|None, "config_dir": path|None}`` from unit/env text (last one wins)."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    found = {"config": None, "config_dir": None}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for name, value in _FLAG_RE.findall(line):
            if not value.startswith("/") or "\x00" in value:
                raise ParseError(source, "--%s %r is not an absolute path" % (name, value))
            found["config_dir" if name == "config-dir" else "config"] = value.rstrip("/") or "/"
    return found


MAX_UNIT_LINES = 10000
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _words(text, source):
    """Shell-like words of a unit or environment value: "double" and 'single' quotes, no
    expansion here; ``ParseError`` on an unclosed quote."""
    out, word, quote, started = [], [], None, False
    index = 0
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\" and quote == '"' and index + 1 < len(text):
                index += 1
                word.append(text[index])
            elif char == quote:
                quote = None
            else:
                word.append(char)
        elif char in "\"'":
            quote, started = char, True
        elif char.isspace():
            if started:
                out.append("".join(word))
            word, started = [], False
        else:
            word.append(char)
            started = True
        index += 1
    if quote:
        raise ParseError(source, "unclosed %s quote in %r" % (quote, text[:80]))
    if started:
        out.append("".join(word))
    return out


def parse_unit(text, source="kubelet unit"):
    """A systemd unit file or drop-in -> ``[(section, key, value)]`` in order: lines starting
    with ``#`` or ``;`` are comments (systemd.syntax(7)), a trailing backslash continues the
    line, keys keep their case."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    lines = text.split("\n")
    if len(lines) > MAX_UNIT_LINES:
        raise ParseError(source, "more than %d lines" % MAX_UNIT_LINES)
    out, section, pending = [], None, ""
    for raw in lines:
        line = raw.strip()
        if not pending and (not line or line[0] in "#;"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if "=" not in line:
            raise ParseError(source, "line %r is neither a [section] nor key=value" % line[:80])
        key, value = line.split("=", 1)
        out.append((section, key.strip(), value.strip()))
    return out


def parse_environment(value, source="Environment="):
    """An ``Environment=`` value (``"A=1" B=2``) -> ``{name: value}``."""
    out = {}
    for word in _words(value, source):
        if "=" in word and _ENV_NAME.match(word.split("=", 1)[0]):
            name, val = word.split("=", 1)
            out[name] = val
    return out


def parse_env_file(text, source="environment file"):
    """An ``EnvironmentFile=`` -> ``{name: value}``: ``#``/``;`` comment lines, quoted values."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    out = {}
    for line in text.split("\n")[:MAX_UNIT_LINES]:
        line = line.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        name, value = line.split("=", 1)
        name = name.strip()
        if name.startswith("export "):
            name = name[len("export ") :].strip()
        if not _ENV_NAME.match(name):
            continue
        value = value.strip()
        out[name] = " ".join(_words(value, source)) if value[:1] in "\"'" else value
    return out


def service_settings(units):
    """The ``[Service]`` settings of a unit and its drop-ins (``[(name, entries)]`` in the order
    systemd applies them) as systemd folds them: ``{exec_start: value or None, environment:
    {name: value}, environment_files: [(path, optional)]}``; an empty assignment resets the
    list (``ExecStart=``, ``Environment=``, ``EnvironmentFile=``)."""
    exec_start, environment, files = [], {}, []
    for dummy, entries in units:
        for section, key, value in entries:
            if section != "Service":
                continue
            if key == "ExecStart":
                exec_start = [] if not value else exec_start + [value]
            elif key == "Environment":
                if not value:
                    environment = {}
                else:
                    environment.update(parse_environment(value))
            elif key == "EnvironmentFile":
                if not value:
                    files = []
                else:
                    files.append((value[1:], True) if value.startswith("-") else (value, False))
    return {
        "exec_start": exec_start[-1] if exec_start else None,
        "environment": environment,
        "environment_files": files,
    }


def expand_command(value, environment, source="ExecStart="):
    """The argv of an ``ExecStart=`` value: its ``-@:+!`` prefixes dropped, ``$NAME`` split into
    words and ``${NAME}`` kept whole (systemd.service(5), "Command lines")."""
    words = _words(value, source)
    if words:
        words[0] = words[0].lstrip("-@:+!")
    argv = []
    for word in words:
        whole = re.match(r"^\$([A-Za-z_][A-Za-z0-9_]*)\Z", word)
        if whole:
            argv.extend(_words(environment.get(whole.group(1), ""), source))
            continue
        argv.append(_VAR.sub(lambda m: environment.get(m.group(1) or m.group(2), ""), word))
    return argv


def config_flags(argv, source="kubelet command line"):
    """``{"config": path|None, "config_dir": path|None}`` of a kubelet argv (the last wins, as
    the kubelet's flag parser does)."""
    found = {"config": None, "config_dir": None}
    index = 0
    while index < len(argv):
        word = argv[index]
        for name, key in (("--config", "config"), ("--config-dir", "config_dir")):
            value = None
            if word == name and index + 1 < len(argv):
                value = argv[index + 1]
                index += 1
            elif word.startswith(name + "="):
                value = word[len(name) + 1 :]
            if value is not None:
                if not value.startswith("/") or "\x00" in value:
                    raise ParseError(source, "%s %r is not an absolute path" % (name, value))
                found[key] = value.rstrip("/") or "/"
                break
        index += 1
    return found


def parse_systemctl_show(text, source="systemctl show kubelet"):
    """``systemctl show -p ExecStart -p Environment -p EnvironmentFiles`` -> the same shape as
    ``service_settings`` (ExecStart's ``argv[]`` unexpanded)."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    out = {"exec_start": None, "environment": {}, "environment_files": []}
    for line in text.split("\n")[:MAX_UNIT_LINES]:
        if line.startswith("ExecStart="):
            match = re.search(r"argv\[\]=(.*?) ;", line)
            if match:
                out["exec_start"] = match.group(1).strip()
        elif line.startswith("Environment="):
            out["environment"].update(parse_environment(line[len("Environment=") :], source))
        elif line.startswith("EnvironmentFiles="):
            value = line[len("EnvironmentFiles=") :].strip()
            match = re.match(r"^(\S+)(?: \(ignore_errors=(yes|no)\))?", value)
            if match:
                out["environment_files"].append((match.group(1), match.group(2) == "yes"))
    return out


def _field(doc, *names):
    """The first of ``names`` present (Go's JSON decoder matches keys case-insensitively)."""
    lowered = dict((k.lower(), k) for k in doc if isinstance(k, str))
    for name in names:
        if name.lower() in lowered:
            return doc[lowered[name.lower()]]
    return None


def parse_cpu_manager_state(text, source="cpu_manager_state"):
    """-> {policy, default_cpus, entries {pod: {container: cpus}}, pod_entries, checksum, format}."""
    doc = kubelet_devices.load_json(text, source)
    if not isinstance(doc, dict):
        raise ParseError(source, "must be a JSON object")
    fmt, outer = "v2", doc
    data = _field(doc, "data")
    if (data is None) != (_field(doc, "dataChecksum") is None):
        raise ParseError(source, "a v4 checkpoint needs both data and dataChecksum")
    if data is not None:
        if not isinstance(data, str):
            raise ParseError(source, "data must be a JSON string")
        doc, fmt = kubelet_devices.load_json(data, source + " data"), "v4"
        if not isinstance(doc, dict):
            raise ParseError(source, "data must hold a JSON object")
    policy = _field(doc, "policyName")
    if not isinstance(policy, str) or not policy:
        raise ParseError(source, "policyName missing")
    default = _field(doc, "defaultCpuSet")
    entries = {}
    raw = _mapping(_field(doc, "entries"), source, "entries")
    for pod, containers in raw.items():
        if isinstance(containers, str):
            raise ParseError(
                source,
                "entries[%s] is a cpuset: a v1 checkpoint (container ids), which this kubelet cannot read either" % pod,
            )
        containers = _mapping(containers, source, "entries[%s]" % pod)
        entries[str(pod)] = dict(
            (str(name), _cpus(cpus, "%s entries[%s][%s]" % (source, pod, name))) for name, cpus in containers.items()
        )
        if len(entries) > MAX_ENTRIES:
            raise ParseError(source, "more than %d pods" % MAX_ENTRIES)
    pod_entries = {}
    for pod, entry in _mapping(_field(doc, "podEntries"), source, "podEntries").items():
        entry = _mapping(entry, source, "podEntries[%s]" % pod)
        pod_entries[str(pod)] = _cpus(_field(entry, "cpuSet") or "", "%s podEntries[%s]" % (source, pod))
    checksum = _field(outer, "checksum") if fmt == "v2" else _field(outer, "dataChecksum")
    return {
        "policy": policy,
        "default_cpus": _cpus(default or "", source + " defaultCpuSet"),
        "entries": entries,
        "pod_entries": pod_entries,
        "checksum": checksum,
        "format": fmt,
    }


def _int(value, source, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParseError(source, "%s must be a non-negative integer" % what)
    return value


def parse_memory_manager_state(text, source="memory_manager_state"):
    """-> {policy, nodes {node: {cells, memory {type: {total, reserved, free, ...}}}}, entries}."""
    doc = kubelet_devices.load_json(text, source)
    if not isinstance(doc, dict):
        raise ParseError(source, "must be a JSON object")
    policy = _field(doc, "policyName")
    if not isinstance(policy, str) or not policy:
        raise ParseError(source, "policyName missing")
    nodes = {}
    for node, state in _mapping(_field(doc, "machineState"), source, "machineState").items():
        if not _NODE_RE.match(str(node)):
            raise ParseError(source, "machineState key %r is not a NUMA node id" % node)
        state = _mapping(state, source, "machineState[%s]" % node)
        memory = {}
        for kind, table in _mapping(_field(state, "memoryMap"), source, "memoryMap").items():
            table = _mapping(table, source, "memoryMap[%s]" % kind)
            memory[str(kind)] = dict(
                (str(k), _int(v, source, "memoryMap[%s].%s" % (kind, k))) for k, v in table.items()
            )
        cells = _field(state, "cells") or []
        if not isinstance(cells, list):
            raise ParseError(source, "machineState[%s].cells must be a list" % node)
        nodes[str(int(node))] = {
            "cells": [_int(c, source, "cells") for c in cells],
            "assignments": _field(state, "numberOfAssignments") or 0,
            "memory": memory,
        }
    entries = {}
    for pod, containers in _mapping(_field(doc, "entries"), source, "entries").items():
        out = {}
        for name, blocks in _mapping(containers, source, "entries[%s]" % pod).items():
            if not isinstance(blocks, list):
                raise ParseError(source, "entries[%s][%s] must be a list" % (pod, name))
            out[str(name)] = [
                {
                    "numa_nodes": [_int(n, source, "numaAffinity") for n in (_field(b, "numaAffinity") or [])],
                    "type": _field(b, "type"),
                    "size": _int(_field(b, "size") or 0, source, "size"),
                }
                for b in blocks
                if isinstance(b, dict)
            ]
        entries[str(pod)] = out
    return {"policy": policy, "nodes": nodes, "entries": entries, "checksum": _field(doc, "checksum")}


def _device_ids(value, source):
    """DeviceIDs: {node: [ids]} (node -1: no topology) or the old flat list (node None)."""
    if isinstance(value, list):
        return [{"numa_node": None, "ids": [str(v) for v in value]}]
    out = []
    for node, ids in _mapping(value, source, "DeviceIDs").items():
        if not _NODE_RE.match(str(node)):
            raise ParseError(source, "DeviceIDs key %r is not a NUMA node id" % node)
        if not isinstance(ids, list):
            raise ParseError(source, "DeviceIDs[%s] must be a list" % node)
        out.append({"numa_node": int(node), "ids": [str(v) for v in ids]})
    return sorted(out, key=lambda g: g["numa_node"])


def _alloc(value, where):
    """``alloc``: the plugin's Allocate response as stored (None when absent); one that cannot
    be decoded leaves the entry readable and says why in ``alloc_error``."""
    if value is None or value == "":
        return {"alloc": None, "alloc_error": None}
    try:
        return {"alloc": kubelet_devices.parse_alloc_response(value, where + " AllocResp"), "alloc_error": None}
    except ParseError as err:
        return {"alloc": None, "alloc_error": str(err)}


def parse_device_checkpoint(text, source="kubelet_internal_checkpoint"):
    """-> {entries [{pod, container, resource, devices [{numa_node, ids}], alloc, alloc_error}],
    registered, checksum}."""
    doc = kubelet_devices.load_json(text, source)
    if not isinstance(doc, dict):
        raise ParseError(source, "must be a JSON object")
    data = _mapping(_field(doc, "Data"), source, "Data")
    raw = _field(data, "PodDeviceEntries")
    raw = [] if raw is None else raw
    if not isinstance(raw, list):
        raise ParseError(source, "Data.PodDeviceEntries must be a list")
    if len(raw) > MAX_ENTRIES:
        raise ParseError(source, "more than %d device entries" % MAX_ENTRIES)
    entries = []
    for index, entry in enumerate(raw):
        where = "%s PodDeviceEntries[%d]" % (source, index)
        if not isinstance(entry, dict):
            raise ParseError(where, "must be an object")
        pod, resource = _field(entry, "PodUID"), _field(entry, "ResourceName")
        if not isinstance(pod, str) or not isinstance(resource, str):
            raise ParseError(where, "PodUID and ResourceName must be strings")
        entries.append(
            {
                "pod": pod,
                "container": str(_field(entry, "ContainerName") or ""),
                "resource": resource,
                "devices": _device_ids(_field(entry, "DeviceIDs") or {}, where),
            }
        )
        entries[-1].update(_alloc(_field(entry, "AllocResp"), where))
    registered = {}
    for resource, ids in _mapping(_field(data, "RegisteredDevices"), source, "RegisteredDevices").items():
        if not isinstance(ids, list):
            raise ParseError(source, "RegisteredDevices[%s] must be a list" % resource)
        registered[str(resource)] = [str(i) for i in ids]
    return {"entries": entries, "registered": registered, "checksum": _field(doc, "Checksum")}
