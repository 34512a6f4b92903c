# -*- coding: utf-8 -*-
"""vllm-ascend's allocator reproduced: upstream tests (research note section 6) and defects (section 7).

Upstream numbers are given as ``# upstream #N``. Cases for the command runner, the text parsers
(npu-smi, lscpu, ps, /proc/self/status) and the binding effects (taskset, migratepages, IRQ
writes) belong to other files; see docs/policies.md for the list.
"""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan_mod
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import allocator as va
from npuops_testing import cpu_hosts


def r(a, b):
    return list(range(a, b + 1))


def identity_extend(cpus, *_args):
    return cpus


def node_map(nodes):
    return va.build_cpu_node_map(dict((n, list(c)) for n, c in nodes.items()))


# upstream #22, #53
@pytest.mark.parametrize(
    "device_type, mode",
    [
        ("A2", "topo_affinity"),
        ("A3", "global_slice"),
        ("A5", "topo_affinity"),
        ("310P", "topo_affinity"),
        ("910A", "topo_affinity"),
        ("unknown", "topo_affinity"),
        (None, "topo_affinity"),
    ],
)
def test_binding_mode(device_type, mode):
    assert va.binding_mode(device_type) == mode


# upstream #81
@pytest.mark.parametrize(
    "arch, is_arm, warned",
    [
        ("x86_64", False, False),
        ("aarch64", True, False),
        ("armv8", True, False),
        ("mips64", False, True),
        ("AMD64", False, False),
        ("arm64", True, False),
        ("i686", False, False),
    ],
)
def test_arm_check(arch, is_arm, warned):
    ok, warning = va.arm_check(arch)
    assert ok is is_arm
    assert (warning == va.UNKNOWN_ARCH % arch.lower()) is warned


# upstream #21
@pytest.mark.parametrize(
    "pool, npus, expected",
    [
        ([10, 11, 12, 13], [0, 1], {0: [10, 11], 1: [12, 13]}),
        (r(0, 13), [0, 1, 2], {0: r(0, 3), 1: r(4, 7), 2: r(8, 13)}),
        ([13, 12, 11, 10], [0, 1], {0: [10, 11], 1: [12, 13]}),
    ],
)
def test_average_distribute_last_takes_remainder(pool, npus, expected):
    assert va.average_distribute({npus[0]: pool}, npus) == expected


# upstream #25, #45
@pytest.mark.parametrize(
    "cpus, allowed, expected",
    [
        ([], r(0, 3), []),
        ([0, 1], r(0, 3), [0, 1, 2, 3]),
        ([0, 1], [0, 1, 3], [0, 1, 3]),
        ([1, 0], r(0, 3), [0, 1, 2, 3]),
    ],
)
def test_extend_numa(cpus, allowed, expected):
    cpu_node, numa_to_cpu = node_map({0: [0, 1], 1: [2, 3]})
    assert va.extend_numa(cpus, cpu_node, numa_to_cpu, allowed) == expected


def test_extend_numa_multi_node_unchanged_and_unsorted():  # upstream #45
    cpu_node, numa_to_cpu = node_map({0: [0, 1], 1: [2, 3]})
    assert va.extend_numa([2, 3, 0], cpu_node, numa_to_cpu, r(0, 3)) == [2, 3, 0]


def test_extend_numa_wraps_last_node_to_node0():
    cpu_node, numa_to_cpu = node_map({0: [0, 1], 1: [2, 3]})
    assert va.extend_numa([2], cpu_node, numa_to_cpu, r(0, 3)) == [0, 1, 2]


# upstream #26
def test_build_cpu_node_map():
    with pytest.raises(PlanError, match="no NUMA node available"):
        va.build_cpu_node_map({})
    cpu_node, numa_to_cpu = va.build_cpu_node_map({0: [0, 2], 1: [1, 3]})
    assert dict(numa_to_cpu) == {0: [0, 2], 1: [1, 3]}
    assert dict((cpu, cpu_node[cpu]) for cpu in range(4)) == {0: 0, 1: 1, 2: 0, 3: 1}
    assert 4 not in cpu_node


