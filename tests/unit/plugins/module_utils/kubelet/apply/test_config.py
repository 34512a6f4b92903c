# -*- coding: utf-8 -*-
"""kubelet/apply/config.py: the merge into the kubelet's own file and the state-reset rule."""

import json

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.apply import config as kc
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as parse
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import state as kubelet_state
from npuops_testing import fixture_text

UPDATES = {
    "cpuManagerPolicy": "static",
    "reservedSystemCPUs": "0-1",
    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
}


def test_yaml_merge_replaces_blocks_keeps_comments_appends_new_keys():
    text = (
        "# site comment\nkind: KubeletConfiguration\ncpuManagerPolicyOptions:\n"
        '  distribute-cpus-across-numa: "true"\n# next\ncpuManagerPolicy: none\n'
    )
    out = kc.merge_text(text, UPDATES)
    assert out.startswith("# site comment\nkind: KubeletConfiguration\n")
    assert "# next\n" in out and "distribute-cpus-across-numa" not in out  # the key is ours now
    assert parse.parse_config(out) == dict(parse.parse_config(text), **UPDATES)
    assert kc.merge_text(out, UPDATES) == out


def test_json_config_stays_json():
    text = json.dumps({"kind": "KubeletConfiguration", "cgroupDriver": "systemd"}, indent=1)
    out = kc.merge_text(text, UPDATES)
    assert json.loads(out) == {"kind": "KubeletConfiguration", "cgroupDriver": "systemd", **UPDATES}


def test_kubeadm_file_merged_line_for_line():
    text = fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml")
    out = kc.merge_text(text, UPDATES)
    assert out.startswith(text)  # none of the profile's keys was there: appended only


def test_unreadable_file_refused():
    with pytest.raises(NpuopsError):
        kc.merge_text("a: &anchor 1\n", UPDATES)


STATIC = {"policy": "static", "default_cpus": "0-63"}
ONLINE = list(range(64))


# The cases this file held when the module kept a second copy of the reset rule, now asked of
# the one rule (kubelet/plan/state), on a 64-CPU node at kubelet 1.30 (no strict option).
@pytest.mark.parametrize(
    "after, cpu, mem, expect",
    [
        (
            {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1"},
            {"policy": "none", "default_cpus": ""},
            None,
            ["cpu_manager_state"],
        ),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1"}, STATIC, None, []),
        (
            {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1"},
            {"policy": "static", "default_cpus": "1-63"},
            None,
            ["reservedSystemCPUs"],
        ),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}, None, None, []),  # fresh node
        ({"memoryManagerPolicy": "Static"}, None, {"policy": "None"}, ["memory_manager_state"]),
    ],
)
def test_reset_reasons_are_the_kubelet_state_rule(after, cpu, mem, expect):
    reasons = kubelet_state.reset_reasons(after, cpu, mem, ONLINE, (1, 30))
    assert len(reasons) == len(expect), reasons
    for reason, text in zip(reasons, expect):
        assert text in reason


def test_the_module_keeps_no_second_reset_rule():
    assert not hasattr(kc, "reset_reasons")
