# -*- coding: utf-8 -*-
"""wrapper.py: bash wrapper, systemd unit and plan JSON rendered from a plan."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch as wrapper
from ansible_collections.npuops.fleet.plugins.module_utils.render import units
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from npuops_testing import SNAPSHOTS

A2_PLAN = {
    "policy": "strict",
    "mode": "topo_affinity",
    "device_type": "A2",
    "skipped": False,
    "numa_nodes": {"0": "0-47", "1": "48-95", "2": "96-143", "3": "144-191"},
    "npus": {
        "0": {
            "pool": "144-167",
            "numa_nodes": [3],
            "irq": "144-145",
            "main": "146-165",
            "acl": "166",
            "release": "167",
        },
        "1": {"pool": "0-23", "numa_nodes": [0], "irq": "0-1", "main": "2-21", "acl": "22", "release": "23"},
        "2": {
            "pool": "168-191",
            "numa_nodes": [3],
            "irq": "168-169",
            "main": "170-189",
            "acl": "190",
            "release": "191",
        },
    },
    "instances": {
        "svc0": {"npus": [0, 1], "main": "2-21,146-165", "pool": "0-23,144-167", "numa_nodes": [0, 3], "env": {}}
    },
    "log": [],
    "warnings": [],
}

GPU_PLAN = {
    "policy": "strict",
    "mode": "gpu_numa",
    "device_type": None,
    "skipped": False,
    "numa_nodes": {"0": "0-47", "1": "48-95"},
    "npus": {},
    "gpus": {
        "0": {"pool": "0-23", "numa_node": 0, "nic": "mlx5_0", "link": "PIX"},
        "1": {"pool": "24-47", "numa_node": 0, "nic": "mlx5_1", "link": "PIX"},
        "2": {"pool": "48-71", "numa_node": 1, "nic": "mlx5_2", "link": "PIX"},
    },
    "instances": {"g": {"npus": [0, 1], "env": {"NCCL_IB_HCA": "=mlx5_0,=mlx5_1"}}},
    "env": {"NCCL_SOCKET_IFNAME": "ens1f0np0", "NCCL_IB_HCA": "=mlx5_0,=mlx5_1,=mlx5_2"},
    "log": [],
    "warnings": [],
}

HOSTILE = [
    "it's",
    'say "hi"',
    "$(touch /tmp/npuops-pwned)",
    "`touch /tmp/npuops-pwned`",
    "line1\nline2",
    "*",
    "?[a]",
    "-rf",
    "--",
    "a b\tc",
    "\\",
    "${HOME}",
    ";",
    "&& echo x",
    "|",
    "'",
    "",
    "é ünïcode",
    "--additional-config-ish",
    "!!",
    "~root",
    "#notacomment",
]


def view(plan=None, name="svc0", npus=None):
    return wrapper.instance_view(A2_PLAN if plan is None else plan, name, npus)


def test_instance_view_unions_main_cpus_of_the_instance_npus():
    v = view()
    assert v["devices"] == [0, 1]
    assert v["vendor"] == "ascend"
    assert v["main"] == list(range(2, 22)) + list(range(146, 166))
    assert v["pool"] == list(range(0, 24)) + list(range(144, 168))
    assert v["numa_nodes"] == [0, 3]


def test_instance_view_npus_override_and_default_all():
    """npus picks devices of an instance the plan does not have; without either, every device."""
    assert view(name="other", npus=[2])["main"] == list(range(170, 190))
    assert view(name="other")["devices"] == [0, 1, 2]


@pytest.mark.parametrize(
    "npus, needle", [([7], "NPU 7 is not in the plan"), ([0, 0], "twice"), ([], "no devices"), (["x"], "not a list")]
)
def test_instance_view_bad_npus(npus, needle):
    with pytest.raises(NpuopsError, match=needle):
        view(name="other", npus=npus)
    if npus == [7]:  # a device the plan lacks is named first, whichever instance asks
        with pytest.raises(NpuopsError, match=needle):
            view(npus=npus)


def test_instance_view_takes_the_plan_instances_cpus():
    """The plan instance's CPUs are the instance's: a union of its devices' entries (what the
    wrapper computed before) would give 2-21,146-165; the plan says otherwise and wins."""
    plan = dict(
        A2_PLAN,
        instances={
            "svc0": {
                "npus": [0, 1],
                "main": "4-21,146-163",
                "pool": "0-23,144-167",
                "numa_nodes": [3],
                "frontend": "2-3,164-165",
                "env": {},
            }
        },
    )
    v = view(plan)
    assert cpulist.format(v["main"]) == "4-21,146-163"
    assert v["numa_nodes"] == [3] and cpulist.format(v["frontend"]) == "2-3,164-165"
    text = wrapper.render_wrapper(v, ["vllm"])
    assert "taskset -c 2-21,146-165 vllm" in text and "main CPUs: 4-21,146-163" in text
    with pytest.raises(NpuopsError, match=r"npus: 2 are not the devices of plan instance svc0 \(0,1\)"):
        view(plan, npus=[2])


@pytest.mark.parametrize("name", ["", "..", ".", "a/b", "a b", "x;y", "$(id)", "a\nb", None])
def test_bad_names_rejected(name):
    with pytest.raises(NpuopsError, match="name"):
        wrapper.check_name(name)


def test_skipped_plan_rejected():
    with pytest.raises(NpuopsError, match="skipped"):
        wrapper.instance_view({"skipped": True, "reason": "x86_64"}, "a")


def test_wrapper_text_host_binding():
    text = wrapper.render_wrapper(view(), ["vllm", "serve", "/models/qwen"], env={"A": "1"})
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail\n" in text
    assert "export ASCEND_RT_VISIBLE_DEVICES=0,1\n" in text
    assert "export A='1'\n" in text
    last = text.strip().splitlines()[-1]
    assert last == (
        "exec taskset -c 2-21,146-165 vllm serve /models/qwen --additional-config '{\"enable_cpu_binding\":false}'"
    )


def test_wrapper_vllm_binding_has_no_taskset_and_keeps_config():
    text = wrapper.render_wrapper(view(), ["vllm", "serve", "m"], binding="vllm")
    assert "taskset" not in text
    assert "additional-config" not in text
    assert text.strip().splitlines()[-1] == "exec vllm serve m"


def test_gpu_wrapper_cuda_visible_and_plan_env():
    text = wrapper.render_wrapper(view(GPU_PLAN, "g"), ["vllm", "serve", "m"])
    assert "export CUDA_VISIBLE_DEVICES=0,1\n" in text
    # instance env wins over node-wide env
    assert "export NCCL_IB_HCA='=mlx5_0,=mlx5_1'\n" in text
    assert "export NCCL_SOCKET_IFNAME='ens1f0np0'\n" in text
    assert "additional-config" not in text
    assert "exec taskset -c 0-47 vllm serve m" in text


def test_visibility_var_in_user_env_must_agree():
    with pytest.raises(NpuopsError, match="ASCEND_RT_VISIBLE_DEVICES=3 contradicts"):
        wrapper.render_wrapper(view(), ["vllm"], env={"ASCEND_RT_VISIBLE_DEVICES": "3"})
    text = wrapper.render_wrapper(view(), ["vllm"], env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"})
    assert text.count("ASCEND_RT_VISIBLE_DEVICES") == 1


PLANNED_ENV_PLAN = dict(
    A2_PLAN,
    instances={
        "svc0": {
            "npus": [0, 1],
            "main": "2-21,146-165",
            "pool": "0-23,144-167",
            "numa_nodes": [0, 3],
            "env": {"ASCEND_RT_VISIBLE_DEVICES": "0,1", "HCCL_X": "1"},
        }
    },
)


def test_plan_instance_visibility_equal_to_devices_is_accepted():
    """npu_cpu_plan puts the visibility variable into the instance env: same devices, no fight."""
    v = view(PLANNED_ENV_PLAN)
    assert v["devices"] == [0, 1]
    assert v["env"] == {"HCCL_X": "1"}
    for npus in (None, [0, 1]):
        text = wrapper.render_wrapper(view(PLANNED_ENV_PLAN, npus=npus), ["vllm"])
        assert text.count("ASCEND_RT_VISIBLE_DEVICES") == 1
        assert "export ASCEND_RT_VISIBLE_DEVICES=0,1\n" in text
        assert "export HCCL_X='1'\n" in text


def test_plan_instance_visibility_contradicting_npus_is_refused():
    """npus naming other devices than the plan instance would export a stale visibility value."""
    with pytest.raises(
        NpuopsError,
        match=r"npus: 2 are not the devices of plan instance svc0 "
        r"\(0,1\)",
    ):
        view(PLANNED_ENV_PLAN, npus=[2])
    with pytest.raises(NpuopsError, match=r"npus: 1,0 are not"):
        view(PLANNED_ENV_PLAN, npus=[1, 0])
    # an earlier release's plan instance env naming other devices than its npus
    stale = dict(
        A2_PLAN, instances={"svc0": dict(PLANNED_ENV_PLAN["instances"]["svc0"], env={"ASCEND_RT_VISIBLE_DEVICES": "2"})}
    )
    with pytest.raises(
        NpuopsError,
        match=r"plan instance svc0 env: ASCEND_RT_VISIBLE_DEVICES=2 "
        r"contradicts the instance's devices \(0,1\)",
    ):
        view(stale)


def test_gpu_plan_instance_visibility_accepted_and_checked():
    gpu = dict(
        GPU_PLAN,
        instances={"g": {"npus": [0, 1], "env": {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_IB_HCA": "=mlx5_0,=mlx5_1"}}},
    )
    text = wrapper.render_wrapper(view(gpu, "g"), ["vllm"])
    assert text.count("CUDA_VISIBLE_DEVICES") == 1 and "export CUDA_VISIBLE_DEVICES=0,1\n" in text
    with pytest.raises(NpuopsError, match="npus: 2 are not the devices of plan instance g"):
        view(gpu, "g", npus=[2])
    with pytest.raises(NpuopsError, match="env: CUDA_VISIBLE_DEVICES=2 contradicts"):
        wrapper.render_wrapper(view(gpu, "g"), ["vllm"], env={"CUDA_VISIBLE_DEVICES": "2"})


SNAPSHOT = os.path.join(SNAPSHOTS, "a2-910b3x8")


def test_real_plan_from_snapshot(tmp_path):
    """The plan npu_cpu_plan really produces (it carries the visibility var in the instance env)."""
    from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

    topo = topology.gather(hostio.SnapshotHostIO(SNAPSHOT))
    real = plan.make_plan(topo, instances=[{"name": "svc", "npus": [0, 2]}])
    v = wrapper.instance_view(real, "svc")
    text = wrapper.render_wrapper(v, ["vllm", "serve", "m"])
    assert "export ASCEND_RT_VISIBLE_DEVICES=0,2\n" in text
    assert text.count("ASCEND_RT_VISIBLE_DEVICES=") == 1
    # The real A2 layout: NPU0 on node 6 (144-167, shared with NPU1), NPU2 on node 4 (96-119,
    # shared with NPU3); strict gives each 12 CPUs of its node, and the instance's frontend
    # sits on the nodes no NPU calls home (5 and 7): the tree starts on frontend + main CPUs.
    frontend = cpulist.format(v["frontend"])
    assert v["frontend"] and not set(v["frontend"]) & set(v["pool"])
    start = cpulist.format(sorted(set(v["main"]) | set(v["frontend"])))
    assert "exec taskset -c %s vllm serve m" % start in text
    unit = units.service_unit(v, "/w")
    allowed = cpulist.format(sorted(set(v["pool"]) | set(v["frontend"])))
    assert "AllowedCPUs=%s" % allowed in unit.splitlines()
    assert set(cpulist.parse(frontend)) <= set(cpulist.parse(allowed))
    path = _write(tmp_path, text)
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0


@pytest.mark.parametrize("env", [{"A B": "1"}, {"1A": "x"}, {"A;rm": "x"}, {"A": "x\x00"}])
def test_bad_env_rejected(env):
    with pytest.raises(NpuopsError, match="env"):
        wrapper.render_wrapper(view(), ["vllm"], env=env)


@pytest.mark.parametrize("command", [[], "vllm serve", ["-x"], [""], ["vllm", 3], ["vllm", "a\x00"]])
def test_bad_command_rejected(command):
    with pytest.raises(NpuopsError, match="command"):
        wrapper.render_wrapper(view(), command)


# --additional-config merge -------------------------------------------------------------


def test_merge_equals_form_keeps_user_keys():
    argv, over = wrapper.merge_additional_config(
        ["vllm", "serve", "m", '--additional-config={"torchair_graph_config": {"enabled": true}}'],
        {"enable_cpu_binding": False},
    )
    assert over == []
    flag, value = argv[3].split("=", 1)
    assert flag == "--additional-config"
    assert json.loads(value) == {"torchair_graph_config": {"enabled": True}, "enable_cpu_binding": False}


def test_merge_separate_form_and_override():
    argv, over = wrapper.merge_additional_config(
        ["vllm", "--additional_config", '{"enable_cpu_binding": true, "x": 1}', "--port", "8000"],
        {"enable_cpu_binding": False},
    )
    assert over == ["enable_cpu_binding"]
    assert argv[1] == "--additional_config"
    assert json.loads(argv[2]) == {"enable_cpu_binding": False, "x": 1}
    assert argv[3:] == ["--port", "8000"]


def test_merge_absent_appends():
    argv, dummy = wrapper.merge_additional_config(["vllm", "serve"], {"enable_cpu_binding": False})
    assert argv == ["vllm", "serve", "--additional-config", '{"enable_cpu_binding":false}']


def test_merge_ignores_program_name_and_values_that_only_look_alike():
    argv, dummy = wrapper.merge_additional_config(["vllm", "--served-model-name", "--additional-config-ish"], {"k": 1})
    assert argv[-2:] == ["--additional-config", '{"k":1}']


@pytest.mark.parametrize(
    "command, needle",
    [
        (["vllm", "--additional-config", "{not json"], "not valid JSON"),
        (["vllm", "--additional-config=[1]"], "must be a JSON object"),
        (["vllm", "--additional-config"], "has no value"),
    ],
)
def test_merge_bad_json(command, needle):
    with pytest.raises(NpuopsError, match=needle):
        wrapper.render_wrapper(view(), command)


def test_host_binding_override_warns():
    _argv, warnings = wrapper.launch_argv(view(), ["vllm", '--additional-config={"enable_cpu_binding":true}'])
    assert warnings and "enable_cpu_binding" in warnings[0]


# syntax and shellcheck ------------------------------------------------------------------


def _write(tmp_path, text, name="w.sh"):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("binding", ["host", "vllm"])
def test_bash_n(tmp_path, binding):
    path = _write(tmp_path, wrapper.render_wrapper(view(), ["vllm"] + HOSTILE, env={"X": HOSTILE[2]}, binding=binding))
    proc = subprocess.run(
        ["bash", "-n", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout


@pytest.mark.skipif(
    shutil.which("shellcheck") is None, reason="shellcheck not installed (Debian package 'shellcheck'; make deps)"
)
@pytest.mark.parametrize("plan, name", [(A2_PLAN, "svc0"), (GPU_PLAN, "g")])
def test_shellcheck(tmp_path, plan, name):
    text = wrapper.render_wrapper(view(plan, name), ["vllm", "serve"] + HOSTILE, env={"Y": "a'b$(c)`d`"})
    path = _write(tmp_path, text)
    proc = subprocess.run(
        ["shellcheck", "-s", "bash", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout


# hostile arguments reach vLLM verbatim ---------------------------------------------------

STAND_IN_VLLM = """#!%s
import json, os, sys
with open(os.environ["VLLM_ARGV_OUT"], "wb") as out:
    out.write(b"\\0".join(os.fsencode(a) for a in sys.argv[1:]))