# upstream #27-#31, #33, #35
@pytest.mark.parametrize(
    "case, running, ncpus, total, affinity, minimum, expected",
    [
        ("uses total_logic_npus", [1], 20, 2, {}, 5, {1: r(10, 19)}),
        ("same cpuset NPU0", [0], 20, 4, {}, 5, {0: r(0, 4)}),
        ("same cpuset NPU3", [3], 20, 4, {}, 5, {3: r(15, 19)}),
        ("remainder to lowest", [0, 1, 2], 17, 3, {}, 5, {0: r(0, 5), 1: r(6, 11), 2: r(12, 16)}),
        ("total from affinity", [0, 1], 12, 0, {0: [0], 1: [1]}, 5, {0: r(0, 5), 1: r(6, 11)}),
        ("total from running", [0, 1], 12, 0, {}, 5, {0: r(0, 5), 1: r(6, 11)}),
        ("A5 without IRQ", [0, 1], 6, 2, {}, 3, {0: [0, 1, 2], 1: [3, 4, 5]}),
        ("empty running", [], 20, 2, {}, 5, {}),
        ("empty allowed", [0], 0, 2, {}, 5, {}),
        ("640 / 16", [0, 15], 640, 16, {}, 5, {0: r(0, 39), 15: r(600, 639)}),
    ],
)
def test_global_slice(case, running, ncpus, total, affinity, minimum, expected):
    assert va.global_slice(running, r(0, ncpus - 1), total, affinity, minimum) == expected


def test_global_slice_sorts_and_dedupes_allowed():
    assert va.global_slice([0], [9, 8, 7, 6, 5, 5, 4, 3, 2, 1, 0], 2, {}) == {0: r(0, 4)}


# upstream #32, #34
@pytest.mark.parametrize(
    "running, ncpus, total, message",
    [
        (
            [0, 1],
            8,
            2,
            "Insufficient CPUs for binding with CPU role reservations: total_allowed=8, "
            "total_npus=2, min_per_npu=4 (<5). Need at least 10 CPUs in cpuset.",
        ),
        ([2], 20, 2, "Invalid NPU id 2, total_npus=2."),
        (
            [0],
            14,
            3,
            "Insufficient CPUs for binding with CPU role reservations: total_allowed=14, "
            "total_npus=3, min_per_npu=4 (<5). Need at least 15 CPUs in cpuset.",
        ),
    ],
)
def test_global_slice_errors(running, ncpus, total, message):
    with pytest.raises(PlanError) as err:
        va.global_slice(running, r(0, ncpus - 1), total, {})
    assert str(err.value) == message


def test_global_slice_debug_line():
    log = []
    va.global_slice([1], r(0, 19), 2, {}, 5, log, 1, "1")
    assert log == [
        "[cpu_global_slice] rank:1 ASCEND_RT_VISIBLE_DEVICES=1 running_npu_list:[1] "
        "total_npus:2 allowed_cpus:20 base:10 extra:0 allowed_cpus_head:%s "
        "allowed_cpus_tail:%s" % (r(0, 15), r(4, 19))
    ]


# upstream #36, #37
def test_allocate_roles():
    roles = va.allocate({0: r(0, 4)}, "A2")
    assert roles[0] == {"irq": [0, 1], "main": [2], "acl": [3], "release": [4]}
    with pytest.raises(PlanError) as err:
        va.allocate({0: [0, 1]}, "A2")
    assert str(err.value) == "NPU 0: The number of CPUs is insufficient. Each NPU requires at least 5 CPUs."


@pytest.mark.parametrize("pool", [r(0, 4), [0, 1]])
def test_allocate_950_whole_pool_is_main(pool):
    assert va.allocate({0: pool}, "A5")[0] == {"irq": [], "main": pool, "acl": [], "release": []}


