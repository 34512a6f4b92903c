# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one schema of a vLLM instance (an entry of ``npuops_vllm_instances``) and its checks.

``OPTIONS`` is the single definition: ``scripts/gen_argument_specs.py`` renders it into every
role's ``meta/argument_specs.yml`` (argument specs cannot include a file; a test keeps the
rendered copies identical to it), and the modules take their per-instance options from
``module_option``. ``problems`` checks a whole list at once, with or without the facts, and
returns every problem worded with the variable that holds it - the validate role and the modules
report them before anything is written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.model.schema import instance_name_problem

VARIABLE = "npuops_vllm_instances"

# (option, argument spec) in documentation order; `role_default` names the role variable that
# gives the option its value when an instance leaves it out.
OPTIONS = (
    (
        "name",
        {
            "type": "str",
            "required": True,
            "description": [
                "Instance name: the wrapper, the systemd unit (C(vllm-<name>.service)) and "
                "the plan's instance key. 1 to 100 of C([A-Za-z0-9_.-]), not starting "
                "with C(.) or C(-); unique on the host."
            ],
        },
    ),
    (
        "npus",
        {
            "type": "list",
            "elements": "int",
            "required": True,
            "description": [
                "Logic NPU ids (GPU indexes) the instance serves, a YAML list of integers "
                '(a string such as C("0,1") is refused). No NPU in two instances.'
            ],
        },
    ),
    (
        "command",
        {
            "type": "list",
            "elements": "str",
            "required": False,
            "description": [
                "The vLLM command line as a list of arguments, e.g. "
                "C([vllm, serve, /models/m, --port, '8000']); required to install "
                "the instance (role vllm_launch). A string is refused."
            ],
        },
    ),
    (
        "env",
        {
            "type": "dict",
            "required": False,
            "description": [
                "Extra environment of this instance (wins over O(npuops_vllm_env)); "
                "values are strings, numbers or booleans - a null value is refused."
            ],
        },
    ),
    (
        "binding",
        {
            "type": "str",
            "choices": ["host", "vllm"],
            "required": False,
            "role_default": "npuops_vllm_binding",
            "description": ["CPU binding of this instance (default O(npuops_vllm_binding))."],
        },
    ),
    (
        "dest",
        {
            "type": "str",
            "required": False,
            "role_default": "npuops_vllm_dest",
            "description": ["Wrapper destination on the host (default O(npuops_vllm_dest))."],
        },
    ),
    (
        "systemd",
        {
            "type": "bool",
            "required": False,
            "role_default": "npuops_vllm_systemd",
            "description": ["Install a systemd unit (default O(npuops_vllm_systemd))."],
        },
    ),
    (
        "unit_dir",
        {
            "type": "str",
            "required": False,
            "role_default": "npuops_vllm_unit_dir",
            "description": ["Directory for the unit (default O(npuops_vllm_unit_dir))."],
        },
    ),
    (
        "migrate",
        {
            "type": "bool",
            "required": False,
            "role_default": "npuops_vllm_migrate",
            "description": [
                "Move the workers' memory to their NUMA nodes once the server is "
                "ready (default O(npuops_vllm_migrate))."
            ],
        },
    ),
    (
        "vllm_version",
        {
            "type": "str",
            "required": False,
            "description": [
                "The instance's vLLM version (C(0.34.0)); default read from "
                "the environment its command names, then the host. The "
                "wrapper's vLLM flags follow it (C(docs/vllm-versions.md))."
            ],
        },
    ),
)
NAMES = tuple(name for name, _spec in OPTIONS)
_SPEC = dict(OPTIONS)
_KEYS = ("type", "elements", "choices", "required")


def module_option(name, **overrides):
    """The AnsibleModule argument spec of one instance option, plus ``overrides`` (a default)."""
    out = dict((key, _SPEC[name][key]) for key in _KEYS if key in _SPEC[name])
    out.update(overrides)
    return out


def argument_spec_options():
    """The ``options`` of ``npuops_vllm_instances`` in a role argument spec (what the generator
    renders)."""
    out = {}
    for name, spec in OPTIONS:
        out[name] = dict((key, spec[key]) for key in ("type", "elements", "choices", "required") if key in spec)
        out[name]["description"] = list(spec["description"])
    return out


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _scalar(value):
    return isinstance(value, (str, int, float, bool)) and value is not None


