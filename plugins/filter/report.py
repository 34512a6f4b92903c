# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet audit report filters (controller side).

- ``hosts | npuops.fleet.fleet_report(rails=None)`` -> the report dict, from
  ``{inventory_hostname: {facts, plan_strict, plan_vllm_ascend, plan_errors, facts_error}}``;
  ``rails`` is the result of ``npuops.fleet.rail_check`` over the strict plans (computed here
  with the report's host shapes when not given)
- ``report | npuops.fleet.fleet_report_markdown`` -> Markdown text
- ``report | npuops.fleet.fleet_report_json`` -> JSON text (indented, trailing newline)
- ``report | npuops.fleet.fleet_report_html`` -> one self-contained HTML page

The three renderers also accept the hosts mapping itself and build the report first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.fleet.plugins.plugin_utils.ansible_data import plain_dicts, to_plain
from ansible_collections.npuops.fleet.plugins.plugin_utils.rails import rail_check
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis as _report
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as _html
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as _markdown
from ansible_collections.npuops.fleet.plugins.plugin_utils.report.untrusted import ANALYSIS_ERRORS, screen_hosts


def fleet_report(hosts, rails=None):
    if not isinstance(hosts, dict):
        raise AnsibleFilterError(
            "fleet_report expects a mapping of host name -> {facts, %s}, got %s"
            % (", ".join("plan_" + p for p in _report.POLICIES), type(hosts).__name__)
        )
    if rails is not None and not isinstance(rails, dict):
        raise AnsibleFilterError("fleet_report: rails must be the rail_check result (a mapping)")
    hosts = screen_hosts(hosts)  # plain data; a host the report cannot read: its own row
    if rails is None:
        plans = dict(
            (name, (entry or {}).get("plan_strict") if isinstance(entry, dict) else None)
            for name, entry in hosts.items()
        )
        rails = rail_check(plans, shapes=_report.rail_shapes(hosts))
    # plain dicts: Ansible's variable storage warns on every OrderedDict
    return plain_dicts(_report.build_report(hosts, None if rails is None else to_plain(rails), screened=True))


def _as_report(value, name):
    if not isinstance(value, dict):
        raise AnsibleFilterError("%s expects the fleet_report dict, got %s" % (name, type(value).__name__))
    try:
        value = to_plain(value)
    except RecursionError:
        raise AnsibleFilterError("%s: the value is nested too deep" % name)
    if value.get("schema") == _report.REPORT_SCHEMA and "hosts" in value and "summary" in value:
        return value
    return _report.build_report(value)


def _render(render, report, name):
    report = _as_report(report, name)
    try:
        return render(report)
    except ANALYSIS_ERRORS as err:  # a report dict that fleet_report did not make
        raise AnsibleFilterError(
            "%s: the report is not the fleet_report dict (%s: %s); pass "
            "the hosts mapping or fleet_report's result" % (name, type(err).__name__, str(err)[:200])
        )


def fleet_report_markdown(report):
    return _render(_markdown.render_markdown, report, "fleet_report_markdown")


def fleet_report_json(report):
    return _render(_report.render_json, report, "fleet_report_json")


def fleet_report_html(report):
    return _render(_html.render_html, report, "fleet_report_html")


class FilterModule(object):
    """npuops.fleet fleet audit report filters."""

    def filters(self):
        return {
            "fleet_report": fleet_report,
            "fleet_report_markdown": fleet_report_markdown,
            "fleet_report_json": fleet_report_json,
            "fleet_report_html": fleet_report_html,
        }