def test_allocate_positional_on_unsorted_pool():
    pool = r(48, 59) + r(0, 11)
    roles = va.allocate({1: pool}, "A2")[1]
    assert roles["irq"] == [48, 49] and roles["acl"] == [10] and roles["release"] == [11]


# upstream #48, #49
@pytest.mark.parametrize(
    "nodes, allowed, expected",
    [
        ({0: r(0, 3), 1: r(4, 7)}, r(0, 5), [1, 2, 3]),
        ({0: r(0, 3)}, [0], []),
        ({1: r(0, 3)}, r(0, 3), []),
    ],
)
def test_uvb_pool(nodes, allowed, expected):
    dummy, numa_to_cpu = node_map(nodes)
    assert va.uvb_pool(numa_to_cpu, allowed) == expected


# upstream #54
def test_topo_conflict_error():
    cpu_node, numa_to_cpu = node_map({0: r(0, 7), 1: r(8, 15)})
    with pytest.raises(PlanError) as err:
        va.topo_affinity([0], [0], {0: [0, 1]}, [8, 9], cpu_node, numa_to_cpu)
    assert str(err.value) == "NPU 0: CPUs available in 'Cpus_allowed_list' conflict with NUMA affinity."


# upstream #55-#58 (the extension mocked, as upstream does)
@pytest.mark.parametrize(
    "case, running, all_npus, affinity, allowed, expected",
    [
        (
            "duplicate groups",
            [0, 1, 2],
            [0, 1, 2],
            {0: [0, 1], 1: [2, 3], 2: [2, 3]},
            r(0, 3),
            {0: [0, 1], 1: [2], 2: [3]},
        ),
        ("skip non-running without overlap", [0], [0, 1], {0: [192, 193], 1: [128, 129]}, [192, 193], {0: [192, 193]}),
        (
            "exclude non-running from final",
            [0],
            [0, 1],
            {0: r(192, 201), 1: r(192, 201)},
            r(192, 201),
            {0: r(192, 196)},
        ),
    ],
)
def test_topo_affinity_mocked_extension(case, running, all_npus, affinity, allowed, expected):
    cpu_node, numa_to_cpu = node_map({0: r(0, 255)})
    got = va.topo_affinity(running, all_npus, affinity, allowed, cpu_node, numa_to_cpu, extend=identity_extend)
    assert got == expected


def test_topo_exclude_non_running_main():  # upstream #57: main [194]
    cpu_node, numa_to_cpu = node_map({0: r(0, 255)})
    pools = va.topo_affinity(
        [0], [0, 1], {0: r(192, 201), 1: r(192, 201)}, r(192, 201), cpu_node, numa_to_cpu, extend=identity_extend
    )
    assert va.allocate(pools, "A2")[0]["main"] == [194]


@pytest.mark.parametrize("running, expected", [([0], {0: r(144, 167)}), ([2], {2: r(168, 191)})])
def test_topo_hidden_npus_with_mocked_extension(running, expected):  # upstream #58
    affinity = dict((k, cpulist.parse(v)) for k, v in cpu_hosts.A2_AFFINITY.items())
    cpu_node, numa_to_cpu = node_map({0: r(0, 47), 1: r(48, 95), 2: r(96, 143), 3: r(144, 191)})
    got = va.topo_affinity(
        running, list(range(8)), affinity, r(144, 191), cpu_node, numa_to_cpu, extend=lambda *_a: r(144, 191)
    )
    assert got == expected


# upstream #59
A5_EXPECTED = {
    0: r(288, 303),
    1: r(304, 319),
    2: r(96, 111),
    3: r(112, 127),
    4: r(128, 143),
    5: r(144, 159),
    6: r(320, 335),
    7: r(336, 351),
}


