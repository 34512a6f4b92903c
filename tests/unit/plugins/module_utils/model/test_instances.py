# -*- coding: utf-8 -*-
"""model/instances.py: the one instance schema, rendered into every role's argument spec and
taken by the modules, and its whole-list checks (every mistake named with its variable)."""

import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.npuops.fleet.plugins.module_utils.model import instances
from npuops_testing import REPO

CMD = ["vllm", "serve", "/models/m"]
ROLES_WITH_INSTANCES = [("cpu_binding", "main"), ("cpu_binding", "plan"), ("vllm_launch", "main")]


def _spec(role):
    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")) as handle:
        return yaml.safe_load(handle)["argument_specs"]


def _validate_union():
    """The union the validate role checks (vars/main.yml; its own spec holds its switches)."""
    with open(os.path.join(REPO, "roles", "validate", "vars", "main.yml")) as handle:
        return yaml.safe_load(handle)["__npuops_validate_spec"]


@pytest.mark.parametrize("role,entry", ROLES_WITH_INSTANCES)
def test_every_role_spec_holds_the_one_schema(role, entry):
    option = _spec(role)[entry]["options"]["npuops_vllm_instances"]
    assert option["options"] == instances.argument_spec_options()
    assert list(option["options"]) == list(instances.NAMES)
    assert "migrate" in option["options"]


def test_the_validate_union_holds_the_one_schema_without_descriptions():
    option = _validate_union()["npuops_vllm_instances"]
    assert list(option["options"]) == list(instances.NAMES)
    for name, sub in instances.argument_spec_options().items():
        assert option["options"][name]["type"] == sub["type"], name
        assert option["options"][name].get("choices") == sub.get("choices"), name
        assert "description" not in option["options"][name]


def test_the_generated_files_are_current():
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "scripts", "gen_argument_specs.py"), "--check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout


def test_the_validate_role_spec_is_the_union_of_the_site_roles():
    union = _validate_union()
    own = _spec("validate")
    for name in own["main"]["options"]:
        assert name in union and name in own["facts"]["options"], name
    # its own spec holds only its switches: Ansible's automatic check prints the whole spec
    assert len(own["main"]["options"]) < 10
    for role in ("npu_facts", "softshare_host", "cpu_binding", "k8s_node", "vllm_launch"):
        for spec in _spec(role).values():
            for name, option in spec["options"].items():
                assert union[name]["type"] == option["type"], name
                assert union[name].get("choices") == option.get("choices"), name


def test_the_wrapper_module_takes_its_instance_options_from_the_schema():
    for name in ("name", "command", "binding", "migrate", "systemd", "env"):
        spec = instances.module_option(name)
        assert spec["type"] == dict(instances.OPTIONS)[name]["type"]
    assert instances.module_option("binding", default="host") == {
        "type": "str",
        "choices": ["host", "vllm"],
        "required": False,
        "default": "host",
    }


def one(**inst):
    base = {"name": "a", "npus": [0, 1], "command": CMD}
    base.update(inst)
    return [dict((k, v) for k, v in base.items() if v is not Ellipsis)]


@pytest.mark.parametrize(
    "insts,needle",
    [
        (one(migrate=False), None),
        (one(npus="0,1,2,3"), "npuops_vllm_instances[0] (a): npus must be a list of integers"),
        (one(npus=[]), "npus is empty"),
        (one(npus=[0, 0]), "lists a device twice"),
        (one(npus=[True]), "got item True"),
        (one(name="dsv3 a"), "name 'dsv3 a' must be 1 to 100"),
        (one(name="../x"), "name '../x' must be"),
        (one(name="a@b"), "no '@'"),
        (one(name=Ellipsis), "npuops_vllm_instances[0]: name is missing"),
        (one(command="vllm serve m"), "command must be a non-empty list of arguments"),
        (one(command=[]), "command must be a non-empty list"),
        (one(env={"X": None}), "npuops_vllm_instances[0] (a): env.X: value must be a string"),
        (one(env={"X": {"y": 1}}), "env.X: value must be a string, a number or a boolean, got dict"),
        (one(binding="numa"), "binding must be host or vllm"),
        (one(systemd="yes"), "systemd must be true or false"),
        (one(dest="relative/dir"), "dest must be an absolute path"),
        (one(dest="/opt/../etc"), "dest must be an absolute path without '..'"),
        (one(migrat=False), "unknown option migrat"),
        (
            [{"name": "a", "npus": [0], "command": CMD}, {"name": "a", "npus": [1], "command": CMD}],
            "npuops_vllm_instances[1] (a): name 'a' is already used by npuops_vllm_instances[0]",
        ),
        ({"name": "a"}, "npuops_vllm_instances: must be a list of instances"),
        (["a"], "npuops_vllm_instances[0]: must be a mapping"),
    ],
)
def test_problems_without_facts(insts, needle):
    found = instances.problems(insts)
    if needle is None:
        assert found == []
    else:
        assert any(needle in text for text in found), found


def test_missing_command_is_refused_only_when_the_instances_are_installed():
    insts = one(command=Ellipsis)
    assert instances.problems(insts) == []
    assert instances.problems(insts, need_command=True) == [
        "npuops_vllm_instances[0] (a): command is missing (a list of arguments, e.g. [vllm, serve, /models/m])"
    ]


def test_facts_dependent_problems_name_the_restriction_and_the_vendor_word():
    insts = [{"name": "a", "npus": [0, 8], "command": CMD}, {"name": "b", "npus": [8], "command": CMD}]
    found = instances.problems(insts, devices=range(16), restricted=[0, 1, 2, 3])
    assert found[0] == (
        "npuops_vllm_instances[0] (a): NPU 8 is not usable: this host has [0..15], "
        "npuops_npus restricts to [0, 1, 2, 3]"
    )
    assert "npuops_vllm_instances[1] (b): NPU 8 is also in npuops_vllm_instances[0]" in found[-1]
    gpu = instances.problems([{"name": "a", "npus": [9], "command": CMD}], devices=range(8), device_word="GPU")
    assert gpu == ["npuops_vllm_instances[0] (a): GPU 9 is not usable: this host has [0..7]"]
