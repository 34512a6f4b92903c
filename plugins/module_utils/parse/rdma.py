# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA port attributes of ``/sys/class/infiniband/<dev>/ports/<n>/`` (text -> plain data).

``state`` reads ``4: ACTIVE``, ``rate`` reads ``200 Gb/sec (4X HDR)``, ``link_layer`` reads
``InfiniBand`` or ``Ethernet`` (the kernel's ib_core sysfs attributes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

_STATE = re.compile(r"^\s*\d+\s*:\s*([A-Z_]+)\s*\Z")
_RATE = re.compile(r"^\s*([0-9]{1,9}(?:\.[0-9]{1,9})?)\s*Gb/sec\b")


def _match(pattern, text, source, expected):
    """The match of ``pattern`` at the start of ``text``, else ParseError naming ``expected``."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    match = pattern.match(text)
    if not match:
        raise ParseError(source, "expected %s, got %r" % (expected, text.strip()[:40]))
    return match


def parse_port_state(text, source):
    """``"4: ACTIVE"`` -> ``"ACTIVE"`` (``DOWN``, ``INIT``, ``ARMED``, ``ACTIVE_DEFER``...)."""
    return _match(_STATE, text, source, "'<n>: <STATE>'").group(1)


def parse_port_rate(text, source):
    """``"200 Gb/sec (4X HDR)"`` -> ``200``; ``"2.5 Gb/sec (1X SDR)"`` -> ``2.5`` (Gb/s)."""
    value = float(_match(_RATE, text, source, "'<n> Gb/sec ...'").group(1))
    return int(value) if value == int(value) else value


def parse_link_layer(text, source):
    """``"InfiniBand\\n"`` -> ``"InfiniBand"``; one word expected."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    words = text.split()
    if len(words) != 1:
        raise ParseError(source, "expected one word, got %r" % text.strip()[:40])
    return words[0]