@pytest.mark.parametrize("running", [[0, 1, 2, 3], [4, 5, 6, 7]])
def test_ascend950_hidden_global_clusters(running):
    nodes = dict((n, r(96 * n, 96 * n + 95)) for n in range(4))
    cpu_node, numa_to_cpu = node_map(nodes)
    node_of = {0: 3, 1: 3, 2: 1, 3: 1, 4: 1, 5: 1, 6: 3, 7: 3}
    affinity = dict((npu, nodes[n]) for npu, n in node_of.items())
    pools, warning = va.ascend950(running, list(range(8)), affinity, r(0, 383), cpu_node, numa_to_cpu, 2, [])
    assert warning is None
    assert pools == dict((n, A5_EXPECTED[n]) for n in running)


# upstream #60
@pytest.mark.parametrize(
    "case, affinity, tpc, nodes, running, warning",
    [
        ("no affinity", {}, 1, {0: r(0, 15)}, [0], va.A950_NO_AFFINITY),
        ("no cluster size", {0: [0]}, None, {0: r(0, 15)}, [0], va.A950_BAD_TPC % (None,)),
        ("two-node affinity", {0: [0, 8]}, 1, {0: r(0, 7), 1: r(8, 15)}, [0], va.A950_INVALID_AFFINITY % (0, [0, 8])),
        (
            "3 NPUs vs 2 clusters",
            {0: [0], 1: [1], 2: [2]},
            1,
            {0: r(0, 15)},
            [0, 1, 2],
            va.A950_INSUFFICIENT % (0, 2, [0, 1, 2]),
        ),
    ],
)
def test_ascend950_skips(case, affinity, tpc, nodes, running, warning):
    cpu_node, numa_to_cpu = node_map(nodes)
    pools, got = va.ascend950(
        running, sorted(set(running) | set(affinity)), affinity, r(0, 15), cpu_node, numa_to_cpu, tpc, []
    )
    assert pools is None and got == warning


# upstream #61-#63
@pytest.mark.parametrize(
    "npu, roles, device_type, line",
    [
        (0, {"main": [2], "acl": [3], "release": []}, "A2", "NPU0: main=[2]  acl=[3]  release=[]"),
        (1, {"main": [2, 3], "acl": [], "release": []}, "A5", "Ascend 950 NPU1: worker=[2 3]"),
        (0, {"main": [2, 3], "acl": [4], "release": [5]}, "A2", "NPU0: main=[2 3]  acl=[4]  release=[[5]]"),
    ],
)
def test_plan_line(npu, roles, device_type, line):
    assert va.plan_line(npu, roles, device_type) == line


# upstream #6 (the visible-devices filter on the running set), #5 (empty -> raise)
@pytest.mark.parametrize(
    "active, env, expected",
    [
        ([0, 1], "1,5", [1]),
        ([1, 0], None, [0, 1]),
        ([0, 1], "", [0, 1]),
    ],
)
def test_running_npus(active, env, expected):
    assert va.running_npus(active, env) == expected


@pytest.mark.parametrize(
    "active, env, message",
    [
        ([], None, "Can not get running npu info."),
        ([0], "3", "Can not get running npu info."),
        ([0], "0,", "ASCEND_RT_VISIBLE_DEVICES='0,' is not a comma-separated list"),
    ],
)
def test_running_npus_errors(active, env, message):
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace("[", r"\[")):
        va.running_npus(active, env)


# upstream #17, #18 through make_plan (the npu_map is the source of all logic ids)
def test_all_logic_npus_from_npu_map():
    topo = cpu_hosts.a2()
    topo["npu_map"] = {"0": {"0": "0"}, "1": {"0": ""}, "2": {"0": "abc"}, "3": {"0": "2"}}
    assert plan_mod._all_logic_npus(topo, [0, 1, 2, 3]) == [0, 2]
    topo["npu_map"] = {}
    assert plan_mod._all_logic_npus(topo, [0, 1]) == [0, 1]


# ---- end to end through make_plan ----------------------------------------------------------


def pools_of(plan):
    return dict((int(k), v["pool_order"]) for k, v in plan["npus"].items())


# research note section 7, defect 1: the design document's A2 host with a full cpuset
A2_FULL = {
    0: "0-35",
    1: "0-23,48-59",
    2: "36-47,144-167",
    3: "60-95",
    4: "96-119,144-155",
    5: "48-71,96-107",
    6: "156-191",
    7: "108-143",
}


