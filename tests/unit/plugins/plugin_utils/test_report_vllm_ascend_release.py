# -*- coding: utf-8 -*-
"""The audit's vllm-ascend release view: the release predicted and where its version came from,
each instance's ranks, and the release's defects on the host with the fix."""

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis as fr
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as report_markdown
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from npuops_testing import cpu_hosts


def report_of(facts, version, **kw):
    plan = dispatch.make_plan(facts, "vllm_ascend", vllm_ascend_version=version, **kw)
    return fr.build_report({"h": {"facts": facts, "plan_strict": dispatch.make_plan(facts), "plan_vllm_ascend": plan}})


def kinds(report):
    return dict((p["kind"], p) for p in report["problems"] if p["kind"].startswith("vllm_ascend"))


def test_release_and_ranks_per_instance():
    facts = cpu_hosts.a3()
    facts["vllm_ascend"] = {"version": "0.26.0rc1", "source": "/v/METADATA"}
    report = report_of(facts, None, instances=[{"name": "svc1", "npus": [9, 8]}])
    release = report["hosts"][0]["vllm_ascend_release"]
    assert (release["version"], release["source"], release["facts_source"]) == (
        "0.26.0rc1",
        "facts: /v/METADATA",
        "/v/METADATA",
    )
    assert [(r["rank"], r["npu"], r["outcome"]) for r in release["instances"]["svc1"]] == [
        (0, 9, "bound"),
        (1, 8, "bound"),
    ]
    assert kinds(report) == {}
    text = report_markdown.render_markdown(report)
    assert "## vllm-ascend release predicted, rank by rank" in text
    assert "svc1: rank 0: NPU9 bound, rank 1: NPU8 bound" in text


def test_unsorted_visible_devices_on_023_bind_another_npu():
    report = report_of(cpu_hosts.a3(), "0.23.0.post1", instances=[{"name": "svc1", "npus": [9, 8]}])
    found = kinds(report)["vllm_ascend_rank_binds_other_npu"]
    assert "svc1 rank 0 drives NPU 9, binds NPU 8's pool" in found["evidence"]
    assert "ASCEND_RT_VISIBLE_DEVICES sorted" in found["fix"]


def test_skipped_rank_and_import_failure_and_overlap_findings():
    facts = cpu_hosts.a2(busy=(0, 1, 2))
    skipped = kinds(report_of(facts, "0.26.0rc1", instances=[{"name": "s", "npus": [0, 1, 2, 3]}]))
    assert "s rank 3 (NPU 3): Bind cpus failed in rank3: 3" in skipped["vllm_ascend_rank_skipped"]["evidence"]
    failed = kinds(report_of(cpu_hosts.a2(), "0.27.1rc1", device_type="910A", npus=[0]))
    assert failed["vllm_ascend_import_failure"]["severity"] == "error"
    overlap = kinds(
        report_of(
            cpu_hosts.a2(),
            "0.18.0",
            instances=[{"name": "a", "npus": [0]}, {"name": "b", "npus": [2]}],
            allowed_cpus="144-191",
        )
    )
    assert "0.19.1rc1 or later" in overlap["vllm_ascend_release_overlap"]["fix"]
    assert "npuops_vllm_binding: host" in overlap["vllm_ascend_release_overlap"]["fix"]


def test_default_version_is_said():
    found = kinds(report_of(cpu_hosts.a3(), None))["vllm_ascend_version_unknown"]
    assert found["severity"] == "info" and "vllm_ascend_paths" in found["fix"]


def test_findings_about_an_assumed_release_are_marked_and_never_errors():
    """No vllm-ascend on the host: the newest release known is assumed. Its import failure on
    a 910A used to be the report's first red error; it is an info note marked as assumed."""
    facts = cpu_hosts.a2()
    facts["vllm_ascend"] = None
    found = kinds(report_of(facts, None, device_type="910A", npus=[0]))
    assert found["vllm_ascend_version_unknown"]["severity"] == "info"
    failure = found["vllm_ascend_import_failure"]
    assert failure["severity"] == "info" and failure["assumed"] is True
    assert failure["title"].startswith("if vllm-ascend ") and " were installed: " in failure["title"]
    assert failure["evidence"].startswith("assumed - no vllm-ascend was found on the host")
    # the same release named by the operator (or found on the host) stays an error
    named = kinds(
        report_of(facts, found["vllm_ascend_version_unknown"]["evidence"].split()[-1], device_type="910A", npus=[0])
    )
    assert named["vllm_ascend_import_failure"]["severity"] == "error"
    assert "assumed" not in named["vllm_ascend_import_failure"]
