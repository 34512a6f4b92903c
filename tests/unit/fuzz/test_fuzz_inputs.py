# -*- coding: utf-8 -*-
"""Fuzz: the structured inputs of every module - topologies (mutated real facts), plans
(mutated real plans), instance names, environments, paths, --additional-config - through the
modules' own body functions (what ``module_runner.run`` calls, after Ansible's type checks) and
through the layers under them. Every outcome is a result or the collection's own error, which
the runner turns into a message: never another exception."""

import importlib
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch
from npuops_testing import SNAPSHOTS
from npuops_testing.hostile import HOSTILE_VALUES, fuzz_examples, mutated_value

SETTINGS = settings(
    max_examples=fuzz_examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
HOSTS = ("a2-910b3x8", "a3-16die", "a5-950", "atlas300-310p", "dgx-a100", "x86-none")
MODULES = "ansible_collections.npuops.fleet.plugins.modules."


def _facts():
    out = {}
    for host in HOSTS:
        if os.path.isfile(os.path.join(SNAPSHOTS, host, "snapshot.yml")):
            out[host] = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))
    return out


def _plans():
    out = {}
    for host, facts in FACTS.items():
        devices = [n["logic_id"] for n in facts["npus"]] or [g["index"] for g in facts["gpus"]]
        instances = [{"name": "svc", "npus": devices[:2]}] if devices else None
        try:
            out[host] = dispatch.make_plan(facts, instances=instances)
        except NpuopsError:
            continue
    return out


FACTS = _facts()
PLANS = _plans()


def test_the_recorded_hosts_are_there():
    assert FACTS and PLANS, "no facts or plans from tests/snapshots"


class FakeModule(object):
    """What a module body uses of AnsibleModule: params (after Ansible's own checks)."""

    def __init__(self, params, check_mode=True):
        self.params = params
        self.check_mode = check_mode
        self._diff = True
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


def module_body(name):
    """(argument spec, body) of plugins/modules/<name>.py, taken from its main()."""
    mod = importlib.import_module(MODULES + name)
    captured = []
    original = mod.run
    mod.run = lambda spec, body, **kwargs: captured.append((spec, body))
    try:
        mod.main()
    finally:
        mod.run = original
    return captured[0]


def call(module, check_mode=True, **params):
    spec, body = module_body(module)
    full = dict((key, opt.get("default")) for key, opt in spec.items())
    full.update(params)
    try:
        return body(FakeModule(full, check_mode))
    except (NpuopsError, OSError) as err:  # what module_runner.run reports as a message
        return err


def _strategy_facts():
    return st.sampled_from(sorted(FACTS)).flatmap(lambda h: mutated_value(FACTS[h]))


def _strategy_plan():
    return st.sampled_from(sorted(PLANS)).flatmap(lambda h: mutated_value(PLANS[h]))


@SETTINGS
@given(_strategy_facts(), st.sampled_from(["strict", "vllm_ascend"]), st.sampled_from([None, [0], [0, 1], [99]]))
def test_npu_cpu_plan_on_fuzzed_topologies(topo, policy, npus):
    call("npu_cpu_plan", topology=topo, policy=policy, npus=npus)


@SETTINGS
@given(
    _strategy_facts(),
    st.lists(
        st.fixed_dictionaries(
            {
                "name": st.sampled_from(["a", "b", "", "x" * 300] + HOSTILE_VALUES[:8]),
                "npus": st.sampled_from([[0], [1, 2], [], ["x"], [10**30], "0"]),
            }
        ),
        max_size=3,
    ),
)
def test_npu_cpu_plan_on_fuzzed_instances(topo, instances):
    call("npu_cpu_plan", topology=topo, instances=instances)


@SETTINGS
@given(_strategy_plan(), st.one_of(st.none(), _strategy_facts()), st.sampled_from(["ban", "stop", "ignore"]))
def test_npu_irq_affinity_on_fuzzed_plans(tmp_path, plan, topo, irqbalance):
    call("npu_irq_affinity", plan=plan, topology=topo, irqbalance=irqbalance, host_root=str(tmp_path))


