# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible values -> plain Python (controller side).

Filters receive Ansible's tagged/lazy containers and scalars; the pure code behind them
(and ``json``/``yaml`` dumps) wants plain dict/list/str/int/float/bool/None.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def to_plain(value):
    """Ansible's tagged/lazy containers -> plain dict/list/str/int/float/bool/None.

    Mapping keys become ``str``; tuples become lists; anything else unknown becomes ``str``.
    """
    if isinstance(value, dict):
        return dict((str(k), to_plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    # bool before int: bool is an int subclass
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def plain_dicts(value, _seen=None):
    """``value`` with every dict subclass (``OrderedDict``) as a plain ``dict`` (order kept)
    and tuples as lists, for Ansible's variable storage, which warns on ``OrderedDict``.

    A container that occurs several times (the report shares the nested values of identical
    hosts) is converted once and stays shared.
    """
    if _seen is None:
        _seen = {}
    if isinstance(value, dict):
        done = _seen.get(id(value))
        if done is None:
            done = _seen[id(value)] = {}
            for key, item in value.items():
                done[key] = plain_dicts(item, _seen)
        return done
    if isinstance(value, (list, tuple)):
        done = _seen.get(id(value))
        if done is None:
            done = _seen[id(value)] = []
            done.extend(plain_dicts(item, _seen) for item in value)
        return done
    return value
