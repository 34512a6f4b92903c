# -*- coding: utf-8 -*-
"""The HTML CPU map's NUMA labels where a node's CPUs are not contiguous: the DGX A100 (nodes
N and N+4 hold SMT siblings: node 0 is 0-15,128-143) had N0-N3 missing and N4-N7 written over
other nodes' CPUs; an interleaved host (node 0 the even CPUs, node 1 the odd) had "N0" and "N1"
printed over each other ("N01")."""

import os
import re

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from npuops_testing import SNAPSHOTS

_LABEL = re.compile(
    r'<text x="([0-9.]+)" y="14" font-size="10" text-anchor="middle" '
    r'fill="#33475b">N(\d+)</text>'
)
LEFT, WIDTH, RIGHT = 92.0, 660.0, 8.0  # the map's geometry (html._svg_map)


def _first_map(host):
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))
    report = analysis.build_report({host: {"facts": facts, "plan_strict": dispatch.make_plan(facts)}})
    page = report_html.render_html(report)
    svg = page[page.index("<svg xmlns") :]
    return facts, svg[: svg.index("</svg>")]


def test_every_node_of_the_dgx_is_labelled_over_its_own_cpus():
    facts, svg = _first_map("dgx-a100")
    numa = dict((int(n), c) for n, c in facts["cpu"]["numa_nodes"].items())
    top = 256
    scale = (WIDTH - LEFT - RIGHT) / top
    labels = [(float(x), int(n)) for x, n in _LABEL.findall(svg)]
    assert sorted(set(n for _x, n in labels)) == list(range(8))
    for x, node in labels:
        cpu = int((x - LEFT) / scale)
        runs = [tuple(int(v) for v in r.split("-")) for r in numa[node].split(",")]
        assert any(first <= cpu <= last for first, last in runs), (node, cpu, numa[node])


def test_interleaved_nodes_are_not_printed_over_each_other():
    _facts, svg = _first_map("mi300x-8gpu")
    xs = sorted(float(x) for x, _n in _LABEL.findall(svg))
    assert all(b - a >= 18 for a, b in zip(xs, xs[1:]))
    assert "N0,1 interleaved" in svg


def test_node_labels_rule():
    labels, unlabelled = report_html.node_labels(
        {0: list(range(0, 16)) + list(range(128, 144)), 1: list(range(16, 32))}, 2.0
    )
    assert [n for _x, n in labels] == [0, 0, 1] and unlabelled == []
    labels, unlabelled = report_html.node_labels({0: [0, 2, 4], 1: [1, 3, 5]}, 2.0)
    assert labels == [] and unlabelled == [0, 1]
