# -*- coding: utf-8 -*-
"""Fleet audit analysis (plugins/plugin_utils/fleet_report.py) and its renderers
(plugins/plugin_utils/report_markdown.py, report_html.py).

Hand-built hosts first (every problem kind, its evidence and its fix), then the real host
snapshots in tests/snapshots/ once the topology and plan code is there.
"""

import base64
import copy
import hashlib
import json
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis as fr
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import problems
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import (
    html as report_html,
    markdown as report_markdown,
)
from npuops_testing.report_fleet import (
    a2_facts,
    a2_strict,
    a2_vllm,
    gpu_facts,
    gpu_plan,
    npu_entry,
    real_fleet,
    sample_fleet,
)


def by_kind(report, kind, host=None):
    return [p for p in report["problems"] if p["kind"] == kind and (host is None or p["host"] == host)]


def host_of(report, name):
    return next(h for h in report["hosts"] if h["name"] == name)


# ----------------------------------------------------------------------------------------------
# analysis on hand-built data
# ----------------------------------------------------------------------------------------------


def test_clean_a2_host_has_no_problems_and_full_numa_local_pools():
    report = fr.build_report(
        {
            "a2": {
                "facts": a2_facts(),
                "plan_strict": a2_strict(),
                "plan_vllm_ascend": dict(a2_strict(), policy="vllm_ascend"),
            }
        }
    )
    assert report["problems"] == []
    strict = report["hosts"][0]["plans"]["strict"]
    assert strict["status"] == "ok"
    assert strict["cpus_used"] == 192 and strict["cpus"] == "0-191"
    assert strict["overlaps"] == [] and strict["cross_numa"] == []
    assert [d["home_nodes"] for d in strict["devices"]] == [[n // 2] for n in range(8)]
    assert strict["devices"][0]["roles"] == {"irq": "0-1", "main": "2-21", "acl": "22", "release": "23"}


def test_vllm_overlap_and_cross_numa_are_found_with_evidence_and_fix():
    report = fr.build_report(sample_fleet())
    vllm = host_of(report, "a2-bad")["plans"]["vllm_ascend"]
    assert vllm["overlaps"] == [
        {"devices": ["NPU0", "NPU1"], "cpus": "0-23", "count": 24, "identical": False},
        {"devices": ["NPU2", "NPU6"], "cpus": "144-155", "count": 12, "identical": False},
    ]
    assert vllm["overlap_cpus"] == 36 and vllm["overlap"] == "0-23,144-155"
    # NPU0-1 pools 0-23 | 0-23,48-59; NPU2 144-155 (inside NPU6's); NPU3..7 as strict
    assert vllm["cpus"] == "0-23,48-59,72-191" and vllm["cpus_used"] == 156
    cross = {c["device"]: c for c in vllm["cross_numa"]}
    assert set(cross) == {"NPU1", "NPU2"}
    assert cross["NPU1"]["home_nodes"] == [0] and cross["NPU1"]["pool_nodes"] == [0, 1]
    assert cross["NPU1"]["off_node_cpus"] == "48-59"
    assert cross["NPU2"]["home_nodes"] == [1] and cross["NPU2"]["pool_nodes"] == [3]
    overlap = by_kind(report, "vllm_overlap", "a2-bad")
    assert len(overlap) == 1 and overlap[0]["severity"] == "error"
    assert "NPU0+NPU1 share 0-23 (24)" in overlap[0]["evidence"]
    assert "enable_cpu_binding false" in overlap[0]["fix"] and "strict" in overlap[0]["fix"]
    cross_p = by_kind(report, "vllm_cross_numa", "a2-bad")
    assert len(cross_p) == 1 and "NPU2 home node 1, pool on 3" in cross_p[0]["evidence"]
    assert by_kind(report, "vllm_overlap", "a2-clean") == []


def test_irqbalance_migratepages_and_health_findings():
    report = fr.build_report(sample_fleet())
    bad = host_of(report, "a2-bad")
    assert bad["irqbalance"] == "running" and host_of(report, "a2-clean")["irqbalance"] == "stopped"
    irq = by_kind(report, "irqbalance_running", "a2-bad")
    assert len(irq) == 1 and "npuops_irqbalance: ban" in irq[0]["fix"]
    assert "never restarts" in irq[0]["evidence"]
    mig = by_kind(report, "migratepages_missing", "a2-bad")
    assert len(mig) == 1 and mig[0]["fix"] == "install numactl (provides migratepages)"
    assert bad["health"]["healthy"] == 7
    assert bad["health"]["unhealthy"][0]["logic_id"] == 5
    assert bad["softshare"]["capacity"] == 700
    chip = by_kind(report, "unhealthy_chip", "a2-bad")
    assert chip[0]["severity"] == "error" and "health Alarm" in chip[0]["evidence"]
    assert "capacity is 700 of 800" in chip[0]["evidence"]
    # no accelerators: irqbalance and migratepages do not matter there
    assert by_kind(report, "irqbalance_running", "x86-none") == []
    assert by_kind(report, "migratepages_missing", "x86-none") == []
    assert by_kind(report, "irqbalance_running", "a2-clean") == []
    assert report["summary"]["unhealthy"] == 1
    assert report["summary"]["softshare_capacity"] == 1500


def a2_with_irqs(name, banned=None, config="/etc/default/irqbalance"):
    """An A2 host with irqbalance active, NPU n's IRQs 1024+4n (sq) / 1026+4n (cq), and
    ``banned`` in its irqbalance config (None: facts from before the config was read)."""
    facts = a2_facts(name, irq_active=True)
    for npu in facts["npus"]:
        npu["irqs"] = {"sq": 1024 + 4 * npu["logic_id"], "cq": 1026 + 4 * npu["logic_id"]}
    if banned is not None:
        facts["irqbalance"].update(config=config, banned_irqs=list(banned), banned_cpus=None)
    return {"facts": facts, "plan_strict": a2_strict(), "plan_vllm_ascend": a2_vllm()}


ALL_A2_IRQS = [1024 + 2 * i for i in range(16)]


def test_irqbalance_with_every_planned_irq_banned_is_no_problem():
    report = fr.build_report({"a2": a2_with_irqs("a2", banned=[5] + ALL_A2_IRQS)})
    assert by_kind(report, "irqbalance_running") == []
    host = report["hosts"][0]
    assert host["irqbalance"] == "running"
    bans = host["irqbalance_bans"]
    assert (bans["state"], bans["pinned_count"], bans["banned_count"], bans["unbanned"]) == ("banned", 16, 16, [])
    assert bans["config"] == "/etc/default/irqbalance"
    assert report["summary"]["irqbalance_running"] == 1
    assert report["summary"]["irqbalance_unbanned"] == 0


def test_irqbalance_finding_lists_the_unbanned_irqs_only():
    banned = [irq for irq in ALL_A2_IRQS if irq not in (1026, 1052, 1054)]
    report = fr.build_report({"a2": a2_with_irqs("a2", banned=banned)})
    found = by_kind(report, "irqbalance_running")
    assert len(found) == 1 and found[0]["severity"] == "warning"
    evidence = found[0]["evidence"]
    assert ("3 of 16 planned IRQs not banned in /etc/default/irqbalance: 1026 (NPU0); 1052, 1054 (NPU7)") in evidence
    assert "1024" not in evidence
    assert "never restarts" in evidence  # vllm-ascend binds on this host
    bans = report["hosts"][0]["irqbalance_bans"]
    assert [(u["irq"], u["device"], u["role"]) for u in bans["unbanned"]] == [
        (1026, "NPU0", "cq"),
        (1052, "NPU7", "sq"),
        (1054, "NPU7", "cq"),
    ]
    assert report["summary"]["irqbalance_unbanned"] == 1


def test_irqbalance_facts_without_config_keys_ban_nothing():
    """Facts gathered before the config was read (no banned_irqs key) keep working."""
    report = fr.build_report({"a2": a2_with_irqs("a2")})
    found = by_kind(report, "irqbalance_running")
    assert len(found) == 1
    assert "16 of 16 planned IRQs not banned (no irqbalance config file)" in found[0]["evidence"]


def test_irqbalance_only_planned_npus_and_irq_roles_count():
    entry = a2_with_irqs("a2", banned=[1024, 1026])
    plan = entry["plan_strict"]
    plan["npus"] = {"0": plan["npus"]["0"], "1": dict(plan["npus"]["1"], irq="")}
    report = fr.build_report({"a2": entry})
    assert by_kind(report, "irqbalance_running") == []
    assert report["hosts"][0]["irqbalance_bans"]["pinned_count"] == 2
    # Ascend 950: no IRQ roles, nothing pinned, nothing for irqbalance to undo
    a5 = a2_with_irqs("a5", banned=[])
    a5["plan_strict"] = dict(a5["plan_strict"], mode="ascend950", device_type="A5")
    report = fr.build_report({"a5": a5})
    assert by_kind(report, "irqbalance_running") == []
    assert report["hosts"][0]["irqbalance_bans"]["state"] == "none"


def test_irqbalance_unknown_irqs_or_no_plan_stay_a_finding():
    unknown = a2_with_irqs("a2", banned=ALL_A2_IRQS)
    unknown["facts"]["npus"][3]["irqs"] = {"sq": None, "cq": None}
    failed = a2_with_irqs("a2-failed", banned=ALL_A2_IRQS)
    failed["plan_strict"] = None
    failed["plan_errors"] = {"strict": "NPU 0: no CPUs"}
    report = fr.build_report({"a2": unknown, "a2-failed": failed})
    first = by_kind(report, "irqbalance_running", "a2")
    assert len(first) == 1 and "IRQs of NPU3 not in the facts" in first[0]["evidence"]
    assert "not banned" not in first[0]["evidence"]
    second = by_kind(report, "irqbalance_running", "a2-failed")
    assert len(second) == 1 and "without a strict plan" in second[0]["evidence"]
    assert host_of(report, "a2-failed")["irqbalance_bans"]["state"] == "unknown"


def test_irqbalance_gpu_hosts_check_the_paired_nic_irqs():
    facts = gpu_facts("gpu", irq_active=True)
    facts["nics"][0]["irqs"] = [180, 181]
    facts["nics"][1]["irqs"] = [190, 191]
    facts["irqbalance"].update(config="/etc/sysconfig/irqbalance", banned_irqs=[180, 181, 190], banned_cpus=None)
    report = fr.build_report({"gpu": {"facts": facts, "plan_strict": gpu_plan()}})
    found = by_kind(report, "irqbalance_running")
    assert len(found) == 1
    assert "1 of 4 planned IRQs not banned in /etc/sysconfig/irqbalance: 191 (GPU2/mlx5_1)" in found[0]["evidence"]
    assert "vllm-ascend" not in found[0]["evidence"]
    facts["irqbalance"]["banned_irqs"].append(191)
    report = fr.build_report({"gpu": {"facts": facts, "plan_strict": gpu_plan()}})
    assert by_kind(report, "irqbalance_running") == []
    # NIC IRQs not in the facts (facts of an older collection): cannot tell
    del facts["nics"][1]["irqs"]
    report = fr.build_report({"gpu": {"facts": facts, "plan_strict": gpu_plan()}})
    assert "IRQs of GPU2/mlx5_1 not in the facts" in by_kind(report, "irqbalance_running")[0]["evidence"]


def test_migratepages_unknown_is_not_reported_as_missing():
    facts = a2_facts(migratepages=None)
    report = fr.build_report({"h": {"facts": facts, "plan_strict": a2_strict()}})
    assert by_kind(report, "migratepages_missing") == []
    assert report["hosts"][0]["migratepages"] is None


def test_health_warning_is_a_warning_not_an_error():
    report = fr.build_report({"h": {"facts": a2_facts(health={0: "Warning"}), "plan_strict": a2_strict()}})
    assert [p["severity"] for p in by_kind(report, "unhealthy_chip")] == ["warning"]


def test_gpu_rails_majority_flags_only_the_odd_host():
    report = fr.build_report(sample_fleet())
    assert host_of(report, "gpu-a")["rails"]["status"] == "consistent"
    assert host_of(report, "gpu-b")["rails"]["status"] == "consistent"
    odd = host_of(report, "gpu-c")["rails"]
    assert odd["status"] == "inconsistent" and odd["group"] == "unknown CPU, 4 GPUs, 2 NICs"
    assert odd["deviations"] == [
        {"gpu": "0", "nic": "mlx5_1", "majority": "mlx5_0", "hosts_with_majority": 2, "peers": 3, "tie": False}
    ]
    problems = by_kind(report, "rail_inconsistent")
    assert [p["host"] for p in problems] == ["gpu-c"]
    assert problems[0]["evidence"] == "GPU0 -> mlx5_1 where 2 of 3 hosts of its shape use mlx5_0"
    assert report["summary"]["rails_inconsistent"] == 1


def test_gpu_rails_tie_and_other_shapes():
    hosts = {
        "g1": {"facts": gpu_facts("g1"), "plan_strict": gpu_plan()},
        "g2": {"facts": gpu_facts("g2"), "plan_strict": gpu_plan(("mlx5_1", "mlx5_0", "mlx5_1", "mlx5_1"))},
        "g3": {
            "facts": gpu_facts("g3", nics=("mlx5_0", "mlx5_1", "mlx5_2")),
            "plan_strict": gpu_plan(("mlx5_2", "mlx5_0", "mlx5_1", "mlx5_1")),
        },
    }
    report = fr.build_report(hosts)
    flagged = [h for h in report["hosts"] if h["rails"]["status"] == "inconsistent"]
    assert len(flagged) == 1 and flagged[0]["rails"]["deviations"][0]["tie"] is True
    assert "tie" in by_kind(report, "rail_inconsistent")[0]["evidence"]
    assert host_of(report, "g3")["rails"]["status"] == "single"


def test_rail_check_filter_result_is_used_when_given():
    from ansible_collections.npuops.fleet.plugins.filter import rails

    fleet = sample_fleet()
    plans = dict((n, e["plan_strict"]) for n, e in fleet.items())
    found = rails.rail_check(plans)
    assert set(found) == {"gpu-c"}
    mine = fr.build_report(fleet)
    theirs = fr.build_report(fleet, rails=found)
    assert host_of(theirs, "gpu-c")["rails"]["external"] == found["gpu-c"]
    assert host_of(theirs, "gpu-c")["rails"]["deviations"] == host_of(mine, "gpu-c")["rails"]["deviations"]
    assert by_kind(theirs, "rail_inconsistent") == by_kind(mine, "rail_inconsistent")
    # an empty result means every host is consistent, whatever this module would say
    quiet = fr.build_report(fleet, rails={})
    assert by_kind(quiet, "rail_inconsistent") == []
    assert host_of(quiet, "gpu-c")["rails"]["status"] == "consistent"
    # per-host form ({host: {..., rails: entry}}) is accepted too
    fleet["gpu-a"]["rails"] = {
        "differences": {"3": {"expected": "mlx5_1", "actual": "mlx5_0"}},
        "group_hosts": 3,
        "majority_hosts": 2,
        "tie": False,
    }
    per_host = fr.build_report(fleet)
    assert [p["host"] for p in by_kind(per_host, "rail_inconsistent")] == ["gpu-a"]


def test_vllm_policy_not_applicable_on_gpu_hosts_and_numa_off_flagged():
    hosts = {
        "h100": {
            "facts": gpu_facts("h100", numa=False),
            "plan_strict": gpu_plan(numa=False),
            "plan_vllm_ascend": None,
            "plan_errors": {"vllm_ascend": "not ascend"},
        }
    }
    report = fr.build_report(hosts)
    vllm = report["hosts"][0]["plans"]["vllm_ascend"]
    assert vllm["applicable"] is False
    assert by_kind(report, "vllm_fails") == []
    numa = by_kind(report, "numa_unknown")
    assert len(numa) == 1 and "numa=off" in numa[0]["fix"]


def test_plan_failures_are_findings_not_crashes():
    hosts = {
        "a3": {
            "facts": a2_facts("a3"),
            "plan_strict": None,
            "plan_vllm_ascend": None,
            "plan_errors": {
                "strict": "NPU 3: no allowed CPUs on NUMA node 1",
                "vllm_ascend": "Bind cpus failed in rank0",
            },
        }
    }
    report = fr.build_report(hosts)
    failed = by_kind(report, "plan_failed")
    assert failed[0]["severity"] == "error" and failed[0]["evidence"].startswith("NPU 3")
    vf = by_kind(report, "vllm_fails")
    assert vf[0]["evidence"] == "Bind cpus failed in rank0" and "enable_cpu_binding" in vf[0]["fix"]
    assert report["hosts"][0]["plans"]["strict"]["status"] == "failed"
    # list form of plan_errors is accepted too
    hosts["a3"]["plan_errors"] = [{"policy": "strict", "msg": "boom"}]
    report = fr.build_report(hosts)
    assert by_kind(report, "plan_failed")[0]["evidence"] == "boom"


def test_plan_failed_in_a_cut_cpuset_tells_how_to_fix_it():
    """Facts gathered inside a job's cgroup: the finding says so and how to get out of it."""
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch as plan
    from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError

    facts = a2_facts("cut")
    facts["cpu"]["allowed"] = "0-7"
    with pytest.raises(PlanError) as err:
        plan.make_plan(facts)
    report = fr.build_report(
        {"cut": {"facts": facts, "plan_strict": None, "plan_errors": {"strict": "npu_cpu_plan: %s" % err.value}}}
    )
    (found,) = by_kind(report, "plan_failed")
    assert found["severity"] == "error" and "cut cpuset" in found["title"]
    assert found["evidence"].startswith("npu_cpu_plan: NPU ") and "cgroup" not in found["evidence"]
    assert found["fix"] == (
        "the facts were gathered in a cpuset of 8 CPUs (Cpus_allowed_list 0-7; the host has 192 "
        "online: 0-191): gather the facts outside the job's cgroup, or pass allowed_cpus (role "
        "variable npuops_cpu_allowed) with the CPUs the service may use"
    )
    assert report["hosts"][0]["cpuset_hint"] == found["fix"]
    # a failure that is not about the cpuset keeps the generic fix
    report = fr.build_report(
        {"cut": {"facts": facts, "plan_strict": None, "plan_errors": {"strict": "NPU 9: unknown NPU id(s) [9]"}}}
    )
    assert by_kind(report, "plan_failed")[0]["fix"].startswith("fix what the message names")


def test_vllm_skipped_is_info_with_the_reason():
    plan = {"policy": "vllm_ascend", "skipped": True, "reason": "CPU binding skipped: non-ARM CPU detected."}
    facts = a2_facts()
    facts["arch"] = "x86_64"
    report = fr.build_report({"x": {"facts": facts, "plan_strict": a2_strict(), "plan_vllm_ascend": plan}})
    skipped = by_kind(report, "vllm_skipped")
    assert skipped[0]["severity"] == "info" and "non-ARM" in skipped[0]["evidence"]
    assert report["hosts"][0]["plans"]["vllm_ascend"]["status"] == "skipped"


def test_strict_cross_numa_under_a_cut_cpuset_is_a_warning():
    facts = a2_facts()
    facts["cpu"]["allowed"] = "0-95"
    plan = a2_strict()
    plan["npus"] = {"6": npu_entry("48-71", 1), "7": npu_entry("72-95", 1)}
    report = fr.build_report({"cut": {"facts": facts, "plan_strict": plan}})
    p = by_kind(report, "strict_cross_numa")
    assert p[0]["severity"] == "warning" and "(allowed CPUs 0-95)" in p[0]["evidence"]
    assert report["hosts"][0]["cpus_allowed"] == 96 and report["hosts"][0]["cpus_online"] == 192


def test_strict_overlap_is_an_invariant_breach():
    plan = a2_strict()
    plan["npus"]["1"] = npu_entry("0-23", 0)
    report = fr.build_report({"h": {"facts": a2_facts(), "plan_strict": plan}})
    p = by_kind(report, "strict_overlap")
    assert p and p[0]["severity"] == "error"
    assert report["hosts"][0]["plans"]["strict"]["overlaps"][0]["identical"] is True


def test_facts_errors_and_missing_facts():
    facts = a2_facts()
    facts["errors"] = [{"source": "npu-smi info -t topo", "msg": "rc 1: not supported"}]
    report = fr.build_report({"h": {"facts": facts, "plan_strict": a2_strict()}, "gone": {}})
    fe = by_kind(report, "facts_error", "h")
    assert fe[0]["evidence"] == "npu-smi info -t topo: rc 1: not supported"
    assert "npu-smi" in fe[0]["fix"]
    nf = by_kind(report, "no_facts", "gone")
    assert nf[0]["severity"] == "error" and "npu_facts" in nf[0]["fix"]
    report = fr.build_report({"gone": {"facts_error": "npu-smi: timed out after 30 s"}})
    assert by_kind(report, "no_facts")[0]["evidence"] == "npu-smi: timed out after 30 s"


def test_problems_sorted_by_severity_with_ids_and_counts():
    report = fr.build_report(sample_fleet())
    order = [fr.SEVERITIES.index(p["severity"]) for p in report["problems"]]
    assert order == sorted(order)
    assert [p["id"] for p in report["problems"]] == ["P%d" % (i + 1) for i in range(len(report["problems"]))]
    counts = report["summary"]["problems"]
    assert sum(counts.values()) == len(report["problems"])
    assert sum(h["problems"] for h in report["hosts"]) == len(report["problems"])
    for p in report["problems"]:
        assert p["evidence"] and p["fix"]


def test_device_types_table():
    report = fr.build_report(sample_fleet())
    rows = {(t["vendor"], t["device_type"]): t for t in report["device_types"]}
    assert rows[("ascend", "A2")]["hosts"] == 2 and rows[("ascend", "A2")]["devices"] == 16
    assert rows[("ascend", "A2")]["healthy"] == 15 and rows[("ascend", "A2")]["capacity"] == 1500
    assert rows[("nvidia", "none")]["devices"] == 12
    assert rows[("none", "none")]["host_names"] == ["x86-none"]


def test_report_is_json_serialisable_deterministic_and_does_not_mutate_input():
    fleet = sample_fleet()
    before = copy.deepcopy(fleet)
    first = fr.build_report(fleet)
    assert fleet == before
    reordered = dict(reversed(list(copy.deepcopy(fleet).items())))
    assert json.dumps(fr.build_report(reordered)) == json.dumps(first)
    assert json.loads(fr.render_json(first)) == json.loads(json.dumps(first))


def test_garbage_input_does_not_crash():
    report = fr.build_report(
        {
            "x": {
                "facts": {"cpu": {"allowed": "junk", "numa_nodes": {"a": 1}}, "npus": ["bad", {"logic_id": 0}]},
                "plan_strict": {"npus": {"0": {"pool": "not-a-list"}}},
                "plan_vllm_ascend": "nonsense",
            }
        }
    )
    assert report["hosts"][0]["plans"]["strict"]["cpus_used"] == 0
    report_html.render_html(report)
    report_markdown.render_markdown(report)


# ----------------------------------------------------------------------------------------------
# renderers
# ----------------------------------------------------------------------------------------------


class _Collect(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.ptrs = []
        self.stack = []
        self.tags = set()
        self.hosts = []
        self.attrs_seen = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        self.attrs_seen.append(attrs)
        if "data-host" in attrs:
            self.hosts.append(attrs["data-host"])
        self.stack.append([attrs.get("data-ptr"), ""])

    def handle_endtag(self, tag):
        ptr, text = self.stack.pop()
        if ptr is not None:
            self.ptrs.append((ptr, text))
        if self.stack:
            self.stack[-1][1] += text

    def handle_data(self, data):
        if self.stack:
            self.stack[-1][1] += data


def resolve(report, pointer):
    node = report
    for part in pointer.strip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def test_html_numbers_carry_json_pointers_that_match_the_report():
    report = fr.build_report(sample_fleet())
    parser = _Collect()
    parser.feed(report_html.render_html(report))
    assert len(parser.ptrs) > 50
    for ptr, text in parser.ptrs:
        assert text == str(resolve(report, ptr)), ptr
    ptrs = dict(parser.ptrs)
    assert ptrs["/summary/problems/error"] == str(report["summary"]["problems"]["error"])
    bad = [i for i, h in enumerate(report["hosts"]) if h["name"] == "a2-bad"][0]
    assert ptrs["/hosts/%d/plans/vllm_ascend/overlap_cpus" % bad] == "36"


def grouped_fleet():
    """Three A2 hosts with the same irqbalance finding (different IRQs unbanned), two with the
    same migratepages finding (same evidence), one banned host (no finding)."""
    fleet = {}
    for name, banned in (("a2-a", []), ("a2-b", [1024]), ("a2-c", ALL_A2_IRQS[2:]), ("a2-ok", ALL_A2_IRQS)):
        fleet[name] = a2_with_irqs(name, banned=banned)
        fleet[name]["plan_vllm_ascend"] = dict(a2_strict(), policy="vllm_ascend")
    for name in ("a2-a", "a2-b"):
        fleet[name]["facts"]["tools"]["migratepages"] = False
    return fleet


def test_problem_groups_join_the_same_kind_and_fix_across_hosts():
    report = fr.build_report(grouped_fleet())
    assert [(p["id"], p["host"], p["kind"]) for p in report["problems"]] == [
        ("P1", "a2-a", "irqbalance_running"),
        ("P2", "a2-a", "migratepages_missing"),
        ("P3", "a2-b", "irqbalance_running"),
        ("P4", "a2-b", "migratepages_missing"),
        ("P5", "a2-c", "irqbalance_running"),
    ]  # per host, as before
    groups = report["problem_groups"]
    assert [(g["kind"], g["hosts"], g["ids"], g["id_text"], g["problems"]) for g in groups] == [
        ("irqbalance_running", ["a2-a", "a2-b", "a2-c"], ["P1", "P3", "P5"], "P1, P3, P5", [0, 2, 4]),
        ("migratepages_missing", ["a2-a", "a2-b"], ["P2", "P4"], "P2, P4", [1, 3]),
    ]
    assert groups[0]["host_count"] == 3 and groups[0]["evidence"] is None  # IRQs differ
    assert groups[1]["evidence"] == report["problems"][1]["evidence"]  # the same on both
    assert problems._id_span(["P3", "P4", "P5"]) == "P3\u2013P5"
    assert host_of(report, "a2-ok")["irqbalance_bans"]["state"] == "banned"


def test_html_groups_rows_and_keeps_each_problem_reachable():
    report = fr.build_report(grouped_fleet())
    page = report_html.render_html(report)
    parser = _Collect()
    parser.feed(page)
    ids = [a.get("id") for a in parser.attrs_seen if a.get("id")]
    # one anchor per problem (the grouped ones are list items in the row's details element)
    assert sorted(i for i in ids if i.startswith("problem-P")) == sorted(
        "problem-" + p["id"] for p in report["problems"]
    )
    assert [i for i in ids if i.startswith("problem-group-")] == ["problem-group-0", "problem-group-1"]
    row = page[page.index('id="problem-group-0"') : page.index('id="problem-group-1"')]
    assert 'data-ptr="/problem_groups/0/host_count">3</span> hosts: ' in row
    assert (
        '<span class="h">a2-a</span>, <span class="h">a2-b</span>, <span class="h">a2-c</span>' in row
        and "<details>" in row
    )
    # each host's own unbanned IRQs: a2-b banned only 1024, a2-c all but NPU0's
    assert "15 of 16 planned IRQs not banned in /etc/default/irqbalance: 1026 (NPU0); " in row
    assert (
        "2 of 16 planned IRQs not banned in /etc/default/irqbalance: 1024, 1026 (NPU0); "
        "vllm-ascend stops it at start-up and never restarts it</code>"
    ) in row
    for ptr, text in parser.ptrs:
        assert text == str(resolve(report, ptr)), ptr
    seen = dict(parser.ptrs)
    # the hosts table says how many of the planned IRQs are banned; banned-everything is ok
    ok = [h["name"] for h in report["hosts"]].index("a2-ok")
    assert seen["/hosts/%d/irqbalance_bans/banned_count" % ok] == "16"
    assert seen["/hosts/%d/irqbalance_bans/pinned_count" % ok] == "16"
    assert '<td class="ok">running, ' in page
    assert seen["/summary/irqbalance_unbanned"] == "3"


def test_markdown_groups_rows_with_a_per_host_sub_list():
    report = fr.build_report(grouped_fleet())
    md = report_markdown.render_markdown(report)
    rows = [line for line in md.splitlines() if line.startswith("| P")]
    assert len(rows) == 2
    assert rows[0].startswith("| P1, P3, P5 | warning | 3 hosts: a2-a, a2-b, a2-c | irqbalance")
    assert "per host below the table" in rows[0]
    assert rows[1].startswith("| P2, P4 | warning | 2 hosts: a2-a, a2-b | migratepages missing")
    assert "migratepages is not on PATH" in rows[1]  # the same evidence: in the row
    assert (
        "  - a2-c (P5): irqbalance is active; 2 of 16 planned IRQs not banned in "
        "/etc/default/irqbalance: 1024, 1026 (NPU0)" in md
    )
    assert "  - a2-a (P2)" not in md  # no sub-list for a group with one evidence
    assert "| a2-ok | aarch64 | ascend | A2 | 192/192 | 4 | 8 | 8 | 800 | running, 16/16 IRQs banned |" in md


def test_html_is_self_contained():
    page = report_html.render_html(fr.build_report(sample_fleet()))
    parser = _Collect()
    parser.feed(page)
    assert not parser.tags & {"link", "img", "iframe", "object", "embed"}
    for attrs in parser.attrs_seen:
        assert not any(k in ("src", "href") and not v.startswith("#") for k, v in attrs.items())
        assert not any(k.startswith("on") for k in attrs)
    # two A2 hosts x 2 policies, 3 GPU hosts strict of which gpu-a and gpu-b are one shape
    assert page.count("<svg") == 2 * 2 + 2 + 0
    assert "url(" not in page and "@import" not in page
    # one inline script, the host filter, and a policy that lets nothing else run
    assert page.count("<script") == 1
    assert "<script>%s</script>" % report_html._SCRIPT in page
    digest = base64.b64encode(hashlib.sha256(report_html._SCRIPT.encode()).digest()).decode()
    policy = [a["content"] for a in parser.attrs_seen if a.get("http-equiv") == "Content-Security-Policy"]
    assert policy == [
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-%s'; "
        "base-uri 'none'; form-action 'none'" % digest
    ]


def test_hostile_hostname_and_strings_are_escaped_everywhere():
    evil = "<script>alert(1)</script>"
    fleet = sample_fleet()
    fleet[evil] = fleet.pop("a2-bad")
    fleet[evil]["facts"]["errors"] = [{"source": "<img src=x onerror=alert(2)>", "msg": "a|b"}]
    fleet[evil]["facts"]["npus"][0]["name"] = "<b>x</b>"
    fleet[evil]["plan_errors"] = {}
    report = fr.build_report(fleet)
    page = report_html.render_html(report)
    # the only script is the page's own host filter
    assert page.count("<script") == 1 and "<img" not in page and "<b>x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    parser = _Collect()
    parser.feed(page)
    assert evil in parser.hosts
    md = report_markdown.render_markdown(report)
    assert "<script" not in md and "<img" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "a\\|b" in md


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_hostname_round_trips_through_the_html(name):
    fleet = {name: {"facts": a2_facts(name), "plan_strict": a2_strict(), "plan_vllm_ascend": a2_vllm()}}
    page = report_html.render_html(fr.build_report(fleet))
    parser = _Collect()
    parser.feed(page)
    # a host text is shown on one line (it may come from a compromised host): separators and control characters are spaces
    from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import one_line

    assert parser.hosts == [one_line(name)]
    assert page.count("<script") == 1


def test_markdown_has_every_section_and_problem():
    report = fr.build_report(sample_fleet())
    md = report_markdown.render_markdown(report)
    for heading in (
        "# Fleet report",
        "## Problems",
        "## Device types",
        "## Hosts by shape",
        "## vllm-ascend in-process binding vs the strict plan",
        "## Pools per shape",
        "### a2-bad",
        "### 2 hosts: gpu-a, gpu-b",
    ):
        assert heading + "\n" in md
    assert "| 2 hosts: gpu-a, gpu-b | x86\\_64 | nvidia |" in md
    # each problem has its row, or is one of a group's row (same kind and fix on several hosts)
    group_of = dict(
        (i, g["id_text"]) for g in report["problem_groups"] for i in g["problems"] if len(g["problems"]) > 1
    )
    for i, p in enumerate(report["problems"]):
        assert "| %s | %s |" % (group_of.get(i, p["id"]), p["severity"]) in md
    assert "0-23,48-59 (N0,1) CROSS-NUMA" in md
    assert "install numactl (provides migratepages)" in md


def test_svg_map_marks_overlap_and_cross_numa():
    report = fr.build_report(sample_fleet())
    page = report_html.render_html(report)
    bad = [i for i, h in enumerate(report["hosts"]) if h["name"] == "a2-bad"][0]
    start = page.index('id="map-%d-vllm_ascend"' % bad)
    svg = page[start : page.index("</svg>", start)]
    assert ">overlap</text>" in svg and report_html.OVERLAP_COLOUR in svg
    assert "NPU2 \u26a0" in svg and "shared: 0-23" in svg and "shared: 144-155" in svg
    start = page.index('id="map-%d-strict"' % bad)
    strict_svg = page[start : page.index("</svg>", start)]
    assert ">overlap</text>" not in strict_svg
    for role, colour in report_html.ROLE_COLOURS.items():
        if role != "pool":
            assert colour in strict_svg


# ----------------------------------------------------------------------------------------------
# real snapshots (npuops_testing.report_fleet.real_fleet)
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_report():
    return fr.build_report(real_fleet())


def test_real_snapshots_report_renders_and_matches(real_report):
    json.dumps(real_report)
    parser = _Collect()
    parser.feed(report_html.render_html(real_report))
    for ptr, text in parser.ptrs:
        assert text == str(resolve(real_report, ptr)), ptr
    names = [h["name"] for h in real_report["hosts"]]
    assert names == sorted(names) and len(names) >= 1
    for host in real_report["hosts"]:
        strict = host["plans"]["strict"]
        # our planner's invariant 1 on every real host
        assert strict["overlaps"] == [], host["name"]


def test_designdoc_a2_vllm_ascend_overlaps_where_the_research_says(real_report):
    """The vllm-ascend design document's A2 layout (4 x 48, NPU0/2 and NPU1/3 paired):
    vllm-ascend's allocator gives NPU0 and NPU1 the same 0-23 (research note, defect 1)."""
    hosts = dict((h["name"], h) for h in real_report["hosts"])
    assert "a2-designdoc" in hosts, "tests/snapshots/a2-designdoc is missing"
    doc = hosts["a2-designdoc"]
    assert doc["device_type"] == "A2" and doc["npus"] == 8
    vllm = doc["plans"]["vllm_ascend"]
    assert vllm["status"] == "ok"
    pools = dict((d["label"], d["pool"]) for d in vllm["devices"])
    assert pools["NPU0"] == "0-35" and pools["NPU1"] == "0-23,48-59"
    assert vllm["overlaps"][0]["devices"] == ["NPU0", "NPU1"]
    assert vllm["overlaps"][0]["cpus"] == "0-23"
    assert vllm["overlap_cpus"] == 96
    assert doc["plans"]["strict"]["overlaps"] == []
    kinds = set(p["kind"] for p in real_report["problems"] if p["host"] == "a2-designdoc")
    assert "vllm_overlap" in kinds


def test_real_a2_vllm_ascend_pools_off_node_but_disjoint(real_report):
    """The real A2 capture (8 x 24, NPU0/1 on node 6): vllm-ascend extends NPU1 into node 7,
    no overlap; strict keeps 12 CPUs each on the affinity node."""
    hosts = dict((h["name"], h) for h in real_report["hosts"])
    assert "a2-910b3x8" in hosts, "tests/snapshots/a2-910b3x8 is missing"
    a2 = hosts["a2-910b3x8"]
    assert a2["device_type"] == "A2" and a2["npus"] == 8
    vllm = a2["plans"]["vllm_ascend"]
    assert vllm["status"] == "ok" and vllm["overlap_cpus"] == 0
    pools = dict((d["label"], d["pool"]) for d in vllm["devices"])
    assert (pools["NPU0"], pools["NPU1"]) == ("144-167", "168-191")
    assert [(c["device"], c["home_nodes"], c["pool_nodes"]) for c in vllm["cross_numa"]] == [
        ("NPU1", [6], [7]),
        ("NPU3", [4], [5]),
        ("NPU5", [0], [1]),
        ("NPU7", [2], [3]),
    ]
    strict = dict((d["label"], (d["pool"], d["numa_nodes"])) for d in a2["plans"]["strict"]["devices"])
    assert strict["NPU0"] == ("144-155", [6]) and strict["NPU1"] == ("156-167", [6])
    kinds = set(p["kind"] for p in real_report["problems"] if p["host"] == "a2-910b3x8")
    assert "vllm_cross_numa" in kinds and "vllm_overlap" not in kinds


def test_real_gpu_hosts_of_different_models_are_not_compared(real_report):
    hosts = dict((h["name"], h) for h in real_report["hosts"])
    assert {"dgx-a100", "h100-numaoff", "pcie-8gpu"} <= set(hosts), "a GPU host is missing from tests/snapshots"
    assert hosts["dgx-a100"]["rails"]["status"] == "single"
    assert hosts["h100-numaoff"]["rails"]["status"] == "single"
    assert hosts["pcie-8gpu"]["rails"]["status"] == "no NICs"
    assert hosts["dgx-a100"]["rails"]["group"] != hosts["h100-numaoff"]["rails"]["group"]


def test_real_problems_each_name_a_host_of_the_fleet_and_failures_are_findings(real_report):
    names = set(h["name"] for h in real_report["hosts"])
    assert set(p["host"] for p in real_report["problems"]) <= names
    for host in real_report["hosts"]:
        kinds = set(p["kind"] for p in real_report["problems"] if p["host"] == host["name"])
        if host["plans"]["strict"]["status"] == "failed":
            assert "plan_failed" in kinds
        bans = host["irqbalance_bans"]
        if host["irqbalance"] == "running" and host["npus"] + host["gpus"]:
            # a finding exactly when some IRQ the strict plan pins is not (known to be) banned
            assert ("irqbalance_running" in kinds) == (bans["state"] in ("unbanned", "unknown")), host["name"]
        else:
            assert "irqbalance_running" not in kinds and bans["state"] == "n/a"
        if host["migratepages"] is False and host["npus"] + host["gpus"]:
            assert "migratepages_missing" in kinds


def test_cgroup_modes_that_do_not_enforce_allowed_cpus_are_said():
    """A host whose facts say cgroup v1/hybrid (or v2 without cpuset) gets an info finding that
    says what confines the tree there; v2 with cpuset, unknown, and hosts without accelerators
    get none."""
    fleet = {}
    for name, mode in (
        ("hybrid", {"version": "hybrid", "cpuset_controller": False}),
        ("v1", {"version": 1, "cpuset_controller": False}),
        ("v2-cpuset", {"version": 2, "cpuset_controller": True}),
        ("unknown", {"version": None, "cpuset_controller": None}),
    ):
        facts = a2_facts(name)
        facts["cgroup"] = mode
        fleet[name] = {
            "facts": facts,
            "plan_strict": a2_strict(),
            "plan_vllm_ascend": dict(a2_strict(), policy="vllm_ascend"),
        }
    fleet["old-facts"] = {
        "facts": a2_facts("old-facts"),
        "plan_strict": a2_strict(),
        "plan_vllm_ascend": dict(a2_strict(), policy="vllm_ascend"),
    }
    report = fr.build_report(fleet)
    found = {p["host"]: p for p in by_kind(report, "cpuset_not_enforced")}
    assert sorted(found) == ["hybrid", "v1"]
    assert found["hybrid"]["severity"] == "info"
    assert "AllowedCPUs=" in found["hybrid"]["evidence"]
    assert "CPUAffinity=" in found["hybrid"]["evidence"] and "reconciler" in found["hybrid"]["evidence"]
    assert "unified_cgroup_hierarchy" in found["v1"]["fix"]
