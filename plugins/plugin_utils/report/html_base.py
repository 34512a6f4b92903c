# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers of the fleet report's HTML renderer: escaping and numbers that carry the JSON
pointer of their value in the report (``data-ptr``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html

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
