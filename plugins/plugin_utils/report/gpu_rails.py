# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU rails in the fleet report: which GPU hosts are alike (``rail_shape``) and, among them,
whose GPU k -> NIC pairing differs from the majority (``analyse_rails``), the same rule as the
``npuops.fleet.rail_check`` filter."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors
from ansible_collections.npuops.fleet.plugins.plugin_utils import rails as rail_vote
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import as_dict, as_list, key_sort


def rail_shape(facts):
    """What makes two GPU hosts "identical" for rail comparison: CPU model, GPU count and RDMA
    NIC count (not the NIC names: a renamed NIC is exactly what must be caught)."""
    facts = as_dict(facts)
    return "%s, %d GPUs, %d NICs" % (
        as_dict(facts.get("cpu")).get("model") or "unknown CPU",
        len(as_list(facts.get("gpus"))),
        len(as_list(facts.get("nics"))),
    )


def rail_shapes(hosts):
    """``{host: shape}`` for the ``shapes`` option of the ``npuops.fleet.rail_check`` filter."""
    return dict((str(name), rail_shape(as_dict(entry).get("facts"))) for name, entry in as_dict(hosts).items())


def _rail_deviation(gpu, actual, expected, majority_hosts, peers, tie):
    return OrderedDict(
        [
            ("gpu", str(gpu)),
            ("nic", actual),
            ("majority", expected),
            ("hosts_with_majority", majority_hosts),
            ("peers", peers),
            ("tie", bool(tie)),
        ]
    )


def analyse_rails(hosts, shapes, rails=None):
    """GPU k -> NIC of the strict plans compared across hosts of the same shape (in place).

    Same rule as the ``npuops.fleet.rail_check`` filter given ``shapes`` (``rail_shapes``):
    hosts grouped by shape; the mapping most hosts of a group share is the majority; a host with
    another mapping deviates on each GPU whose NIC differs. ``rails`` (the filter's result,
    ``{host: {majority, differences, group_hosts, majority_hosts, tie}}``), when given, is used
    for the deviations instead of this module's own comparison.
    """
    groups = OrderedDict()
    for host in hosts:
        if not vendors.is_gpu_vendor(host["vendor"]) or host["plans"]["strict"]["status"] != "ok":
            continue
        mapping = OrderedDict((d["id"], d.get("nic")) for d in host["plans"]["strict"]["devices"] if d["kind"] == "gpu")
        if not mapping:
            continue
        host["rails"]["mapping"] = mapping
        if not any(mapping.values()):
            host["rails"]["status"] = "no NICs"
            continue
        host["rails"]["group"] = shapes.get(host["name"])
        groups.setdefault(host["rails"]["group"], []).append(host)
    for members in groups.values():
        for host in members:
            host["rails"]["status"] = "single" if len(members) < 2 else "consistent"
            host["rails"]["peers"] = len(members)
        if len(members) < 2 or rails is not None:
            continue
        majority, majority_count, tie = rail_vote.majority(h["rails"]["mapping"] for h in members)
        for host in members:
            mine = host["rails"]["mapping"]
            if dict(mine) == majority:
                continue
            host["rails"]["status"] = "inconsistent"
            for gpu, expected, actual in rail_vote.differences(mine, majority, key_sort):
                host["rails"]["deviations"].append(
                    _rail_deviation(gpu, actual, expected, majority_count, len(members), tie)
                )
    if rails is None:
        return
    by_name = dict((h["name"], h) for h in hosts)
    for name, found in as_dict(rails).items():
        host = by_name.get(str(name))
        found = as_dict(found)
        if host is None or not found:
            continue
        host["rails"]["status"] = "inconsistent"
        host["rails"]["external"] = found
        diffs = as_dict(found.get("differences"))
        for gpu in sorted(diffs, key=key_sort):
            diff = as_dict(diffs[gpu])
            host["rails"]["deviations"].append(
                _rail_deviation(
                    gpu,
                    diff.get("actual"),
                    diff.get("expected"),
                    found.get("majority_hosts"),
                    found.get("group_hosts"),
                    found.get("tie"),
                )
            )


def gpu_model(facts):
    """The GPU model of an NVIDIA host (``NVIDIA H100 80GB HBM3``; ``mixed: A, B``), or None
    (facts without ``gpus[].model``: nvidia-smi's query did not answer, or an older snapshot)."""
    models = sorted(
        set(str(g.get("model")) for g in (facts.get("gpus") or []) if isinstance(g, dict) and g.get("model"))
    )
    if not models:
        return None
    return models[0] if len(models) == 1 else "mixed: " + ", ".join(models)
