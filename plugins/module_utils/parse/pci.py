# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCI addresses as the tools print them, in the one form the facts use (``0000:c1:00.0``).

The binder (standalone/) keeps its own copy of ``normalise_bus_id``; a unit test checks that
both agree on the same inputs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# domain:bus:device.function, as sysfs names PCI devices
BUS_ID = re.compile(r"^([0-9A-Fa-f]{4}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-9A-Fa-f])\Z")
_SHORT = re.compile(r"^[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\Z")
_LONG_DOMAIN = re.compile(r"^0000[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\Z")


def normalise_bus_id(text):
    """``0000:C1:00.0`` -> ``0000:c1:00.0``; ``c1:00.0`` gets the ``0000:`` domain; the 8-digit
    domain nvidia-smi prints (``00000000:18:00.0``) is cut to 4; anything else -> None."""
    text = (text or "").strip()
    if _SHORT.match(text):
        text = "0000:" + text
    elif _LONG_DOMAIN.match(text):
        text = text[4:]
    return text.lower() if BUS_ID.match(text) else None


def card_of(bus_id):
    """The PCI slot a function sits on: ``0000:e1:00.1`` -> ``0000:e1:00`` (the functions of one
    slot are the ports of one card); None for anything that is not a bus id."""
    text = normalise_bus_id(bus_id)
    return text.rsplit(".", 1)[0] if text else None