def test_defect_a2_full_host_overlap():
    plan = plan_mod.make_plan(cpu_hosts.a2(), "vllm_ascend")
    assert plan["mode"] == "topo_affinity"
    assert pools_of(plan) == A2_FULL
    npu0, npu1 = (set(cpulist.parse(plan["npus"][k]["pool"])) for k in ("0", "1"))
    assert npu0 & npu1 == set(range(24))
    # NPU0's affinity is node 3, its pool (IRQ, migration target) is on node 0
    assert plan["npus"]["0"]["numa_nodes"] == [0]


def test_defect_hidden_npu_real_result():  # section 7, defect 2
    got = {}
    for npu in (0, 2):
        plan = plan_mod.make_plan(cpu_hosts.a2("144-191"), "vllm_ascend", npus=[npu])
        got[npu] = plan["npus"][str(npu)]["pool"]
    assert got == {0: "144-155", 2: "156-167"}


def test_defect_phantom_numa_node():  # section 7, defect 3
    cpu_node, numa_to_cpu = node_map({0: r(0, 23), 2: r(24, 47)})
    pools = va.topo_affinity([0, 1], [0, 1], {0: r(0, 11), 1: r(24, 35)}, r(0, 47), cpu_node, numa_to_cpu)
    # NPU0 extends into node (0+1)%2 = 1, which does not exist: the lookup creates it, so
    # NPU1 uses (2+1)%3 = 0 and takes node 0: pools overlap on 0-11.
    assert pools == {0: r(0, 11), 1: r(0, 35)}
    assert sorted(numa_to_cpu) == [0, 1, 2]


def test_defect_phantom_node_end_to_end():
    topo = cpu_hosts.host(
        [{"logic_id": 0, "affinity": "0-11"}, {"logic_id": 1, "affinity": "24-35"}], {0: "0-23", 2: "24-47"}, "0-47"
    )
    plan = plan_mod.make_plan(topo, "vllm_ascend")
    assert plan["npus"]["1"]["pool"] == "0-35" and plan["npus"]["0"]["pool"] == "0-11"


def test_defect_950_numa0_starvation():  # section 7, defect 5
    topo = cpu_hosts.a5(tpc=1, node_of={0: 0, 1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3, 7: 3})
    plan = plan_mod.make_plan(topo, "vllm_ascend", npus=[4])
    assert plan["skipped"] is True and plan["npus"] == {}
    assert plan["reason"] == va.A950_INSUFFICIENT % (0, 0, [0])
    assert plan["uvb"] == "1-95"


def test_a3_global_slice_table():
    plan = plan_mod.make_plan(cpu_hosts.a3(), "vllm_ascend")
    assert plan["mode"] == "global_slice"
    for i in range(16):
        entry = plan["npus"][str(i)]
        base = 40 * i
        assert entry["pool"] == "%d-%d" % (base, base + 39)
        assert entry["irq"] == "%d-%d" % (base, base + 1)
        assert entry["main"] == "%d-%d" % (base + 2, base + 37)
        assert entry["acl"] == str(base + 38) and entry["release"] == str(base + 39)


def test_plan_log_lines():
    plan = plan_mod.make_plan(cpu_hosts.a3(), "vllm_ascend", npus=[0, 1])
    main0 = " ".join(str(c) for c in r(2, 37))
    assert plan["log"][0] == "[cpu_bind_mode] mode=global_slice rank=0 visible_npus=[0, 1]"
    assert plan["log"][1].startswith(
        "[cpu_global_slice] rank:0 ASCEND_RT_VISIBLE_DEVICES=None "
        "running_npu_list:[0, 1] total_npus:16 allowed_cpus:640 "
        "base:40 extra:0 allowed_cpus_head:[0, 1, 2"
    )
    assert plan["log"][2:4] == [
        "The CPU allocation plan is as follows:",
        "NPU0: main=[%s]  acl=[38]  release=[[39]]" % main0,
    ]
    assert plan["log"][4] == "[cpu_bind_mode] mode=global_slice rank=1 visible_npus=[0, 1]"
    assert plan["log"][5].startswith("[cpu_global_slice] rank:1 ")
    assert plan["log"][7].startswith("NPU1: main=[42 43 ") and plan["log"][7].endswith("release=[[79]]")


