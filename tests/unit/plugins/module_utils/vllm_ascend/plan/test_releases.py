# -*- coding: utf-8 -*-
"""Each vllm-ascend release group's rule, pinned (docs/policies.md, "vllm-ascend releases").

Expected pools marked "released code" were produced by running that release's
``vllm_ascend/cpu_binding.py`` on the same host (mocked command output) outside the repository.
"""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import allocator as va
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import releases as rel
from npuops_testing import cpu_hosts


def plan(topo, version, **kw):
    return plan_mod.make_plan(topo, "vllm_ascend", vllm_ascend_version=version, **kw)


def ranks(result, *keys):
    keys = keys or ("rank", "npu", "outcome")
    return [tuple(r[k] for k in keys) for r in result["vllm_ascend"]["ranks"]]


# --- versions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lower, higher",
    [
        ("0.23.0rc1", "0.23.0"),
        ("0.23.0", "0.23.0.post1"),
        ("0.23.0.post1", "0.24.0rc1"),
        ("0.26.1.dev3+gabc", "0.26.1"),
        ("0.9.1", "0.18.0rc1"),
        ("0.30.0rc1", "0.30.0rc2"),
        ("1.0.dev1", "1.0a1"),
        ("0.26.0rc1", "0.26.0"),
    ],
)
def test_version_order(lower, higher):
    assert rel.parse_version(lower) < rel.parse_version(higher)


@pytest.mark.parametrize("text", ["", "latest", "0.23.x", "0.23.0-rc1 ", 23, "0..1"])
def test_malformed_version(text):
    with pytest.raises(PlanError, match="is not a version"):
        rel.select(text)


@pytest.mark.parametrize(
    "version, group",
    [
        ("0.18.0rc1", "0.18.x"),
        ("0.18.0", "0.18.x"),
        ("0.19.1rc1", "0.19.1rc1-0.21.0rc1"),
        ("0.21.0rc1", "0.19.1rc1-0.21.0rc1"),
        ("0.22.1rc1", "0.22.1rc1"),
        ("0.23.0.post1", "0.23.0rc1-0.25.1rc1"),
        ("v0.25.1RC1", "0.23.0rc1-0.25.1rc1"),
        ("0.26.0rc1", "0.26.0rc1"),
        ("0.29.0rc1", "0.27.1rc1+"),
        ("0.30.0rc2", "0.30.0rc1+"),
    ],
)
def test_known_release_groups(version, group):
    found = rel.select(version)
    assert found["group"] == group and found["warnings"] == []


def test_default_newer_build_older_unknown():
    default = rel.select(None)
    assert default["version"] == rel.NEWEST and default["source"] == "default"
    assert "newest release known" in default["warnings"][0]
    newer = rel.select("0.31.0")
    assert newer["group"] == "0.30.0rc1+" and "newer than the newest" in newer["warnings"][0]
    build = rel.select("0.26.1.dev12+gf2f74a16c")
    assert build["group"] == "0.26.0rc1" and "is a build" in build["warnings"][0]
    with pytest.raises(PlanError, match="older than 0.18.0rc1"):
        rel.select("0.13.0")
    with pytest.raises(PlanError, match="not a release this collection knows"):
        rel.select("0.24.5")


def test_version_from_facts_then_option():
    topo = cpu_hosts.a3()
    topo["vllm_ascend"] = {"version": "0.26.0rc1", "source": "/x/METADATA"}
    block = plan_mod.make_plan(topo, "vllm_ascend")["vllm_ascend"]
    assert (block["version"], block["source"], block["warnings"]) == ("0.26.0rc1", "facts: /x/METADATA", [])
    assert plan(topo, "0.23.0.post1")["vllm_ascend"]["source"] == "option"


# --- rule: hidden NPUs (0.19.1rc1, PR #8792) ----------------------------------------------


def test_hidden_npus_from_019():
    # two single-NPU services in one cpuset 144-191 (vllm-project/vllm-ascend#8600); released code: 0.18.0
    # gives NPU0 144-167 (24 CPUs), 0.19.1rc1 144-155
    insts = [{"name": "svc0", "npus": [0]}, {"name": "svc2", "npus": [2]}]
    old = plan(cpu_hosts.a2(), "0.18.0", instances=insts, allowed_cpus="144-191")
    new = plan(cpu_hosts.a2(), "0.19.1rc1", instances=insts, allowed_cpus="144-191")
    assert old["npus"]["0"]["pool"] == old["npus"]["2"]["pool"] == "144-167"
    assert (new["npus"]["0"]["pool"], new["npus"]["2"]["pool"]) == ("144-155", "156-167")


