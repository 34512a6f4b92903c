# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The on-disk contract of one vLLM instance: where ``vllm_launch_wrapper`` puts its files,
what its systemd units are called, and the defaults of those places.

Everything that writes an instance (the wrapper module, ``render/units``), finds one again
(``model/binding``: ``vllm_binding_facts`` lists ``<dest>/*.plan.json``), or names its units in a
fix text reads the names from here, so renaming one cannot make the read-back lose instances.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DEFAULT_DEST = "/usr/local/lib/npuops"
DEFAULT_UNIT_DIR = "/etc/systemd/system"
# one file for every instance of the host: the IRQs each instance pinned (npu_irq_affinity and
# the binder merge their rows; vllm_binding_facts reads them back)
DEFAULT_IRQ_STATE = "/var/lib/npuops/irq-state.json"

PLAN_SUFFIX = ".plan.json"
WRAPPER_SUFFIX = "-launch"
BINDER_SUFFIX = "-bind"
UNIT_PREFIX = "vllm-"


def file_names(name):
    """{kind: file name} of the instance's files under ``dest``."""
    return {"wrapper": name + WRAPPER_SUFFIX, "plan": name + PLAN_SUFFIX, "binder": name + BINDER_SUFFIX}


def file_paths(dest, name):
    """{kind: absolute path} of the instance's files under ``dest``."""
    base = dest.rstrip("/")
    return dict((kind, "%s/%s" % (base, file_name)) for kind, file_name in file_names(name).items())


def unit_names(name):
    """{kind: unit name}: the service, the bind unit, the reconciler and its timer."""
    base = UNIT_PREFIX + name
    return {
        "service": base + ".service",
        "bind": base + "-bind.service",
        "reconcile": base + "-reconcile.service",
        "timer": base + "-reconcile.timer",
    }


def enabled_units(name, systemd, host_binding, reconcile):
    """The units to enable, in order: the service (it pulls in its bind unit), the bind unit
    with host binding, the reconcile timer when it reconciles too."""
    if not systemd:
        return []
    names = unit_names(name)
    out = [names["service"]]
    if host_binding:
        out.append(names["bind"])
        if reconcile:
            out.append(names["timer"])
    return out


def name_of_plan_file(file_name):
    """The instance a ``<name>.plan.json`` file under ``dest`` belongs to, or None."""
    if file_name.endswith(PLAN_SUFFIX) and len(file_name) > len(PLAN_SUFFIX):
        return file_name[: -len(PLAN_SUFFIX)]
    return None
