# -*- coding: utf-8 -*-
"""The report leads with what is real: info notes (assumed vllm-ascend versions, optional CPU
facts) sit below the fold, in their own collapsed table, on both pages; the problems table
holds the errors and warnings only."""

import re

from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis as fr
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as report_markdown
from npuops_testing import cpu_hosts


def _report():
    facts = cpu_hosts.a2()
    facts["vllm_ascend"] = None  # nothing found: the newest release is assumed
    return fr.build_report(
        {
            "h910a": {
                "facts": facts,
                "plan_strict": dispatch.make_plan(facts, device_type="910A", npus=[0]),
                "plan_vllm_ascend": dispatch.make_plan(facts, "vllm_ascend", device_type="910A", npus=[0]),
            }
        }
    )


def test_html_problems_table_has_no_info_row_and_the_notes_are_folded():
    report = _report()
    severities = [p["severity"] for p in report["problems"]]
    assert "info" in severities and "error" not in severities
    page = report_html.render_html(report)
    table = page[page.index('<table id="problems-table">') :]
    table = table[: table.index("</table>")]
    assert 'data-severity="info"' not in table
    notes = page[page.index('<details id="info-notes">') :]
    notes = notes[: notes.index("</details>")]
    count = sum(1 for g in report["problem_groups"] if report["problems"][g["problems"][0]]["severity"] == "info")
    assert re.search(r"<summary>%d info notes? \(assumed versions" % count, notes)
    assert 'data-kind="vllm_ascend_import_failure"' in notes
    assert page.index('id="problems-table"') < page.index('id="info-notes"')


def test_markdown_lists_info_notes_after_the_problems():
    md = report_markdown.render_markdown(_report())
    problems = md[md.index("## Problems") : md.index("### Info notes")]
    assert "| info |" not in problems
    notes = md[md.index("### Info notes") : md.index("## Binding drift")]
    assert "if vllm-ascend " in notes and "| info |" in notes


def test_ascend_950_is_named_as_the_readme_names_it():
    import os
    from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
    from npuops_testing import REPO, SNAPSHOTS

    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a5-950")))
    assert facts["device_type"] == "A5"  # the facts' contract keeps its code
    report = fr.build_report({"a5": {"facts": facts}})
    assert report["hosts"][0]["device_type"] == "A5"
    md = report_markdown.render_markdown(report)
    page = report_html.render_html(report)
    assert "| ascend | Ascend 950 (A5) |" in md and "<td>Ascend 950 (A5)</td>" in page
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        assert "**Ascend 950** (device type `A5`" in handle.read()


def test_fixes_name_role_variables_not_module_options():
    """An operator sets role variables: the fixes said `vllm_ascend_paths`, `pass
    vllm_ascend_version`, `restrict the plan with npus / instances` (module options)."""
    report = _report()
    fixes = dict((p["kind"], p["fix"]) for p in report["problems"])
    unknown = fixes["vllm_ascend_version_unknown"]
    assert "npuops_facts_vllm_ascend_paths" in unknown and "npuops_audit_vllm_ascend_version" in unknown
    assert (
        "npuops_vllm_binding: host" in fixes["vllm_ascend_import_failure"]
        or "0.26.0rc1 or earlier" in fixes["vllm_ascend_import_failure"]
    )
    facts = cpu_hosts.a2()
    failed = fr.build_report({"h": {"facts": facts, "plan_errors": {"strict": "no CPU left"}}})
    (plan_failed,) = [p for p in failed["problems"] if p["kind"] == "plan_failed"]
    assert "(npuops_vllm_instances, npuops_npus)" in plan_failed["fix"]


def test_an_overlap_of_an_assumed_release_is_no_red_card():
    """The design-document A2 host: vllm-ascend's pools overlap - with the newest release
    assumed (no vllm-ascend on the host). Its card was red, the report's second headline."""
    import os
    from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
    from npuops_testing import SNAPSHOTS

    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-designdoc")))
    assert facts["vllm_ascend"] is None
    entry = {
        "facts": facts,
        "plan_strict": dispatch.make_plan(facts),
        "plan_vllm_ascend": dispatch.make_plan(facts, "vllm_ascend"),
    }
    summary = fr.build_report({"h": entry})["summary"]
    assert summary["vllm_overlap_hosts"] == 1 and summary["vllm_overlap_assumed_hosts"] == 1
    page = report_html.render_html(fr.build_report({"h": entry}))
    card = page[page.rfind('<div class="card', 0, page.index('id="sum-vllm-overlap-hosts"')) :]
    card = card[: card.index("</div>")]
    assert "c-bad" not in card and "(assumed release)" in card
    named = dict(
        entry,
        plan_vllm_ascend=dispatch.make_plan(
            facts, "vllm_ascend", vllm_ascend_version=entry["plan_vllm_ascend"]["vllm_ascend"]["version"]
        ),
    )
    summary = fr.build_report({"h": named})["summary"]
    assert summary["vllm_overlap_hosts"] == 1 and summary["vllm_overlap_assumed_hosts"] == 0