def _check_one(index, inst, where, need_command):
    """Problems of one entry alone (no facts needed)."""
    if not isinstance(inst, dict):
        return ["%s: must be a mapping with name and npus, got %s" % (where, type(inst).__name__)]
    out = []
    unknown = sorted(str(key) for key in inst if key not in _SPEC)
    if unknown:
        out.append("%s: unknown option %s (known: %s)" % (where, ", ".join(unknown), ", ".join(NAMES)))
    name = inst.get("name")
    if name is None:
        out.append("%s: name is missing" % where)
    else:
        why = instance_name_problem(name)
        if why:
            out.append("%s: name %r %s" % (where, name, why))
    npus = inst.get("npus")
    if npus is None:
        out.append("%s: npus is missing" % where)
    elif isinstance(npus, str) or not isinstance(npus, (list, tuple)):
        out.append("%s: npus must be a list of integers such as [0, 1], got %r" % (where, npus))
    elif not npus:
        out.append("%s: npus is empty" % where)
    else:
        bad = [item for item in npus if not _is_int(item) or item < 0]
        if bad:
            out.append("%s: npus must be a list of integers such as [0, 1], got item %r" % (where, bad[0]))
        elif len(set(npus)) != len(npus):
            out.append("%s: npus lists a device twice: %s" % (where, list(npus)))
    command = inst.get("command")
    if command is None:
        if need_command:
            out.append("%s: command is missing (a list of arguments, e.g. [vllm, serve, /models/m])" % where)
    elif isinstance(command, str) or not isinstance(command, (list, tuple)) or not command:
        out.append(
            "%s: command must be a non-empty list of arguments, e.g. [vllm, serve, /models/m, "
            "--port, '8000'], not %s" % (where, "a string" if isinstance(command, str) else repr(command))
        )
    elif not all(isinstance(arg, (str, int, float)) and not isinstance(arg, bool) for arg in command):
        out.append("%s: command items must be strings" % where)
    env = inst.get("env")
    if env is not None:
        out.extend(env_problems(env, "%s: env" % where))
    if inst.get("binding") is not None and inst.get("binding") not in ("host", "vllm"):
        out.append("%s: binding must be host or vllm, got %r" % (where, inst.get("binding")))
    for key in ("systemd", "migrate"):
        if inst.get(key) is not None and not isinstance(inst.get(key), bool):
            out.append("%s: %s must be true or false, got %r" % (where, key, inst.get(key)))
    for key in ("dest", "unit_dir"):
        value = inst.get(key)
        if (
            value is not None
            and value != ""
            and (not isinstance(value, str) or not value.startswith("/") or "/../" in value + "/")
        ):
            out.append("%s: %s must be an absolute path without '..', got %r" % (where, key, value))
    return out


def env_problems(env, where):
    """Problems of an environment mapping: values must be scalars (a null is refused, never
    exported as an empty string)."""
    if not isinstance(env, dict):
        return ["%s: must be a mapping of NAME: value, got %s" % (where, type(env).__name__)]
    out = []
    for key, value in env.items():
        if not _scalar(value):
            out.append(
                "%s.%s: value must be a string, a number or a boolean, got %s (quote it; "
                "'' for an empty value)" % (where, key, "null" if value is None else type(value).__name__)
            )
    return out


def problems(instances, devices=None, restricted=None, device_word=None, variable=VARIABLE, need_command=False):
    """Every problem of ``instances`` (a list of instance mappings), each naming ``variable``.

    ``devices``: the device ids of the host (from the facts), None before the facts are known;
    ``restricted``: ``npuops_npus`` when it keeps only some of them. ``need_command``: the
    instances are to be installed (role vllm_launch), so each needs its command.
    """
    if device_word is None:
        device_word = "device" if devices is None else "NPU"
    if instances is None:
        return []
    if isinstance(instances, dict) or isinstance(instances, str) or not isinstance(instances, (list, tuple)):
        return [
            "%s: must be a list of instances ({name, npus, command, ...}), got %s"
            % (variable, type(instances).__name__)
        ]
    out = []
    names = {}
    owner = {}
    allowed = None
    if devices is not None:
        allowed = set(devices) if not restricted else set(devices) & set(restricted)
    for index, inst in enumerate(instances):
        label = inst.get("name") if isinstance(inst, dict) else None
        where = "%s[%d]%s" % (variable, index, " (%s)" % label if isinstance(label, str) else "")
        out.extend(_check_one(index, inst, where, need_command))
        if not isinstance(inst, dict):
            continue
        if isinstance(label, str):
            if label in names:
                out.append(
                    "%s: name %r is already used by %s[%d]; instance names must be unique "
                    "on a host" % (where, label, variable, names[label])
                )
            else:
                names[label] = index
        npus = inst.get("npus")
        if not isinstance(npus, (list, tuple)) or isinstance(npus, str):
            continue
        for npu in npus:
            if not _is_int(npu):
                continue
            if allowed is not None and npu not in allowed:
                out.append(
                    "%s: %s %d is not usable: %s"
                    % (where, device_word, npu, device_set_text(devices, restricted, device_word))
                )
            if npu in owner and owner[npu] != index:
                out.append(
                    "%s: %s %d is also in %s[%d]; a device serves one instance only"
                    % (where, device_word, npu, variable, owner[npu])
                )
            owner.setdefault(npu, index)
    return out


def device_set_text(devices, restricted, device_word="NPU", restrict_name="npuops_npus"):
    """``this host has [0..15]`` or ``this host has [0..15], npuops_npus restricts to [0, 1]``."""
    have = sorted(set(devices or ()))
    text = "this host has %s" % _ids(have)
    if restricted:
        text += ", %s restricts to %s" % (restrict_name, _ids(sorted(set(restricted))))
    elif not have:
        text = "this host has no %s" % device_word
    return text


def _ids(ids):
    if len(ids) > 4 and ids == list(range(ids[0], ids[-1] + 1)):
        return "[%d..%d]" % (ids[0], ids[-1])
    return "[%s]" % ", ".join(str(i) for i in ids)
