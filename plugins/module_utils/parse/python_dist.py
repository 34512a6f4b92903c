# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The version of an installed Python distribution, from its metadata text (nothing imported).

- ``METADATA`` (dist-info) and ``PKG-INFO`` (egg-info): the email header format of the core
  metadata specification (packaging.python.org ``specifications/core-metadata``: what
  ``email.parser`` reads with the compat32 policy; line ends and continuation lines as CPython's
  ``Lib/email/feedparser.py`` takes them: ``NLCRE``, ``headerRE`` and the header loop of
  ``_parsegen``, read at python/cpython 043eb0e3); ``Version:`` in the header block (before
  the first empty line, where the long description starts).
- ``_version.py`` written by setuptools-scm / vcs-versioning: ``__version__ = version = '...'``
  and, for builds from a checkout, ``__commit_id__ = commit_id = 'g<hash>'``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

# email.feedparser's line ends (NLCRE) and header field names (printable ASCII but ':')
_LINES = re.compile(r"\r\n|\r|\n")
_FIELD = re.compile(r"^([\x21-\x39\x3b-\x7e]+):")
_VERSION_TEXT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}$")
_ASSIGN = re.compile(
    r"""^(__version__|version|__commit_id__|commit_id)\s*(?::\s*str\s*)?="""
    r"""(?:\s*(?:__version__|version|__commit_id__|commit_id)\s*=)?"""
    r"""\s*(?:'([^'\n]*)'|"([^"\n]*)"|None)\s*$"""
)


def _check(value, source):
    if not _VERSION_TEXT.match(value):
        raise ParseError(source, "version %r is not a version string" % value[:80])
    return value


def headers(text):
    """The header block of a METADATA / PKG-INFO text as ``[(name, value)]`` in file order.

    The core metadata format is the email header format as ``email.parser`` reads it (compat32
    policy): lines end at CRLF, CR or LF only (not at U+0085, U+000B, U+000C, U+2028... which
    ``str.splitlines`` would break at); a line starting with a space or tab continues the
    header before it (its value unfolded: the line break removed); the block ends at the
    first empty line, or at a line that is neither a header nor a continuation."""
    out = []
    for line in _LINES.split(text):
        if not line:
            break
        if line[0] in " \t":
            if not out:
                break  # a continuation with no header before it: not a header block
            out[-1] = (out[-1][0], out[-1][1] + line)
            continue
        match = _FIELD.match(line)
        if not match:
            break
        out.append((match.group(1), line[match.end() :]))
    return out


def metadata_version(text, source="METADATA"):
    """``Version:`` of a METADATA / PKG-INFO text (the first one, as ``email.message`` gives
    it); ParseError when the header block has none."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    for name, value in headers(text):
        if name.lower() == "version":
            return _check(value.strip(), source)
    raise ParseError(source, "no Version: header")


def version_module(text, source="_version.py"):
    """``(version, commit or None)`` of a generated ``_version.py``; ParseError without a
    version assignment."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    found = {}
    for line in _LINES.split(text):  # Python source breaks lines where the email format does
        match = _ASSIGN.match(line.strip())
        if match:
            key = "commit" if "commit" in match.group(1) else "version"
            value = match.group(2) if match.group(2) is not None else match.group(3)
            found.setdefault(key, value)
    if not found.get("version"):
        raise ParseError(source, "no __version__ assignment")
    return _check(found["version"], source), found.get("commit") or None
