# -*- coding: utf-8 -*-
"""Ansible values -> plain Python (plugins/plugin_utils/ansible_data.py)."""
# The tests check exact types on purpose (a subclass is what to_plain must strip).
# pylint: disable=unidiomatic-typecheck

import json

import pytest

from ansible_collections.npuops.fleet.plugins.plugin_utils.ansible_data import to_plain


class _IntSub(int):
    pass


class _StrSub(str):
    pass


class _Other(object):
    def __str__(self):
        return "other"


def test_to_plain_containers_become_dict_and_list_with_str_keys():
    value = {1: (1, 2), "a": [{"b": None}]}
    assert to_plain(value) == {"1": [1, 2], "a": [{"b": None}]}
    assert type(to_plain(value)["1"]) is list


def test_to_plain_scalars_lose_their_subclass():
    assert type(to_plain(_IntSub(3))) is int and to_plain(_IntSub(3)) == 3
    assert type(to_plain(_StrSub("x"))) is str and to_plain(_StrSub("x")) == "x"
    assert type(to_plain(1.5)) is float


def test_to_plain_keeps_bool_and_none_and_stringifies_the_rest():
    assert to_plain(True) is True
    assert to_plain(False) is False
    assert to_plain(None) is None
    assert to_plain(_Other()) == "other"
    assert to_plain({"o": _Other()}) == {"o": "other"}


def test_to_plain_on_ansible_tagged_values_is_json_serialisable():
    # ansible-core 2.19+ data tagging (private API; skipped where it is absent)
    datatag = pytest.importorskip("ansible.module_utils._internal._datatag")
    tags = pytest.importorskip("ansible._internal._datatag._tags")
    tag = tags.Origin(path="/inventory/hosts.yml", line_num=1)
    helper = datatag.AnsibleTagHelper
    tagged = helper.tag({"host": helper.tag([helper.tag("a", [tag]), 1], [tag])}, [tag])
    assert type(tagged) is not dict and type(tagged["host"][0]) is not str
    plain = to_plain(tagged)
    assert plain == {"host": ["a", 1]}
    assert type(plain) is dict and type(plain["host"]) is list and type(plain["host"][0]) is str
    assert json.loads(json.dumps(plain)) == plain
