# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The majority vote behind the GPU rail comparison (controller side).

Used by the ``npuops.fleet.rail_check`` filter and by the fleet report's own comparison
(``fleet_report.analyse_rails``): among hosts of one shape, the GPU -> NIC mapping most of
them share is the majority; a host with another mapping differs on each GPU whose NIC is not
the majority's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


def majority(mappings):
    """The mapping most of ``mappings`` share: ``(mapping, how many share it, tie)``.

    ``tie`` is True when another mapping is shared by as many; the tie goes to the smallest
    mapping text (JSON, sorted keys), so the answer does not depend on the input order.
    """
    counts = {}
    for mapping in mappings:
        text = json.dumps(mapping, sort_keys=True)
        counts[text] = counts.get(text, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    text, count = ranked[0]
    return json.loads(text), count, len(ranked) > 1 and ranked[1][1] == count


def differences(mapping, expected, sort_key):
    """``[(gpu, expected value, actual value)]`` for each GPU where ``mapping`` differs from
    ``expected`` (a GPU missing on one side counts as None there), in ``sort_key`` order."""
    return [(gpu, expected.get(gpu), mapping.get(gpu))
            for gpu in sorted(set(mapping) | set(expected), key=sort_key)
            if mapping.get(gpu) != expected.get(gpu)]