# --- rule: texts (0.21 wording, 0.22 slice error) -----------------------------------------


def test_release_texts():
    topo = cpu_hosts.a2()
    for npu in topo["npus"]:
        npu["affinity"] = None
    topo["errors"] = [{"source": "npu-smi info -t topo", "msg": "timed out"}]
    assert rel.OLD_TEXTS["fallback"] in plan(topo, "0.20.2rc1", npus=[1])["warnings"]
    assert va.TOPO_FALLBACK in plan(topo, "0.21.0rc1", npus=[1])["warnings"]
    small = cpu_hosts.a3(allowed="0-40")
    small["errors"] = [{"source": "npu-smi info -t topo", "msg": "missing"}]
    with pytest.raises(PlanError, match="IRQ/ACL/REL reservations"):
        plan(small, "0.21.0rc1")
    with pytest.raises(PlanError, match="CPU role reservations"):
        plan(cpu_hosts.a3(allowed="0-40"), "0.22.1rc1")
    assert (
        plan(cpu_hosts.a2(arch="mips64"), "0.18.0")["reason"]
        == "Unknown CPU architecture 'mips64', CPU binding will be disabled."
    )


# --- rule: positional parsers (up to 0.21.0rc1) -------------------------------------------


def test_positional_topo_parser_crashes_without_affinity_column():
    topo = cpu_hosts.a2()
    for npu in topo["npus"]:
        npu["affinity"] = None
    failed = plan(topo, "0.21.0rc1", npus=[0, 1])
    assert failed["skipped"] is True and failed["npus"] == {}
    assert failed["reason"].startswith(
        "vllm-ascend 0.21.0rc1 will fail to bind here, because DeviceInfo.parse_topo_affinity"
    )
    assert ranks(failed) == [(0, None, "error"), (1, None, "error")]
    header = plan(topo, "0.22.1rc1", npus=[0, 1])
    assert header["mode"] == "global_slice" and ranks(header) == [(0, 0, "bound"), (1, 1, "bound")]


# --- rule: the Ascend 950 builder (generic / global / cluster) ----------------------------


def test_ascend950_builder_per_release():
    # released code on this host: 0.21 IndexError; 0.22.1rc1 NPU2 96-143, main 96-141 (no
    # IRQ CPUs); 0.23.0 NPU2 96-111, NPU3 112-127 (clusters of 16)
    generic = plan(cpu_hosts.a5(), "0.21.0rc1", npus=[2, 3])
    assert "IndexError: list index out of range" in generic["reason"]
    sliced = plan(cpu_hosts.a5(), "0.22.1rc1", npus=[2, 3])
    assert sliced["mode"] == "global_slice"
    assert sliced["npus"]["2"]["pool"] == "96-143" and sliced["npus"]["2"]["main"] == "96-141"
    assert sliced["npus"]["2"]["irq"] == "" and sliced["npus"]["3"]["pool"] == "144-191"
    assert sliced["log"][-1].startswith("NPU3: main=[144 145")
    clusters = plan(cpu_hosts.a5(), "0.23.0", npus=[2, 3])
    assert clusters["mode"] == "ascend950"
    assert (clusters["npus"]["2"]["pool"], clusters["npus"]["3"]["pool"]) == ("96-111", "112-127")


# --- rule: rank -> NPU (0.26.0rc1, PR #15517) ---------------------------------------------

UNSORTED = [9, 8, 11, 10, 13, 12, 15, 14]


def test_rank_binds_running_until_025_visible_from_026():
    insts = [{"name": "svc1", "npus": UNSORTED}]
    old = plan(cpu_hosts.a3(), "0.23.0.post1", instances=insts)
    assert ranks(old, "rank", "npu", "own_npu") == [(r, 8 + r, UNSORTED[r]) for r in range(8)]
    new = plan(cpu_hosts.a3(), "0.26.0rc1", instances=insts)
    assert ranks(new, "rank", "npu", "own_npu") == [(r, UNSORTED[r], UNSORTED[r]) for r in range(8)]
    # the pools are the release's: global slices of 40 by logic id, whatever the rank
    assert new["npus"]["9"]["pool"] == old["npus"]["9"]["pool"] == "360-399"
    assert new["log"][-1].startswith("NPU14: main=[562 563")
    assert old["log"][-1].startswith("NPU15: main=[602 603")


