# -*- coding: utf-8 -*-
"""The audit's "which vLLM, which binding" per instance: the host's vLLM from the facts, each
instance's binding, the NUMA binding vLLM itself applies under the wrapper the collection writes
(the same rule, render/launch_flags.py) and the devices in rank order under --device-ids."""

from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis as fr
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as report_markdown
import copy
import os

from npuops_testing import SNAPSHOTS
from npuops_testing.module_harness import call_module

DGX = call_module("npu_topology_facts", {"snapshot": os.path.join(SNAPSHOTS, "dgx-a100")})["ansible_facts"][
    "npu_topology"
]

INSTANCES = [
    {
        "name": "tp4",
        "npus": [0, 1, 2, 3],
        "binding": "host",
        "command": ["vllm", "serve", "/m", "--device-ids", "2,3,0,1"],
    },
    {"name": "own", "npus": [4, 5, 6, 7], "binding": "vllm", "command": ["vllm", "serve", "/m"]},
]


def report_of(facts, instances):
    return fr.build_report(
        {
            "h": {
                "facts": facts,
                "plan_strict": dispatch.make_plan(facts),
                "config": {"binding": "host", "instances": instances},
            }
        }
    )


def _facts(version):
    facts = copy.deepcopy(DGX)
    facts["vllm"] = (
        {"version": version, "source": "/usr/lib/python3/dist-packages/vllm-%s.dist-info/METADATA" % version}
        if version
        else None
    )
    return facts


def test_each_instance_says_its_vllm_and_numa_binding():
    found = report_of(_facts("0.34.0"), INSTANCES)["hosts"][0]["vllm_instances"]
    assert found["version"] == "0.34.0"
    assert [(i["name"], i["binding"], i["numa"], i["rank_devices"]) for i in found["instances"]] == [
        ("tp4", "host", "off (--no-numa-bind)", [2, 3, 0, 1]),
        ("own", "vllm", "vllm (--numa-bind with the plan's nodes and CPUs)", None),
    ]
    text = report_markdown.render_markdown(report_of(_facts("0.34.0"), INSTANCES))
    assert "## vLLM per instance: version and NUMA binding" in text
    assert "rank 0: GPU2, rank 1: GPU3, rank 2: GPU0, rank 3: GPU1" in text


def test_an_old_or_unknown_vllm_is_said():
    old = report_of(_facts("0.19.1"), INSTANCES)["hosts"][0]["vllm_instances"]
    assert [i["numa"] for i in old["instances"]] == [
        "none (vLLM before 0.20.0 has no NUMA binding)",
        "none (vLLM before 0.20.0)",
    ]
    unknown = report_of(_facts(None), INSTANCES)["hosts"][0]["vllm_instances"]
    assert unknown["version"] is None
    assert unknown["instances"][0]["numa"] == "unknown (version unknown: no flag passed)"


def test_a_command_the_wrapper_refuses_is_said():
    bad = [{"name": "x", "npus": [0], "binding": "host", "command": ["vllm", "--numa-bind", "--device-ids", "3"]}]
    found = report_of(_facts("0.34.0"), bad)["hosts"][0]["vllm_instances"]["instances"][0]
    assert found["numa"].startswith("refused by the wrapper: command: --numa-bind")
    assert found["rank_devices"].startswith("refused: command: --device-ids 3: index 3")


def test_a_stated_vllm_version_wins_for_its_instance():
    stated = [dict(INSTANCES[0], vllm_version="0.19.1")]
    found = report_of(_facts("0.34.0"), stated)["hosts"][0]["vllm_instances"]["instances"][0]
    assert (found["vllm"], found["numa"]) == ("0.19.1", "none (vLLM before 0.20.0 has no NUMA binding)")