@SETTINGS
@given(
    _strategy_plan(),
    st.sampled_from(["svc", "svc0", "a@", "@", "x" * 240, "-x", ".x"]),
    st.dictionaries(
        st.sampled_from(["A", "SHELLOPTS", "UID", "RANDOM", "_", "1x", "PATH"]),
        st.sampled_from(["v", "", "\x00", "$(id)", "'"]),
        max_size=3,
    ),
    st.sampled_from(
        ["/usr/local/lib/npuops", "/opt/a$b", '/opt/"q', "/opt/b\\s", "/o p", "relative", "/%i", "/a/../b"]
    ),
    st.sampled_from(
        [
            ["vllm", "serve"],
            ["vllm", "--additional-config", "[" * 100000],
            ["vllm", '--additional-config={"a": 1}'],
            ["vllm", "--additional-config"],
            ["-x"],
            ["vllm", "--additional-config", '{"a": ' + "[" * 40 + "]" * 40 + "}"],
        ]
    ),
)
def test_vllm_launch_wrapper_on_fuzzed_inputs(tmp_path, plan, name, env, dest, command):
    call("vllm_launch_wrapper", name=name, plan=plan, env=env, dest=dest, command=command, host_root=str(tmp_path))


@SETTINGS
@given(
    st.one_of(st.none(), _strategy_facts()),
    st.sampled_from([None, [0, 1], [10**30], [-1]]),
    st.sampled_from(["0750", "7777777", "4755", "2750", "0777", "1777", "abc", "", "0o750", "\u0667\u0665\u0660"]),
    st.booleans(),
)
def test_npu_share_dirs_on_fuzzed_inputs(tmp_path, topo, chips, mode, world):
    if topo is None and chips is None:
        chips = [0]
    elif topo is not None:
        chips = None
    call(
        "npu_share_dirs",
        root="/share_device",
        topology=topo,
        chips=chips,
        mode=mode,
        allow_world_writable=world,
        host_root=str(tmp_path),
    )


@pytest.mark.parametrize(
    "topo, words",
    [
        # wrong-typed topologies were tracebacks (14 code sites)
        ({"vendor": "ascend", "npus": [{"logic_id": "x"}]}, "npus[0].logic_id: expected an integer"),
        ({"vendor": "ascend", "npus": [{"logic_id": 0, "numa_node": "x"}]}, "npus[0].numa_node"),
        ({"vendor": "ascend", "npus": [{"logic_id": 0, "affinity": 5.5}]}, "npus[0].affinity"),
        ({"vendor": "ascend", "cpu": {"numa_nodes": {"x": "0-3"}}}, "cpu.numa_nodes: key 'x'"),
        ({"vendor": "ascend", "cpu": {"numa_nodes": []}}, "cpu.numa_nodes: expected a mapping"),
        ({"vendor": "ascend", "cpu": "0-3"}, "cpu: expected a mapping"),
        ({"vendor": "nvidia", "gpus": [{"index": 0, "links": ["PIX"]}]}, "gpus[0].links"),
        ({"vendor": "nvidia", "gpus": [{"index": True}]}, "gpus[0].index"),
        ({"npus": {"0": {}}}, "npus: expected a list"),
        ({"npus": [{"logic_id": 10**30}]}, "npus[0].logic_id"),
    ],
)
def test_wrong_typed_topology_names_the_field(topo, words):
    err = call("npu_cpu_plan", topology=topo)
    assert isinstance(err, NpuopsError) and words in str(err), err