with open(os.environ["VLLM_ARGV_OUT"] + ".env", "w") as out:
    json.dump({k: v for k, v in os.environ.items()}, out)
"""

STAND_IN_TASKSET = """#!/bin/sh
# stand-in: record the CPU list, then run the command like taskset -c does
[ "$1" = "-c" ] || exit 97
printf '%s' "$2" > "$TASKSET_OUT"
shift 2
exec "$@"
"""


@pytest.fixture
def stand_ins(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _write(bindir, STAND_IN_VLLM % sys.executable, "vllm")
    _write(bindir, STAND_IN_TASKSET, "taskset")
    canary = tmp_path / "pwned"
    env = {
        "PATH": "%s:/usr/bin:/bin" % bindir,
        "VLLM_ARGV_OUT": str(tmp_path / "argv"),
        "TASKSET_OUT": str(tmp_path / "taskset"),
        "HOME": str(tmp_path),
    }
    return tmp_path, env, canary


def _run_wrapper(tmp_path, env, text):
    path = _write(tmp_path, text, "launch")
    proc = subprocess.run(
        [str(path)],
        env=env,
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout
    with open(env["VLLM_ARGV_OUT"], "rb") as handle:
        argv = handle.read().split(b"\0")
    with open(env["VLLM_ARGV_OUT"] + ".env") as handle:
        seen_env = json.load(handle)
    return argv, seen_env


def test_hostile_arguments_reach_vllm_verbatim(stand_ins):
    tmp_path, env, canary = stand_ins
    hostile = [h.replace("/tmp/npuops-pwned", str(canary)) for h in HOSTILE]
    (tmp_path / "decoy-glob-target").write_text("")
    text = wrapper.render_wrapper(
        view(), ["vllm", "serve"] + hostile, env={"EVIL": "$(touch %s)`touch %s`" % (canary, canary)}
    )
    argv, seen_env = _run_wrapper(tmp_path, env, text)
    expected = ["serve"] + hostile + ["--additional-config", '{"enable_cpu_binding":false}']
    assert argv == [os.fsencode(a) for a in expected]
    assert not canary.exists()
    assert seen_env["EVIL"] == "$(touch %s)`touch %s`" % (canary, canary)
    assert seen_env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"
    assert (tmp_path / "taskset").read_text() == "2-21,146-165"


def test_hostile_additional_config_values_survive_merge(stand_ins):
    tmp_path, env, canary = stand_ins
    user = {"note": '$(touch %s) `x` it\'s "q"\n*' % canary, "enable_cpu_binding": True}
    text = wrapper.render_wrapper(view(), ["vllm", "--additional-config", json.dumps(user)])
    argv, dummy = _run_wrapper(tmp_path, env, text)
    assert argv[0] == b"--additional-config"
    assert json.loads(argv[1].decode()) == dict(user, enable_cpu_binding=False)
    assert not canary.exists()


def test_vllm_binding_runs_without_taskset(stand_ins):
    tmp_path, env, _canary = stand_ins
    text = wrapper.render_wrapper(view(), ["vllm", "serve", "$(id)"], binding="vllm")
    argv, dummy = _run_wrapper(tmp_path, env, text)
    assert argv == [b"serve", b"$(id)"]
    assert not (tmp_path / "taskset").exists()


# systemd unit and plan JSON -------------------------------------------------------------


@pytest.mark.parametrize("sub", ["", "opt+x,y:z=w@v~u-t_s.r"])
def test_systemd_analyze_verify_accepts_units_under_any_allowed_dest(tmp_path, sub):
    """Every character check_dir lets into dest ('$', '"' and '\\' made units that
    verify rejects; they are refused now) gives units systemd-analyze verify accepts."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed")
    base = tmp_path / sub if sub else tmp_path
    base.mkdir(exist_ok=True)
    wrapper.check_dir(str(base), "dest")
    # systemd-analyze verify wants the executables to exist.
    for name in ("svc0-launch", "svc0-bind"):
        _write(base, "#!/bin/sh\n", name)
    (tmp_path / "vllm-svc0.service").write_text(units.service_unit(view(), str(base / "svc0-launch")))
    (tmp_path / "vllm-svc0-bind.service").write_text(
        units.bind_unit(view(), str(base / "svc0-bind"), str(base / "p.json"))
    )
    proc = subprocess.run(
        [analyze, "verify", str(tmp_path / "vllm-svc0.service"), str(tmp_path / "vllm-svc0-bind.service")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        check=False,
    )
    bad = [l for l in proc.stdout.splitlines() if "vllm-svc0" in l and "network-online" not in l]
    assert not bad, proc.stdout


def test_plan_json_carries_instance_block():
    """Schema 2 (docs/plan-json.md): the instance's devices only, each with the fields the
    binder reads, and each device's NUMA node in the instance block."""
    doc = json.loads(wrapper.render_plan_json(A2_PLAN, view(), "host"))
    assert doc["npus"] == {
        "0": {"main": "146-165", "acl": "166", "release": "167", "numa_nodes": [3]},
        "1": {"main": "2-21", "acl": "22", "release": "23", "numa_nodes": [0]},
    }
    assert sorted(doc) == ["npuops_instance", "npus", "numa_nodes"]
    assert doc["npuops_instance"] == {
        "schema": 2,
        "name": "svc0",
        "vendor": "ascend",
        "devices": [0, 1],
        "binding": "host",
        "device_nodes": {"0": 3, "1": 0},
    }
    with_frontend = json.loads(wrapper.render_plan_json(A2_PLAN, dict(view(), frontend=[120, 121])))
    assert with_frontend["npuops_instance"]["frontend"] == "120-121"
    # deterministic
    assert wrapper.render_plan_json(A2_PLAN, view()) == wrapper.render_plan_json(A2_PLAN, view())


def test_wrapper_is_executable_text_without_trailing_junk():
    text = wrapper.render_wrapper(view(), ["vllm"])
    assert text.endswith("\n") and not text.endswith("\n\n")


# the whole tree, GPU launch settings, UX --------------------------------------------------


def test_a_command_given_as_one_string_is_refused():
    with pytest.raises(NpuopsError, match="list of arguments"):
        wrapper.check_command(["vllm serve /models/m --port 8000"])
    assert wrapper.check_command(["vllm"]) == ["vllm"]
    assert wrapper.check_command(["/opt/my vllm/bin/vllm", "serve"])[0] == "/opt/my vllm/bin/vllm"


GPU_PLAN_FRONTEND = {
    "policy": "strict",
    "mode": "gpu_numa",
    "hostname": "dgx",
    "gpus": {
        "0": {"pool": "0-11", "numa_node": 3, "nic": "mlx5_0", "link": "PXB"},
        "1": {"pool": "12-23", "numa_node": 3, "nic": "mlx5_1", "link": "PXB"},
        "2": {"pool": "48-59", "numa_node": 1, "nic": "mlx5_2", "link": "PXB"},
    },
    "instances": {"svc": {"npus": [0, 1], "frontend": "24-27"}},
    "env": {"NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_2"},
}


def test_gpu_wrapper_gets_pci_order_ucx_nics_and_the_frontend():
    view = wrapper.instance_view(GPU_PLAN_FRONTEND, "svc")
    text = wrapper.render_wrapper(view, ["vllm", "serve", "/m"])
    assert "export CUDA_VISIBLE_DEVICES=0,1\n" in text
    assert "export CUDA_DEVICE_ORDER='PCI_BUS_ID'\n" in text
    assert "export UCX_NET_DEVICES='mlx5_0:1,mlx5_1:1'\n" in text
    assert "export NCCL_IB_HCA='=mlx5_0,mlx5_1,mlx5_2'\n" in text
    assert "exec taskset -c 0-27 vllm serve /m\n" in text  # pools 0-23 + frontend 24-27
    single = wrapper.render_wrapper(wrapper.instance_view(GPU_PLAN_FRONTEND, "one", [2]), ["vllm"])
    assert "export UCX_NET_DEVICES='mlx5_2:1'\n" in single
    mine = wrapper.render_wrapper(view, ["vllm"], env={"UCX_NET_DEVICES": "mlx5_9:1"})
    assert "export UCX_NET_DEVICES='mlx5_9:1'\n" in mine  # the user's env wins


def test_gpu_vllm_binding_passes_the_plan_to_vllms_numa_bind():
    view = wrapper.instance_view(GPU_PLAN_FRONTEND, "svc")
    argv, warnings = wrapper.launch_argv(
        view, ["vllm", "serve", "/m", "-tp", "2"], "vllm", {"version": "0.32.0", "source": "test"}
    )
    assert (
        argv
        == [
            "vllm",
            "serve",
            "/m",
            "-tp",
            "2",
            "--numa-bind",
            "--numa-bind-nodes",
            "3",
            "3",
            "--numa-bind-cpus",
            "0-11",
            "12-23",
        ]
        and warnings == []
    )
    argv, warnings = wrapper.launch_argv(view, ["vllm", "serve", "--numa-bind"], "vllm")
    assert argv == ["vllm", "serve", "--numa-bind"] and "already" not in warnings[0] and warnings
    off = dict(GPU_PLAN_FRONTEND, gpus=dict((k, dict(v, numa_node=None)) for k, v in GPU_PLAN_FRONTEND["gpus"].items()))
    argv, dummy = wrapper.launch_argv(wrapper.instance_view(off, "svc"), ["vllm"], "vllm")
    assert argv == ["vllm"]  # numa=off host: no node to bind to
    argv, dummy = wrapper.launch_argv(view, ["vllm"], "host")
    assert "--numa-bind" not in argv


@pytest.mark.parametrize("vendor_host, var", [("a2", "ASCEND_RT_VISIBLE_DEVICES"), ("gpu", "CUDA_VISIBLE_DEVICES")])
def test_the_visibility_variable_is_written_once_from_plan_to_unit(vendor_host, var):
    """npu_cpu_plan -> wrapper, plan JSON, service unit: the variable is written in one place,
    the wrapper's export (the plan and the plan JSON no longer carry it)."""
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
    from npuops_testing import cpu_hosts
    from npuops_testing.report_fleet import gpu_facts

    topo = cpu_hosts.a2() if vendor_host == "a2" else gpu_facts("g1")
    real = plan_mod.make_plan(topo, instances=[{"name": "svc", "npus": [0, 1]}])
    assert var not in json.dumps(real)
    v = wrapper.instance_view(real, "svc")
    texts = [
        wrapper.render_wrapper(v, ["vllm", "serve", "m"]),
        wrapper.render_plan_json(real, v),
        units.service_unit(v, "/usr/local/lib/npuops/svc-launch"),
    ]
    assert sum(text.count(var) for text in texts) == 1
    assert "export %s=0,1\n" % var in texts[0]
