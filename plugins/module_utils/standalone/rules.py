# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's rules as the binder calls them: the cpulist rule of ``cpus/cpulist``
(imported, not copied: the zipapp ships the file), its errors as ``BindError``; and ``read_json``, the one bounded read of the binder's JSON inputs
(the plan, the IRQ state file).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import BindError, ParseError

__all__ = ("BindError", "format_cpulist", "parse_cpulist", "read_json")

format_cpulist = cpulist.format


def parse_cpulist(text, source="cpulist"):
    """``"0-2,5"`` -> ``[0, 1, 2, 5]`` (``cpus/cpulist.parse``: its bounds); an int is one CPU,
    None and ``""`` none; BindError naming ``source`` on anything else."""
    if text is None:
        return []
    try:
        return cpulist.parse(str(text), source)
    except ParseError as err:
        raise BindError(str(err))


def read_json(path, limit, what, missing=None):
    """The JSON document in file ``path`` (at most ``limit`` bytes); BindError naming ``what``
    and ``path`` when it cannot be read, is larger or is not JSON. A missing file gives
    ``missing`` when that is not None."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(limit + 1)
    except (IOError, OSError) as err:
        if missing is not None and getattr(err, "errno", None) == errno.ENOENT:
            return missing
        raise BindError("%s %s: cannot read (%s)" % (what, path, err))
    if len(text) > limit:
        raise BindError("%s %s: larger than %d bytes" % (what, path, limit))
    try:
        return json.loads(text.decode("utf-8"))
    except RecursionError:
        raise BindError("%s %s: not valid JSON (nested too deep)" % (what, path))
    except ValueError as err:
        raise BindError("%s %s: not valid JSON (%s)" % (what, path, err))
