# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scalars of the YAML subset (``host/yaml_subset``), read and written in one place, so
what the writer emits the reader takes back as the same value and type: ``resolve`` (a plain
scalar's text -> None, bool, int, float or str) and ``scalar`` / ``key`` (a value or a key ->
its text). Floats are written with a dot in the mantissa and ``.inf`` / ``-.inf`` / ``.nan``
(YAML 1.1 readers such as PyYAML read ``1e-05`` as a string); an int longer than the reader
takes (``MAX_INT_DIGITS``) is refused rather than read back as a string.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError

MAX_INT_DIGITS = 20  # a 64-bit integer: int() is never asked to read a longer digit run
_INT = re.compile(r"^[-+]?(0|[1-9][0-9]{0,%d})\Z" % (MAX_INT_DIGITS - 1))
_FLOAT = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")
_NULLS = ("null", "Null", "NULL", "~")
# YAML's infinities and NaN (the 1.1 and 1.2 core schemas spell them alike; ``dumps`` writes
# the first of each)
_SPECIAL_FLOATS = {
    ".inf": float("inf"),
    ".Inf": float("inf"),
    ".INF": float("inf"),
    "+.inf": float("inf"),
    "+.Inf": float("inf"),
    "+.INF": float("inf"),
    "-.inf": float("-inf"),
    "-.Inf": float("-inf"),
    "-.INF": float("-inf"),
    ".nan": float("nan"),
    ".NaN": float("nan"),
    ".NAN": float("nan"),
}
_TRUES = ("true", "True", "TRUE")
_FALSES = ("false", "False", "FALSE")
_YAML11_WORDS = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"])
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*\Z")


def resolve(raw):
    """A plain scalar's text as its value: null, bool, int, float (``.inf``, ``.nan`` too), else
    the text itself."""
    if raw in _NULLS or raw == "":
        return None
    if raw in _TRUES:
        return True
    if raw in _FALSES:
        return False
    if _INT.match(raw):
        return int(raw)
    if _FLOAT.match(raw):
        return float(raw)
    if raw in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[raw]
    return raw


def quote(text):
    """A JSON string is a YAML double-quoted scalar. Non-ASCII characters of the Basic
    Multilingual Plane (controls, U+0085, U+2028/9 and lone surrogates included) become
    ``\\u`` escapes of four hex digits; characters beyond it stay as they are (UTF-8), because YAML readers do
    not join JSON's surrogate-pair escapes into one character."""
    out = []
    for char in json.dumps(text, ensure_ascii=False):
        code = ord(char)
        out.append(char if code < 0x7F or code > 0xFFFF else "\\u%04x" % code)
    return "".join(out)


def scalar(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        text = str(value)
        if len(text.lstrip("-")) > MAX_INT_DIGITS:
            # read back it would be a string (the reader's bound): refused, not changed
            raise SnapshotError(
                "cannot write the integer %s... as YAML: more than %d digits" % (text[:24], MAX_INT_DIGITS)
            )
        return text
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        return quote(value)
    raise SnapshotError("cannot write %r (type %s) as YAML" % (value, type(value).__name__))


def float_text(value):
    """A float as the reader (and a YAML 1.1 reader such as PyYAML) reads it back: ``.inf``,
    ``-.inf``, ``.nan``, and a mantissa with a dot (``repr`` writes ``1e-05``, which YAML 1.1
    reads as a string: ``1.0e-05``); the exponent keeps the sign ``repr`` always writes."""
    if math.isnan(value):
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, sep, exponent = text.partition("e")
    if sep and "." not in mantissa:
        text = "%s.0e%s" % (mantissa, exponent)
    return text


def key(key):
    if not isinstance(key, str):
        raise SnapshotError("YAML keys must be strings, got %r" % (key,))
    # Words YAML 1.1 readers (PyYAML) take for booleans/null are quoted too.
    if _PLAIN_KEY.match(key) and resolve(key) == key and key.lower() not in _YAML11_WORDS:
        return key
    return quote(key)
