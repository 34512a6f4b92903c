# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``instances`` and ``npus`` options of a plan, checked: ``[(name, devices)]``, each
instance's devices in rank order when its command carries ``--device-ids``.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors, vllm_flags
from ansible_collections.npuops.fleet.plugins.module_utils.model.instances import device_set_text


def int_list(value, what, *args):
    """``value`` as a list of ints; ``what % args`` names it in the error."""
    if value is None:
        return None
    if args:
        what = what % args
    if not isinstance(value, (list, tuple)):
        raise PlanError("%s must be a list of integers, got %r" % (what, value))
    out = []
    for item in value:
        try:
            if isinstance(item, bool):
                raise ValueError
            out.append(int(item))
        except (TypeError, ValueError):
            raise PlanError("%s must be a list of integers, got item %r" % (what, item))
    return out


def validate_instances(instances, known, host_ids=None, word="NPU"):
    """``[(name, [npu, ...])]`` from the ``instances`` option; raises PlanError on bad input.

    ``known``: the ids the plan keeps; ``host_ids``: all of the host's (when ``npus`` restricts
    the plan, a message says both); ``word``: NPU or GPU, as the host's vendor says."""
    if instances is None:
        return None
    if not isinstance(instances, (list, tuple)):
        raise PlanError("instances must be a list of {name, npus}, got %r" % (instances,))
    seen_names = set()
    owner = {}
    out = []
    for index, inst in enumerate(instances):
        if not isinstance(inst, dict) or "name" not in inst or "npus" not in inst:
            raise PlanError("instances[%d] must be a dict with 'name' and 'npus', got %r" % (index, inst))
        name = str(inst["name"])
        if not name:
            raise PlanError("instances[%d]: name is empty" % index)
        if name in seen_names:
            raise PlanError(
                "instances[%d]: name %r is already used by another instance; instance "
                "names must be unique on a host" % (index, name)
            )
        seen_names.add(name)
        ids = int_list(inst["npus"], "instances[%d] (%s) npus", index, name)
        if not ids:
            raise PlanError("instance %s has no %ss" % (name, word))
        for npu in ids:
            if npu not in known:
                restricted = sorted(known) if host_ids is not None and set(host_ids) != set(known) else None
                raise PlanError(
                    "instance %s: unknown %s id %d; %s"
                    % (
                        name,
                        word,
                        npu,
                        device_set_text(host_ids if restricted else known, restricted, word, "npus (npuops_npus)"),
                    ),
                    npu,
                    word=word,
                )
            if npu in owner:
                raise PlanError("%s %d is in two instances: %s and %s" % (word, npu, owner[npu], name), npu, word=word)
            owner[npu] = name
        out.append(Instance(name, ids, _device_order(inst, ids, name, word)))
    return out


class Instance(tuple):
    """``(name, devices)`` of one instance, and ``order``: its devices in rank order when its
    ``command`` has ``--device-ids`` (vllm_flags.device_order), else None."""

    def __new__(cls, name, ids, order=None):
        self = tuple.__new__(cls, (name, ids))
        self.order = order
        return self


def _device_order(inst, ids, name, word):
    command = inst.get("command")
    if not command:
        return None
    if not isinstance(command, (list, tuple)):
        raise PlanError("instance %s: command must be a list of arguments" % name)
    variable = vendors.VENDORS["ascend" if word == "NPU" else "nvidia"].visibility[0]
    try:
        order = vllm_flags.device_order(command, ids, variable)
    except ValueError as err:
        raise PlanError("instance %s: %s" % (name, err))
    return order if order != list(ids) else None