def test_026_skips_an_npu_without_pool_025_fails_the_rank():
    # A2: instance on NPUs 0-3, NPU3 has no process yet (NPUs 4-7: another service)
    topo = cpu_hosts.a2(busy=(0, 1, 2, 4, 5, 6, 7))
    insts = [{"name": "svc0", "npus": [0, 1, 2, 3]}]
    old = plan(topo, "0.25.1rc1", instances=insts)
    assert ranks(old)[3] == (3, None, "error")
    assert (
        old["vllm_ascend"]["ranks"][3]["reason"]
        == "Bind cpus failed in rank3: list index out of range Skip binding cpu."
    )
    new = plan(topo, "0.26.0rc1", instances=insts)
    assert ranks(new) == [(0, 0, "bound"), (1, 1, "bound"), (2, 2, "bound"), (3, None, "skipped")]
    assert new["vllm_ascend"]["ranks"][3]["reason"] == "Bind cpus failed in rank3: 3 Skip binding cpu."
    assert "3" not in new["npus"] and new["log"][-1] == "Bind cpus failed in rank3: 3 Skip binding cpu."


def test_026_without_visible_devices_binds_local_rank():
    # released code: 0.26.0rc1 on the A5 host, workers of NPUs 2 and 3 without
    # ASCEND_RT_VISIBLE_DEVICES: rank 0 looks up NPU0 and fails with KeyError 0
    topo = cpu_hosts.a5()
    topo["visible_devices"]["ASCEND_RT_VISIBLE_DEVICES"] = "2,3"
    assert ranks(plan(topo, "0.26.0rc1", npus=[2, 3])) == [(0, 2, "bound"), (1, 3, "bound")]
    result = plan(cpu_hosts.a5(), "0.26.0rc1", instances=[{"name": "x", "npus": [2, 3]}])
    assert ranks(result) == [(0, 2, "bound"), (1, 3, "bound")]


# --- rule: hardware_profile (0.27.1rc1) ---------------------------------------------------


def test_027_unknown_device_type_fails_at_import():
    topo = cpu_hosts.a2()
    failed = plan(topo, "0.27.1rc1", device_type="910A", npus=[0])
    assert failed["skipped"] is True
    assert "No hardware profile is registered for device type: 910A." in failed["reason"]
    assert ranks(failed) == [(0, None, "error")]
    assert plan(topo, "0.26.0rc1", device_type="910A", npus=[0])["mode"] == "topo_affinity"
    # a known type binds as before
    assert plan(topo, "0.27.1rc1", npus=[0])["npus"] == plan(topo, "0.26.0rc1", npus=[0])["npus"]


# --- rule: memory migration ---------------------------------------------------------------


@pytest.mark.parametrize(
    "version, migration",
    [
        ("0.18.0", "thread"),
        ("0.19.1rc1", "process"),
        ("0.29.0rc1", "process"),
        ("0.30.0rc1", "process_or_off"),
    ],
)
def test_migration(version, migration):
    assert plan(cpu_hosts.a3(), version)["vllm_ascend"]["migration"] == migration


# --- host situations where every release fails -------------------------------------------


def test_status_without_cpus_allowed_list_is_an_error_prediction():
    topo = cpu_hosts.a3()
    topo["errors"] = [{"source": "/proc/self/status", "msg": "no Cpus_allowed_list line"}]
    result = plan(topo, "0.23.0")
    assert result["skipped"] and "Can not found specific 'Cpus_allowed_list'" in result["reason"]
    assert set(r["outcome"] for r in result["vllm_ascend"]["ranks"]) == {"error"}


def test_lscpu_without_numa_ids_is_an_error_prediction():
    topo = cpu_hosts.a3()
    topo["errors"] = [{"source": "lscpu -e=CPU,NODE", "msg": "line 2: expected 'CPU NODE' integers, got '0 -'"}]
    result = plan(topo, "0.30.0rc2")
    assert "CpuAlloc.build_cpu_node_map" in result["reason"] and result["npus"] == {}


def test_unknown_version_in_the_facts_names_its_source():
    topo = cpu_hosts.a3()
    topo["vllm_ascend"] = {"version": "0.24.5", "source": "/v/METADATA"}
    with pytest.raises(PlanError, match=r"0.24.5 is not a release .* read from /v/METADATA"):
        plan_mod.make_plan(topo, "vllm_ascend")
    assert plan(topo, "0.24.0rc1")["vllm_ascend"]["version"] == "0.24.0rc1"