@pytest.mark.parametrize(
    "params, words",
    [
        # hostile values once crashed these checks
        ({"name": "x" * 240}, "name 'xxxx"),
        ({"name": "a@"}, "no '@'"),
        ({"name": "@"}, "no '@'"),
        (
            {"plan": {"instances": [1], "npus": {"0": {"pool": "0-3", "main": "0-3"}}}},
            "plan: instances: expected a mapping",
        ),
        ({"plan": {"npus": {"0": {"pool": "0-4294967295", "main": "0-3"}}}}, "CPU id 4294967295"),
        ({"command": ["vllm", "--additional-config", "[" * 100000]}, "not valid JSON"),
        ({"command": ["vllm", "--additional-config", '{"a": ' + "[" * 60 + "]" * 60 + "}"]}, "nested deeper than 32"),
        ({"env": {"SHELLOPTS": "x"}}, "bash readonly variable"),
        ({"env": {"RANDOM": "1"}}, "bash special variable"),
        ({"dest": "/opt/a$b"}, "dest: '/opt/a$b' must be an absolute path"),
        ({"dest": '/opt/"q'}, "dest:"),
        ({"unit_dir": "/etc/sys temd"}, "unit_dir:"),
        ({"bind_timeout": 10**12}, "bind_timeout: must be from 1 to"),
        # env values as lists/dicts became their Python repr in the wrapper
        ({"env": {"A": ["x", "y"]}}, "env: A must be a string or a number, got a list"),
        ({"env": {"A": {"k": 1}}}, "env: A must be a string or a number, got a mapping"),
        ({"env": {"A": "x" * 200000}}, "env: A is longer than 131071 characters"),
    ],
)
def test_launch_wrapper_refusals_are_messages(tmp_path, params, words):
    base = {
        "name": "svc",
        "plan": {"npus": {"0": {"pool": "0-3", "main": "0-3"}}},
        "command": ["vllm", "serve"],
        "host_root": str(tmp_path),
    }
    base.update(params)
    err = call("vllm_launch_wrapper", **base)
    assert isinstance(err, NpuopsError) and words in str(err), err


def test_launch_wrapper_reserved_env_names_match_bash():
    """BASH_READONLY and BASH_SPECIAL are exactly the names whose exported value never reaches
    the exec'ed program (probed with the installed bash)."""
    import shutil
    import subprocess

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    candidates = sorted(
        launch.BASH_READONLY
        | launch.BASH_SPECIAL
        | {
            "PATH",
            "HOME",
            "IFS",
            "BASH_ENV",
            "OPTARG",
            "BASH_REMATCH",
            "TERM",
            "LD_LIBRARY_PATH",
            "HCCL_BUFFSIZE",
            "POSIXLY_CORRECT",
            "BASH_ARGV0",
        }
    )
    lost = set()
    for name in candidates:
        for value in ("5", "npuops-probe"):
            script = "set -euo pipefail\nexport %s=%s\nexec env\n" % (name, value)
            proc = subprocess.run(
                [bash, "-c", script],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                universal_newlines=True,
                env={"PATH": "/usr/bin:/bin"},
                check=False,
            )
            if "%s=%s" % (name, value) not in proc.stdout.splitlines():
                lost.add(name)
    lost.discard("PATH")  # a probe value for PATH hides env itself; PATH is a real setting
    assert lost == launch.BASH_READONLY | launch.BASH_SPECIAL


@pytest.mark.parametrize(
    "mode, world, words",
    [
        ("7777777", False, "not an octal mode"),  # 7 digits: past the mode bits
        ("4750", False, "setuid or setgid"),
        ("2750", False, "setuid or setgid"),
        ("0777", False, "world-writable without the sticky bit"),
        ("\u0667\u0665\u0660", False, "not an octal mode"),
    ],
)
def test_share_dir_modes_are_checked(tmp_path, mode, world, words):
    err = call(
        "npu_share_dirs",
        root="/share_device",
        chips=[0],
        mode=mode,
        allow_world_writable=world,
        host_root=str(tmp_path),
    )
    assert isinstance(err, NpuopsError) and words in str(err), err


@pytest.mark.parametrize("mode, world", [("1777", False), ("0777", True), ("0750", False)])
def test_share_dir_modes_are_idempotent(tmp_path, mode, world):
    (tmp_path / "etc").mkdir()
    args = dict(
        root="/share_device", chips=[0, 1], mode=mode, allow_world_writable=world, host_root=str(tmp_path), group="root"
    )
    first = call("npu_share_dirs", check_mode=False, **args)
    again = call("npu_share_dirs", check_mode=False, **args)
    assert first["changed"] and not again["changed"], (first, again)
    assert oct(os.stat(str(tmp_path / "share_device" / "1")).st_mode & 0o7777) == oct(int(mode, 8))