def test_fallback_to_global_slice_without_affinity():  # upstream #23
    topo = cpu_hosts.a2()
    for npu in topo["npus"]:
        npu["affinity"] = None
    plan = plan_mod.make_plan(topo, "vllm_ascend", npus=[1], vllm_ascend_version="0.30.0rc2")
    assert plan["mode"] == "global_slice"
    assert plan["warnings"] == [va.TOPO_FALLBACK]
    assert plan["log"][1] == va.TOPO_FALLBACK
    assert plan["npus"]["1"]["pool"] == "24-47"


@pytest.mark.parametrize(
    "arch, reason",
    [
        ("x86_64", "CPU binding skipped: non-ARM CPU detected."),  # upstream #82
        ("mips64", "Unknown CPU architecture. arch=mips64, action: disabling CPU binding."),
    ],
)
def test_non_arm_skipped(arch, reason):
    plan = plan_mod.make_plan(cpu_hosts.a2(arch=arch), "vllm_ascend")
    assert plan["skipped"] is True and plan["reason"] == reason and plan["npus"] == {}


def test_950_plan_end_to_end():
    plan = plan_mod.make_plan(cpu_hosts.a5(), "vllm_ascend", npus=[2, 3])
    # UVB pool = node 0 minus CPU 0; NPUs sit on nodes 1 and 3, so nothing starves here
    assert plan["mode"] == "ascend950" and plan["uvb"] == "1-95"
    assert plan["npus"]["2"]["main"] == "96-111" and plan["npus"]["2"]["irq"] == ""
    assert plan["log"][0] == "[cpu_bind_mode] mode=topo_affinity rank=0 visible_npus=[2, 3]"
    assert plan["log"][-1] == "Ascend 950 NPU3: worker=[%s]" % " ".join(str(c) for c in r(112, 127))


def test_audit_running_set_from_processes():
    plan = plan_mod.make_plan(cpu_hosts.a2(busy=(1, 3)), "vllm_ascend")
    assert sorted(plan["npus"]) == ["1", "3"]


def test_visible_devices_filter():
    plan = plan_mod.make_plan(cpu_hosts.a2(visible="0,1"), "vllm_ascend", npus=[0, 1, 2])
    assert sorted(plan["npus"]) == ["0", "1"]
    assert "outside ASCEND_RT_VISIBLE_DEVICES" in plan["warnings"][0]


def test_failure_in_other_npu_aborts():  # section 7, defect 8: NPU5 has no allowed CPU
    topo = cpu_hosts.a2()
    topo["npus"][5]["affinity"] = "200-203"
    with pytest.raises(PlanError, match="NPU 5: CPUs available"):
        plan_mod.make_plan(topo, "vllm_ascend", npus=[0, 5])


@pytest.mark.parametrize("make", [cpu_hosts.a2, cpu_hosts.a5])
def test_npu_missing_from_npu_map_is_a_message(make):
    # the reference's KeyError, on Ascend 950 too (it was a traceback there)
    topo = make()
    topo["npu_map"]["2"] = {"0": None}
    with pytest.raises(PlanError, match=r"NPU 2: NPU is not in 'npu-smi info -m'"):
        plan_mod.make_plan(topo, "vllm_ascend")


@pytest.mark.parametrize("value", [5, True, 1.5])
def test_visible_devices_not_text_is_a_message(value):
    # hand-made facts: the schema lets any scalar through, an environment variable is text
    with pytest.raises(PlanError, match="ASCEND_RT_VISIBLE_DEVICES=%r is not text" % (value,)):
        plan_mod.make_plan(cpu_hosts.a2(visible=value), "vllm_ascend")
