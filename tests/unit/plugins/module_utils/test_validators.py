"""Whole-string validators must not accept a trailing newline (Python's ``$`` does)."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch as wrapper
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError


@pytest.mark.parametrize("name", ["svc\n", "svc\nExecStartPre=/bin/true"])
def test_instance_name_with_newline_is_refused(name):
    with pytest.raises(NpuopsError):
        wrapper.check_name(name)


def test_snapshot_key_with_newline_round_trips():
    doc = {"A\n": None, "plain": "x", "Off": 1, "yes": 2}
    assert snapshot.loads(snapshot.dumps(doc)) == doc
