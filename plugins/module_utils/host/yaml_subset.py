# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one YAML-subset reader and writer of the collection (no PyYAML on managed hosts).

``loads`` reads a small, strict YAML subset: block mappings and sequences, flow
mappings/sequences (``{rc: 0, stdout_file: x}``), plain / single-quoted / double-quoted
scalars (JSON-style escapes), ints, floats, bools, null, ``|`` literal blocks and comments.
Anything outside the subset, or nested deeper than ``MAX_DEPTH``, raises SnapshotError naming
the source and line; more than ``MAX_INT_DIGITS`` digits make a string. JSON objects too.

``dumps`` emits only that subset, so what it writes ``loads`` reads back (the scalars of both
sides are ``host/yaml_scalars``'s, one rule): JSON-style
double-quoted ASCII strings, keys quoted where a YAML 1.1 reader (PyYAML) would take them for
something else. ``flow=True`` (snapshot.yml) writes small scalar mappings inline and nested
sequence items on their own ``-`` line; ``flow=False`` (Kubernetes manifests, node patches)
is plain block style with ``- key: value`` items.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import yaml_scalars
from ansible_collections.npuops.fleet.plugins.module_utils.host.yaml_scalars import MAX_INT_DIGITS  # noqa: F401 pylint: disable=unused-import

MAX_DEPTH = 32  # nested mappings/sequences (snapshot.yml needs 4)
_resolve = yaml_scalars.resolve
_scalar = yaml_scalars.scalar
_key = yaml_scalars.key

# Characters that start YAML constructs outside the subset (anchors, tags, directives...).
_BAD_START = "&*!%@`>?"


def _is_item(text):
    """True when a line's text (indentation stripped) is a block sequence item: ``- x`` / ``-``."""
    return text.startswith("- ") or text.rstrip() == "-"


class _Reader(object):
    """Recursive-descent reader over the lines of one document."""

    def __init__(self, text, source):
        self.source = source
        self.raw = text.split("\n")
        self.depth = 0  # collections open; a failure ends the whole read, so no unwinding

    def fail(self, lineno, msg):
        raise SnapshotError("%s line %d: %s" % (self.source, lineno, msg))

    # -- lines ---------------------------------------------------------------------------
    def _content(self, index):
        """(indent, text without comment) of raw line ``index``, or None for blank/comment."""
        line = self.raw[index].rstrip("\r")
        stripped = line.lstrip(" ")
        if stripped.startswith("\t") or (stripped and "\t" in line[: len(line) - len(stripped)]):
            self.fail(index + 1, "tab in indentation")
        if not stripped or stripped.startswith("#"):
            return None
        return len(line) - len(stripped), stripped

    def _next(self, index):
        """Index of the next meaningful line at or after ``index`` (len(raw) at the end)."""
        while index < len(self.raw):
            if self._content(index) is not None:
                return index
            index += 1
        return index

    # -- documents -----------------------------------------------------------------------
    def document(self):
        index = self._next(0)
        if index < len(self.raw) and self._content(index)[1].rstrip() == "---":
            index = self._next(index + 1)
        if index >= len(self.raw):
            return None
        indent, text = self._content(index)
        if indent != 0:
            self.fail(index + 1, "the document must start at column 0")
        if not _is_item(text) and (text[0] in "{[" or not self._is_entry(text, index)):
            value = self._inline(text, index)
            end = self._next(index + 1)
            if end < len(self.raw):
                self.fail(end + 1, "unexpected content after the document value")
            return value
        value, index = self._block(index, 0)
        if index < len(self.raw):
            self.fail(index + 1, "unexpected indentation")
        return value

    def _block(self, index, indent):
        """Parse the block node starting at meaningful line ``index`` with ``indent``."""
        read = self._sequence if _is_item(self._content(index)[1]) else self._mapping
        return self._nested(index, read, index, indent)

    def _nested(self, index, read, *args):
        """``read(*args)``, one collection deeper (SnapshotError beyond ``MAX_DEPTH``)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(index + 1, "nested deeper than %d levels" % MAX_DEPTH)
        value = read(*args)
        self.depth -= 1
        return value

    def _is_entry(self, text, index):
        """True when ``text`` starts with ``key:`` (a mapping entry)."""
        try:
            self._split_key(text, index)
        except SnapshotError:
            return False
        return True

    def _split_key(self, text, index):
        """(key, rest) of a ``key: value`` line; raises when the line is not an entry."""
        if text[0] in "\"'":
            key, pos = self._quoted(text, 0, index)
        else:
            pos = 0
            while True:
                pos = text.find(":", pos)
                if pos < 0:
                    self.fail(index + 1, "expected 'key: value', got %r" % text[:60])
                if pos + 1 == len(text) or text[pos + 1] == " ":
                    break
                pos += 1
            key = text[:pos].rstrip()
            if not key or key[0] in _BAD_START + "{[]},#|" or _is_item(key):
                self.fail(index + 1, "unsupported key %r" % key)
        rest = text[pos:]
        if not rest.startswith(":") or (len(rest) > 1 and rest[1] != " "):
            self.fail(index + 1, "expected ':' after key %r" % (key,))
        return key, rest[1:].strip()

    def _block_line(self, index, indent):
        """Text of meaningful line ``index`` when it continues the block at ``indent``; None
        when it is less indented (the block ended). A deeper line is an error."""
        ind, text = self._content(index)
        if ind < indent:
            return None
        if ind > indent:
            self.fail(index + 1, "unexpected indentation")
        return text

    def _mapping(self, index, indent):
        result = {}
        while index < len(self.raw):
            text = self._block_line(index, indent)
            if text is None:
                break
            if _is_item(text):
                self.fail(index + 1, "a sequence item where a mapping key was expected")
            key, rest = self._split_key(text, index)
            if key in result:
                self.fail(index + 1, "duplicate key %r" % (key,))
            result[key], index = self._value(rest, index, indent, allow_same_indent_seq=True)
        return result, index

    def _sequence(self, index, indent):
        result = []
        while index < len(self.raw):
            text = self._block_line(index, indent)
            if text is None or not _is_item(text):
                break
            rest = text[1:].lstrip(" ")
            if _is_item(rest) or (rest and rest[0] not in "{[|#" and self._is_entry(rest, index)):
                # "- key: value" / "- - x": a block node whose column is that of its first token.
                column = indent + len(text) - len(rest)
                self.raw[index] = " " * column + rest
                item, index = self._block(index, column)
            else:
                item, index = self._value(rest, index, indent, allow_same_indent_seq=False)
            result.append(item)
        return result, index

    def _value(self, rest, index, indent, allow_same_indent_seq):
        """Value after ``key:`` or ``-`` on line ``index``; returns (value, next index)."""
        if rest.startswith("#"):
            rest = ""
        if rest.startswith("|"):
            return self._literal(rest, index, indent)
        if rest:
            return self._inline(rest, index), self._next(index + 1)
        nxt = self._next(index + 1)
        if nxt >= len(self.raw):
            return None, nxt
        ind, text = self._content(nxt)
        if ind > indent:
            return self._block(nxt, ind)
        if ind == indent and allow_same_indent_seq and _is_item(text):
            return self._sequence(nxt, ind)
        return None, nxt

    def _literal(self, header, index, indent):
        match = re.match(r"^\|([-+]?)\s*(#.*)?\Z", header)
        if not match:
            self.fail(index + 1, "unsupported block scalar header %r" % header)
        chomp = match.group(1)
        lines = []
        block_indent = None
        pos = index + 1
        while pos < len(self.raw):
            line = self.raw[pos].rstrip("\r")
            if not line.strip(" "):
                lines.append("")
                pos += 1
                continue
            ind = len(line) - len(line.lstrip(" "))
            if block_indent is None:
                if ind <= indent:
                    break
                block_indent = ind
            if ind < block_indent:
                if ind > indent:
                    self.fail(pos + 1, "literal block line less indented than its first line")
                break
            lines.append(line[block_indent:])
            pos += 1
        # Trailing blank lines belong to the block only for chomping '+'.
        trailing = 0
        while lines and lines[-1] == "":
            lines.pop()
            trailing += 1
        text = "\n".join(lines)
        if chomp == "-":
            value = text
        elif chomp == "+":
            value = text + "\n" * (1 + trailing) if lines else "\n" * trailing
        else:
            value = text + "\n" if lines else ""
        return value, self._next(pos)

    # -- inline (flow) values ------------------------------------------------------------
    def _inline(self, text, index):
        value, pos = self._flow(text, 0, index, top=True)
        rest = text[pos:].strip()
        if rest and not rest.startswith("#"):
            self.fail(index + 1, "unexpected text %r after value" % rest[:40])
        return value

    def _flow(self, text, pos, index, top=False):
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if pos >= len(text):
            self.fail(index + 1, "missing value")
        char = text[pos]
        if char in "{[":
            read = self._flow_mapping if char == "{" else self._flow_sequence
            return self._nested(index, read, text, pos + 1, index)
        if char in "\"'":
            return self._quoted(text, pos, index)
        return self._plain(text, pos, index, top)

    def _flow_mapping(self, text, pos, index):
        result = {}

        def entry(pos):
            if pos < len(text) and text[pos] in "\"'":
                key, pos = self._quoted(text, pos, index)
            else:
                match = re.compile(r"[^:,{}\[\]]*").match(text, pos)
                key = match.group(0).strip()
                pos = match.end()
                if not key or key[0] in _BAD_START:
                    self.fail(index + 1, "bad key in flow mapping")
            pos = self._skip(text, pos)
            if pos >= len(text) or text[pos] != ":":
                self.fail(index + 1, "expected ':' in flow mapping after %r" % (key,))
            value, pos = self._flow(text, pos + 1, index)
            if key in result:
                self.fail(index + 1, "duplicate key %r" % (key,))
            result[key] = value
            return pos

        return result, self._flow_items(text, pos, index, "}", "mapping", entry)

    def _flow_sequence(self, text, pos, index):
        result = []

        def item(pos):
            value, pos = self._flow(text, pos, index)
            result.append(value)
            return pos

        return result, self._flow_items(text, pos, index, "]", "sequence", item)

    def _flow_items(self, text, pos, index, close, kind, read_item):
        """Comma-separated items up to ``close``; ``read_item(pos)`` reads one (from its first
        non-blank) and returns the position after it. Returns the position after ``close``."""
        pos = self._skip(text, pos)
        if pos < len(text) and text[pos] == close:
            return pos + 1
        while True:
            pos = self._skip(text, read_item(self._skip(text, pos)))
            if pos < len(text) and text[pos] == ",":
                pos += 1
                continue
            if pos < len(text) and text[pos] == close:
                return pos + 1
            self.fail(index + 1, "unterminated flow %s" % kind)

    @staticmethod
    def _skip(text, pos):
        while pos < len(text) and text[pos] == " ":
            pos += 1
        return pos

    def _quoted(self, text, pos, index):
        quote = text[pos]
        if quote == "'":
            out = []
            cur = pos + 1
            while True:
                end = text.find("'", cur)
                if end < 0:
                    self.fail(index + 1, "unterminated single-quoted string")
                out.append(text[cur:end])
                if text[end + 1 : end + 2] == "'":
                    out.append("'")
                    cur = end + 2
                    continue
                return "".join(out), end + 1
        cur = pos + 1
        while True:
            end = text.find('"', cur)
            if end < 0:
                self.fail(index + 1, "unterminated double-quoted string")
            backslashes = 0
            back = end - 1
            while back > pos and text[back] == "\\":
                backslashes += 1
                back -= 1
            if backslashes % 2 == 0:
                break
            cur = end + 1
        token = text[pos : end + 1]
        try:
            return json.loads(token), end + 1
        except ValueError as err:
            self.fail(index + 1, "bad double-quoted string (JSON escapes only): %s" % err)

    def _plain(self, text, pos, index, top):
        if text[pos] in _BAD_START + "|]}," or (text[pos] == "-" and text[pos + 1 : pos + 2] == " "):
            self.fail(index + 1, "unsupported YAML construct %r" % text[pos : pos + 20])
        if top:
            end = text.find(" #", pos)
            raw = text[pos:] if end < 0 else text[pos:end]
            if ": " in raw or raw.endswith(":"):
                self.fail(index + 1, "unexpected ':' in plain value %r (quote it)" % raw[:40])
            return _resolve(raw.strip()), pos + len(raw)
        match = re.compile(r"[^,{}\[\]]*").match(text, pos)
        raw = match.group(0)
        if ": " in raw or raw.rstrip().endswith(":") or " #" in raw:
            self.fail(index + 1, "unexpected text in flow value %r (quote it)" % raw[:40])
        return _resolve(raw.strip()), match.end()


def loads(text, source="snapshot.yml"):
    """Parse YAML-subset (or JSON) text; raises SnapshotError naming ``source`` and line."""
    if not isinstance(text, str):
        raise SnapshotError("%s: expected text" % source)
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped and stripped.endswith("}"):
        try:
            return check_depth(json.loads(stripped), source)
        except (ValueError, RecursionError):
            pass  # Fall through: a one-document flow mapping is parsed (and reported) below.
    return _Reader(text, source).document()


def check_depth(value, source, error=SnapshotError):
    """``value`` (JSON data) when it nests at most ``MAX_DEPTH`` collections; else ``error``."""
    level = [value] if isinstance(value, (dict, list)) else []
    for dummy in range(MAX_DEPTH + 1):  # each level's collections: they alone have a next one
        if not level:
            return value
        level = [
            v
            for item in level
            for v in (item.values() if isinstance(item, dict) else item)
            if isinstance(v, (dict, list))
        ]
    raise error("%s: nested deeper than %d levels" % (source, MAX_DEPTH))


# -- writer -------------------------------------------------------------------------------
def _is_scalar(value):
    return value is None or isinstance(value, (bool, int, float, str))


def _flow_ok(value):
    return (
        isinstance(value, dict)
        and all(_is_scalar(v) for v in value.values())
        and len(value) <= 6
        and all("\n" not in v for v in value.values() if isinstance(v, str))
    )


def _inline(value):
    """``{}`` / ``[]`` for an empty collection, the scalar otherwise."""
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def _flow_map(value):
    return "{%s}" % ", ".join("%s: %s" % (_key(k), _scalar(v)) for k, v in value.items())


def _emit(value, indent, out, flow):
    pad = " " * indent
    if isinstance(value, dict):
        for key in value:
            item = value[key]
            if isinstance(item, (dict, list)) and item:
                if flow and indent > 0 and _flow_ok(item):
                    out.append("%s%s: %s" % (pad, _key(key), _flow_map(item)))
                else:
                    out.append("%s%s:" % (pad, _key(key)))
                    _emit(item, indent + 2, out, flow)
            else:
                out.append("%s%s: %s" % (pad, _key(key), _inline(item)))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                if flow and _flow_ok(item):
                    out.append("%s- %s" % (pad, _flow_map(item)))
                elif flow:
                    out.append("%s-" % pad)
                    _emit(item, indent + 2, out, flow)
                else:
                    sub = []
                    _emit(item, indent + 2, sub, flow)
                    out.append("%s- %s" % (pad, sub[0][indent + 2 :]))
                    out.extend(sub[1:])
            else:
                out.append("%s- %s" % (pad, _inline(item)))
    else:
        out.append(pad + _scalar(value))


def dumps(value, flow=True):
    """YAML-subset text for ``value`` (dicts keep their order; lists, str, int, float, bool,
    None). ``flow``: inline small scalar mappings (snapshot.yml) or plain block style."""
    if isinstance(value, (dict, list)) and not value:
        return _inline(value) + "\n"
    out = []
    _emit(value, 0, out, flow)
    return "\n".join(out) + "\n"
