# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers of the fleet report's HTML renderer: escaping and numbers that carry the JSON
pointer of their value in the report (``data-ptr``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist

from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import one_line


def escape(value):
    """Text for the page: on one line (``schema.one_line``) and HTML-escaped."""
    return html.escape("" if value is None else one_line(str(value)), quote=True)


class Ptr(object):
    """Numbers on the page carry the JSON pointer of their value in the report."""

    @staticmethod
    def num(value, pointer, tag="span", cls="num"):
        return '<%s class="%s" data-ptr="%s">%s</%s>' % (tag, cls, escape(pointer), escape(value), tag)

    @staticmethod
    def td(value, pointer):
        return '<td class="n" data-ptr="%s">%s</td>' % (escape(pointer), escape(value))


def node_labels(numa, scale, room=18.0):
    """Where the map writes each NUMA node's label: ``([(x from the CPU axis start, node)],
    [nodes without a label])``. A label sits on each run of its node's CPUs that is ``room``
    pixels wide (a node whose CPUs are not contiguous - SMT siblings N and N+128 - gets one
    per run, over its own CPUs), never over another label; a node none of whose runs has
    room (interleaved numbering: every other CPU) is listed instead."""
    labels, taken = [], []
    for node, cpus in sorted(numa.items()):
        for first, last in cpulist.runs(sorted(set(cpus))):
            start, end = first * scale, (last + 1) * scale
            centre = (start + end) / 2
            if end - start >= room and all(abs(centre - other) >= room for other in taken):
                labels.append((centre, node))
                taken.append(centre)
    named = set(node for _x, node in labels)
    return labels, [n for n in sorted(numa) if numa[n] and n not in named]
