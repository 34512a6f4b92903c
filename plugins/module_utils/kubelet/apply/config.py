# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet profile on a host: the drop-in text and the merge into the kubelet's own config
file (every other key and line kept). Whether a change needs the kubelet's state files gone is
decided once, as the kubelet decides it, in ``kubelet/plan/state.reset_reasons``.

- ``render_dropin(config)``: a ``--config-dir`` drop-in (the kubelet wants apiVersion and kind
  in each one);
- ``merge_text(text, updates, source)``: ``text`` (YAML or JSON) with the top-level keys of
  ``updates`` replaced or appended; YAML is edited block by block, so comments and the other
  keys stay byte for byte; the result is parsed back and checked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_subset
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as parse

HEADER = "# Written by npuops.fleet (kubelet_cpu_profile) from the host's CPU plan; edits are overwritten.\n"
_TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:")
MEMORY_KEYS = ("memoryManagerPolicy", "reservedMemory")


def render_dropin(config):
    doc = {"apiVersion": parse.API_VERSION, "kind": parse.KIND}
    doc.update(config)
    return HEADER + yaml_subset.dumps(doc, flow=False)


def _blocks(lines):
    """{top-level key: (first line, end line)} of a YAML block mapping."""
    found, order = {}, []
    for index, line in enumerate(lines):
        match = _TOP_KEY.match(line)
        if match:
            order.append((match.group(1), index))
    for pos, (key, start) in enumerate(order):
        end = order[pos + 1][1] if pos + 1 < len(order) else len(lines)
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1  # comments and blanks before the next key belong to it
        found[key] = (start, end)
    return found


def merge_text(text, updates, source="kubelet config"):
    """``text`` with the top-level keys of ``updates`` set; raises NpuopsError when it cannot."""
    current = parse.parse_config(text or "", source)
    wanted = dict(current)
    wanted.update(updates)
    stripped = (text or "").strip()
    if stripped.startswith("{"):
        merged = json.dumps(wanted, indent=2, sort_keys=True) + "\n"
    else:
        lines = (text or "").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        blocks = _blocks(lines)
        for key in sorted(updates, key=lambda k: blocks.get(k, (len(lines), 0))[0], reverse=True):
            new = yaml_subset.dumps({key: updates[key]}, flow=False).rstrip("\n").split("\n")
            if key in blocks:
                start, end = blocks[key]
                lines[start:end] = new
        appended = [k for k in updates if k not in blocks]
        for key in appended:
            lines.extend(yaml_subset.dumps({key: updates[key]}, flow=False).rstrip("\n").split("\n"))
        merged = "\n".join(lines) + "\n"
    try:
        check = parse.parse_config(merged, source)
    except ParseError as err:
        raise NpuopsError(
            "%s: the merged configuration does not read back (%s); edit it by hand "
            "or use a --config-dir drop-in" % (source, err)
        )
    if check != wanted:
        raise NpuopsError(
            "%s: the merged configuration reads back different keys; edit it by "
            "hand or use a --config-dir drop-in" % source
        )
    return merged
