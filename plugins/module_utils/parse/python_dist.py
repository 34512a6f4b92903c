# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The version of an installed Python distribution, from its metadata text (nothing imported).

- ``METADATA`` (dist-info) and ``PKG-INFO`` (egg-info): RFC 822 headers; ``Version:`` in the
  header block (before the first blank line, where the long description starts).
- ``_version.py`` written by setuptools-scm / vcs-versioning: ``__version__ = version = '...'``
  and, for builds from a checkout, ``__commit_id__ = commit_id = 'g<hash>'``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

_VERSION_TEXT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}$")
_ASSIGN = re.compile(r"""^(__version__|version|__commit_id__|commit_id)\s*(?::\s*str\s*)?="""
                     r"""(?:\s*(?:__version__|version|__commit_id__|commit_id)\s*=)?"""
                     r"""\s*(?:'([^'\n]*)'|"([^"\n]*)"|None)\s*$""")


def _check(value, source):
    if not _VERSION_TEXT.match(value):
        raise ParseError(source, "version %r is not a version string" % value[:80])
    return value


def metadata_version(text, source="METADATA"):
    """``Version:`` of a METADATA / PKG-INFO text; ParseError when the header block has none."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    for line in text.splitlines():
        if not line.strip():
            break
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == "version":
            return _check(value.strip(), source)
    raise ParseError(source, "no Version: header")


def version_module(text, source="_version.py"):
    """``(version, commit or None)`` of a generated ``_version.py``; ParseError without a
    version assignment."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    found = {}
    for line in text.splitlines():
        match = _ASSIGN.match(line.strip())
        if match:
            key = "commit" if "commit" in match.group(1) else "version"
            value = match.group(2) if match.group(2) is not None else match.group(3)
            found.setdefault(key, value)
    if not found.get("version"):
        raise ParseError(source, "no __version__ assignment")
    return _check(found["version"], source), found.get("commit") or None
