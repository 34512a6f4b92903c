# -*- coding: utf-8 -*-
"""The k8s_node role carries every option of kubelet_cpu_profile: its spec, defaults and task
arguments are rendered from the module (scripts/k8s_node_options.py through
scripts/gen_argument_specs.py). By hand they lagged: memory_reserved_node had no role variable."""

import os
import shutil

import pytest
import yaml

# scripts/ is on pytest.ini's pythonpath
import gen_argument_specs
import k8s_node_options

from npuops_testing import REPO


def _yaml(*parts):
    with open(os.path.join(REPO, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _profile_task():
    tasks = _yaml("roles", "k8s_node", "tasks", "main.yml")
    return next(t for t in tasks if "npuops.fleet.kubelet_cpu_profile" in t)["npuops.fleet.kubelet_cpu_profile"]


def test_the_task_passes_every_module_option():
    assert list(_profile_task()) == list(k8s_node_options.module_spec(REPO))


def test_every_role_variable_has_its_spec_and_default():
    spec = _yaml("roles", "k8s_node", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    defaults = _yaml("roles", "k8s_node", "defaults", "main.yml")
    module = k8s_node_options.module_spec(REPO)
    for option, row in k8s_node_options.OPTIONS.items():
        if "fixed" in row:
            continue
        var = row["var"]
        assert var in spec, var
        assert var in defaults and defaults[var] == spec[var]["default"] == row["default"], var
        if "choices" not in row:
            assert spec[var].get("choices") == module[option].get("choices"), var
        assert var in _profile_task()[option], option


def test_memory_reserved_node_is_a_role_variable():
    """The option the role lacked: null (the default) omits it, a node id is passed on."""
    task = _profile_task()
    assert task["memory_reserved_node"] == (
        "{{ omit if npuops_k8s_memory_reserved_node is none else npuops_k8s_memory_reserved_node }}"
    )
    assert _yaml("roles", "k8s_node", "defaults", "main.yml")["npuops_k8s_memory_reserved_node"] is None


def test_every_public_variable_is_kept():
    """The role's public variable names (product contract) before the generation, all still there."""
    spec = _yaml("roles", "k8s_node", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    for name in (
        "npuops_k8s_config_mode",
        "npuops_k8s_config_dir",
        "npuops_k8s_dropin_name",
        "npuops_k8s_config_file",
        "npuops_k8s_housekeeping_cpus",
        "npuops_k8s_pod_devices",
        "npuops_k8s_memory_manager",
        "npuops_k8s_kube_reserved_memory",
        "npuops_k8s_system_reserved_memory",
        "npuops_k8s_eviction_hard_memory",
        "npuops_k8s_kubelet_version",
        "npuops_k8s_alpha_gates",
        "npuops_k8s_strict_cpu_reservation",
        "npuops_k8s_kubeconfig",
        "npuops_k8s_context",
        "npuops_k8s_node_name",
        "npuops_k8s_drain_timeout",
        "npuops_k8s_drain_delete_emptydir_data",
        "npuops_k8s_drain_force",
        "npuops_k8s_kubelet_start_timeout",
        "npuops_k8s_kubelet_service",
        "npuops_k8s_irq_on_reserved",
        "npuops_k8s_restart_kubelet",
    ):
        assert name in spec, name


@pytest.fixture(name="module_copy")
def _module_copy(tmp_path):
    """A repository holding only a copy of the module, to change its argument spec."""
    target = tmp_path / k8s_node_options.MODULE
    target.parent.mkdir(parents=True)
    shutil.copy(os.path.join(REPO, k8s_node_options.MODULE), str(target))
    return tmp_path, target


def test_a_new_module_option_without_a_role_variable_fails(module_copy):
    repo, target = module_copy
    text = target.read_text()
    target.write_text(
        text.replace(
            '        host_root=dict(type="path", default="/"),\n',
            '        host_root=dict(type="path", default="/"),\n        cpu_quota=dict(type="int"),\n',
        )
    )
    with pytest.raises(SystemExit, match="option cpu_quota has no role variable"):
        k8s_node_options.rows(str(repo))


def test_a_module_option_gone_fails(module_copy):
    repo, target = module_copy
    text = target.read_text()
    target.write_text(text.replace('        memory_reserved_node=dict(type="int"),\n', ""))
    with pytest.raises(SystemExit, match="option memory_reserved_node is no longer the module's"):
        k8s_node_options.rows(str(repo))


def test_a_module_default_the_role_contradicts_fails(module_copy):
    repo, target = module_copy
    text = target.read_text()
    target.write_text(
        text.replace(
            'dropin_name=dict(type="str", default="50-npuops.conf")',
            'dropin_name=dict(type="str", default="60-npuops.conf")',
        )
    )
    with pytest.raises(SystemExit, match="option dropin_name: default '60-npuops.conf'"):
        k8s_node_options.rows(str(repo))


def test_a_hand_edit_inside_the_block_is_stale(tmp_path):
    """--check compares the files with their rendering: an edited line between the markers is stale."""
    path = os.path.join(REPO, "roles", "k8s_node", "defaults", "main.yml")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    block = k8s_node_options.targets(REPO, gen_argument_specs._dump)[path]
    edited = text.replace("npuops_k8s_alpha_gates: false", "npuops_k8s_alpha_gates: true")
    assert edited != text
    assert gen_argument_specs.render_blocks(edited, [block], "defaults") == text


def test_a_lost_marker_fails():
    path = os.path.join(REPO, "roles", "k8s_node", "tasks", "main.yml")
    block = k8s_node_options.targets(REPO, gen_argument_specs._dump)[path]
    with pytest.raises(SystemExit, match="the marker .* is gone"):
        gen_argument_specs.render_blocks("---\n- name: Nothing\n", [block], "tasks/main.yml")
