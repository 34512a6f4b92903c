# -*- coding: utf-8 -*-
"""The audit shows the rest of the process tree: each strict plan's frontend and
spare CPUs in the report data and as rows of the HTML CPU map."""

import os

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from npuops_testing import SNAPSHOTS


def _host(name, **options):
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, name)))
    return {
        "facts": facts,
        "plan_strict": dispatch.make_plan(facts, "strict", **options),
        "plan_vllm_ascend": dispatch.make_plan(facts, "vllm_ascend"),
    }


def test_frontend_and_spare_in_the_report_and_its_cpu_map():
    report = analysis.build_report(
        {
            "a2-910b3x8": _host(
                "a2-910b3x8", frontend_cpus=8, instances=[{"name": "a", "npus": [0, 1]}, {"name": "b", "npus": [4, 5]}]
            )
        }
    )
    strict = report["hosts"][0]["plans"]["strict"]
    # NPUs 0/1 (node 6) take their sibling die 7, NPUs 4/5 (node 0) node 1, capped at 8 CPUs;
    # NPUs 2, 3, 6, 7 are in no instance: their shares of nodes 5 and 3 stay frontend CPUs
    assert (strict["frontend"], strict["frontend_cpus"]) == ("24-31,72-95,120-143,168-175", 64)
    assert (strict["spare"], strict["spare_cpus"]) == ("32-47,176-191", 32)
    vllm = report["hosts"][0]["plans"]["vllm_ascend"]
    assert vllm["frontend"] == "" and vllm["spare"] == ""
    page = report_html.render_html(report)
    assert ">frontend</text>" in page and ">spare</text>" in page
    assert "frontend: 24-31" in page and "spare: 32-47" in page
