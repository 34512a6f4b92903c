# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's view of the vllm-ascend release a host runs: which release was predicted and
where its version came from, the rank-by-rank prediction per instance, and findings for the
release's known defects on that host (overlapping pools, skipped or failing ranks, a rank that
binds another NPU than its own, an import that fails) with the fix."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.npuops.fleet.plugins.plugin_utils.report.schema import as_dict, as_list

FIX_OFF = (
    "bind from the host: npuops_vllm_binding: host (the vllm_launch role's wrapper sets "
    "enable_cpu_binding false in vLLM's --additional-config) with npuops_cpu_policy: "
    "strict (the cpu_binding role)"
)
FIX_ORDER = (
    "launch the instance with ASCEND_RT_VISIBLE_DEVICES sorted and naming only its own "
    "NPUs, or upgrade to vllm-ascend 0.26.0rc1 or later (each rank binds its visible "
    "device)"
)
FIX_UPGRADE_HIDDEN = "upgrade vllm-ascend to 0.19.1rc1 or later (hidden NPUs keep pools apart), or " + FIX_OFF


def summarize_release(plan, facts):
    """``{version, source, group, migration, facts_version, instances: {name: [rank...]}}`` of a
    ``policy=vllm_ascend`` plan, or None when the plan has no prediction."""
    block = as_dict(as_dict(plan).get("vllm_ascend"))
    if not block:
        return None
    found = as_dict(as_dict(facts).get("vllm_ascend"))
    instances = OrderedDict()
    for rank in as_list(block.get("ranks")):
        if not isinstance(rank, dict):
            continue
        name = rank.get("instance") or "(workers now)"
        instances.setdefault(str(name), []).append(
            OrderedDict((key, rank.get(key)) for key in ("rank", "npu", "own_npu", "outcome", "reason"))
        )
    return OrderedDict(
        [
            ("version", block.get("version")),
            ("source", block.get("source")),
            ("group", block.get("group")),
            ("migration", block.get("migration")),
            ("facts_version", found.get("version")),
            ("facts_source", found.get("source")),
            ("skipped_reason", as_dict(plan).get("reason") if as_dict(plan).get("skipped") else None),
            ("instances", instances),
        ]
    )


def _problem(severity, host, kind, title, evidence, fix):
    return OrderedDict(
        [("severity", severity), ("host", host), ("kind", kind), ("title", title), ("evidence", evidence), ("fix", fix)]
    )


def release_problems(host):
    """Findings of the predicted release on one host (``host`` as ``analyse_host`` makes it)."""
    release = host.get("vllm_ascend_release")
    if not release:
        return []
    name, version = host["name"], release["version"]
    out = []
    if release["source"] == "default":
        out.append(
            _problem(
                "info",
                name,
                "vllm_ascend_version_unknown",
                "vllm-ascend version not found",
                "no vllm-ascend installation was found on the host; predicted with %s" % version,
                "name its Python environment (npuops_facts_vllm_ascend_paths, the "
                "npu_facts role) or the release to predict "
                "(npuops_audit_vllm_ascend_version)",
            )
        )
    by_outcome = {}
    for inst, ranks in release["instances"].items():
        for rank in ranks:
            by_outcome.setdefault(rank["outcome"], []).append((inst, rank))
    errors = by_outcome.get("error", [])
    if errors:
        inst, rank = errors[0]
        importing = "hardware_profile" in str(rank["reason"])
        out.append(
            _problem(
                "error",
                name,
                "vllm_ascend_import_failure" if importing else "vllm_ascend_fails",
                "vllm-ascend %s %s" % (version, "fails at import" if importing else "will fail to bind"),
                "%d rank(s), e.g. %s rank %s: %s" % (len(errors), inst, rank["rank"], rank["reason"]),
                (
                    "use a vllm-ascend release that knows this device type (0.26.0rc1 or earlier "
                    "defaults to topo_affinity)"
                    if importing
                    else FIX_OFF
                ),
            )
        )
    skipped = by_outcome.get("skipped", [])
    if skipped:
        inst, rank = skipped[0]
        out.append(
            _problem(
                "warning",
                name,
                "vllm_ascend_rank_skipped",
                "vllm-ascend %s skips CPU binding of %d rank(s)" % (version, len(skipped)),
                "; ".join(
                    "%s rank %s (NPU %s): %s" % (i, r["rank"], r["own_npu"], r["reason"]) for i, r in skipped[:4]
                ),
                FIX_ORDER if release["group"] in ("0.26.0rc1", "0.27.1rc1+", "0.30.0rc1+") else FIX_OFF,
            )
        )
    wrong = [(i, r) for i, r in by_outcome.get("bound", []) if r["own_npu"] is not None and r["npu"] != r["own_npu"]]
    if wrong:
        out.append(
            _problem(
                "warning",
                name,
                "vllm_ascend_rank_binds_other_npu",
                "vllm-ascend %s binds ranks to another NPU's CPUs" % version,
                "; ".join(
                    "%s rank %s drives NPU %s, binds NPU %s's pool" % (i, r["rank"], r["own_npu"], r["npu"])
                    for i, r in wrong[:4]
                ),
                FIX_ORDER,
            )
        )
    summary = as_dict(host.get("plans", {}).get("vllm_ascend"))
    if summary.get("overlaps"):
        fix = FIX_UPGRADE_HIDDEN if release["group"] == "0.18.x" else FIX_OFF
        out.append(
            _problem(
                "warning",
                name,
                "vllm_ascend_release_overlap",
                "vllm-ascend %s gives NPUs overlapping pools" % version,
                "%d pair(s), e.g. %s share %s"
                % (
                    len(summary["overlaps"]),
                    "/".join(summary["overlaps"][0]["devices"]),
                    summary["overlaps"][0]["cpus"],
                ),
                fix,
            )
        )
    if release["source"] == "default":
        for problem in out[1:]:
            _assumed(problem, version)
    return out


def _assumed(problem, version):
    """A finding about a release the host does not have (no vllm-ascend found, the newest
    known assumed): marked as such and ranked an info note, never an error or a warning."""
    problem["severity"] = "info"
    problem["assumed"] = True
    problem["title"] = "if vllm-ascend %s were installed: %s" % (
        version,
        problem["title"].replace("vllm-ascend %s " % version, ""),
    )
    problem["evidence"] = "assumed - no vllm-ascend was found on the host, %s is the newest release known; %s" % (
        version,
        problem["evidence"],
    )


def release_markdown(shapes, md_table, hosts_cell):
    """The Markdown section: per host shape the release predicted and where its version came
    from, then each instance's ranks (``rank: NPU outcome``)."""
    rows = []
    for shape, host in shapes:
        release = host.get("vllm_ascend_release")
        if not release:
            continue
        ranks = []
        for inst, entries in release["instances"].items():
            cells = [
                "rank %s: %s %s" % (r["rank"], "-" if r["npu"] is None else "NPU%s" % r["npu"], r["outcome"])
                for r in entries
            ]
            ranks.append("%s: %s" % (inst, ", ".join(cells)))
        rows.append(
            [
                hosts_cell(shape),
                release["version"],
                release["source"],
                release["group"],
                release["migration"],
                "; ".join(ranks) or release["skipped_reason"] or "",
            ]
        )
    if not rows:
        return []
    return ["", "## vllm-ascend release predicted, rank by rank", ""] + md_table(
        ["hosts", "release", "version from", "rules", "memory migration", "ranks"], rows
    )
