# -*- coding: utf-8 -*-
"""The vllm-ascend prediction on every host-tool state, rank by rank, per release, checked
against what each release's own ``cpu_binding.py`` did on the same command output
(tests/fixtures/vllm_ascend/host_tool_states.json: the outcomes only; the release code ran
outside the repository). The host is the recorded A2 (tests/snapshots/a2-910b3x8) (the A3 of
tests/snapshots/a3-16die for the ambiguous table) with two workers, its commands changed per
state as below; the facts are gathered from that snapshot
as npu_topology_facts gathers them, then ``make_plan(policy=vllm_ascend)`` predicts."""

import json
import os
import re
import shutil

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.plan import releases as rel
from npuops_testing import REPO

SNAPSHOTS = os.path.join(REPO, "tests", "snapshots")
with open(os.path.join(REPO, "tests", "fixtures", "vllm_ascend", "host_tool_states.json")) as _f:
    OUTCOMES = json.load(_f)
STATES = {
    # workers on NPUs 0 and 1, ASCEND_RT_VISIBLE_DEVICES=0,1; the recorded -m has Mcu rows
    "mcu_rows": dict(npus=[0, 1], visible="0,1"),
    "npu_smi_missing": dict(npus=[0, 1], visible="0,1", missing=True),
    "map_empty": dict(npus=[0, 1], visible="0,1", map_text=""),
    # '| NPU | Process id |' without the Chip column (as some drivers print it)
    "table_without_chip": dict(npus=[0, 1], visible="0,1", chip_column=False),
    # workers on NPUs 2 and 3 and no ASCEND_RT_VISIBLE_DEVICES
    "subset_no_visible": dict(npus=[2, 3], visible=None),
    # the recorded A3 (two chips per card): its process table by card only, two workers on
    # card 1 (chips with logic ids 2 and 3), ASCEND_RT_VISIBLE_DEVICES=2,3
    "table_ambiguous": dict(snapshot="a3-16die", cards={1: [3002, 3003]}, visible="2,3"),
}
KNOWN_DISAGREEMENTS = set()  # (state, release) the prediction still gets wrong: none


def with_workers(info, npus, chip_column=True):
    """The process table with one worker (pid 3000+npu) on each NPU of ``npus``."""
    out = []
    for line in info.splitlines():
        match = re.match(r"^\| No running processes found in NPU (\d+)\s*\|$", line)
        if match and int(match.group(1)) in npus:
            npu = int(match.group(1))
            if chip_column:
                line = "| %-6d%-20d| %-14d| %-25s| %-24d|" % (npu, 0, 3000 + npu, "python3", 3000)
            else:
                line = "| %-26d| %-14d| %-25s| %-24d|" % (npu, 3000 + npu, "python3", 3000)
        if not chip_column and line.startswith("| NPU") and "Process id" in line:
            line = "| NPU                       | Process id    | Process name             | Process memory(MB)      |"
        out.append(line)
    return "\n".join(out) + "\n"


def by_card(info, cards):
    """The process table rebuilt with the card column only: ``cards`` {card: [pid, ...]}."""
    lines = info.splitlines()
    head = [i for i, line in enumerate(lines) if line.startswith("| NPU") and "Process id" in line]
    rule = lines[head[0] + 1]
    out = lines[: head[0]] + [
        "| NPU                       | Process id    | Process name             | Process memory(MB)      |",
        rule,
    ]
    for card in range(8):
        pids = cards.get(card)
        if pids:
            out.extend("| %-26d| %-14d| %-25s| %-24d|" % (card, pid, "python3", 3000) for pid in pids)
        else:
            out.append("| No running processes found in NPU %d%s|" % (card, " " * 61))
        out.append(rule)
    return "\n".join(out) + "\n"


def state_facts(tmp_path, name):
    state = STATES[name]
    snap = str(tmp_path / "snap")
    shutil.copytree(os.path.join(SNAPSHOTS, state.get("snapshot", "a2-910b3x8")), snap)
    cmd = os.path.join(snap, "cmd")
    with open(os.path.join(cmd, "npu-smi-info.txt")) as handle:
        info = handle.read()
    with open(os.path.join(cmd, "npu-smi-info.txt"), "w") as handle:
        handle.write(
            by_card(info, state["cards"])
            if "cards" in state
            else with_workers(info, state["npus"], state.get("chip_column", True))
        )
    if "map_text" in state:
        with open(os.path.join(cmd, "npu-smi-info--m.txt"), "w") as handle:
            handle.write(state["map_text"])
    if state.get("missing"):
        path = os.path.join(snap, "snapshot.yml")
        with open(path) as handle:
            text = handle.read()
        text = re.sub(r'("npu-smi info[^"]*"): \{rc: 0, stdout_file: "[^"]*"\}', r"\1: {missing: true}", text)
        text = text.replace('  npu-smi: "/usr/local/bin/npu-smi"\n', "")
        with open(path, "w") as handle:
            handle.write(text)
    facts = topology.gather(hostio.SnapshotHostIO(snap))
    facts["visible_devices"]["ASCEND_RT_VISIBLE_DEVICES"] = state["visible"]
    return facts


def predict(facts, name, version):
    npus = STATES[name]["npus"] if name == "npu_smi_missing" else None
    return dispatch.make_plan(facts, "vllm_ascend", npus=npus, vllm_ascend_version=version)


def agree(plan, released):
    """Rank by rank: bound where the release bound (on the same main CPUs), not bound where it
    failed or skipped."""
    ranks = plan["vllm_ascend"]["ranks"]
    if len(ranks) != len(released):
        return False
    for rank, (number, outcome, detail) in zip(ranks, released):
        if rank["rank"] != number:
            return False
        if outcome == "bound":
            entry = plan["npus"].get(str(rank["npu"])) or {}
            if rank["outcome"] != "bound" or entry.get("main") != detail:
                return False
        elif rank["outcome"] == "bound":
            return False
    return True


@pytest.fixture(scope="module")
def facts_of(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = state_facts(tmp_path_factory.mktemp(name), name)
        return cache[name]

    return get


def test_the_outcomes_cover_every_release_and_state():
    assert sorted(k for k in OUTCOMES if not k.startswith("_")) == sorted(STATES)
    for name in STATES:
        assert sorted(OUTCOMES[name]) == sorted(rel.KNOWN_RELEASES), name


@pytest.mark.parametrize("name", sorted(STATES))
@pytest.mark.parametrize("version", rel.KNOWN_RELEASES)
def test_prediction_agrees_with_the_release_rank_by_rank(facts_of, name, version):
    plan = predict(facts_of(name), name, version)
    ok = agree(plan, OUTCOMES[name][version])
    if (name, version) in KNOWN_DISAGREEMENTS:
        assert not ok, "%s %s agrees now: drop it from KNOWN_DISAGREEMENTS" % (name, version)
    else:
        assert ok, (OUTCOMES[name][version], plan["vllm_ascend"]["ranks"])


def test_agreement_per_release(facts_of):
    """k of N per release (N = the states); the figures the docs quote."""
    for version in rel.KNOWN_RELEASES:
        k = sum(agree(predict(facts_of(n), n, version), OUTCOMES[n][version]) for n in STATES)
        assert k == len(STATES), version


def test_no_npu_smi_every_rank_is_an_error_naming_it(facts_of):
    plan = predict(facts_of("npu_smi_missing"), "npu_smi_missing", "0.30.0rc2")
    assert plan["skipped"] is True
    assert "No such file or directory: 'npu-smi'" in plan["reason"]
    assert [(r["rank"], r["outcome"], r["own_npu"]) for r in plan["vllm_ascend"]["ranks"]] == [
        (0, "error", 0),
        (1, "error", 1),
    ]


@pytest.mark.parametrize(
    "version, words",
    [
        ("0.21.0rc1", "Failed to get correct chip_logic_id from command 'npu-smi info -m'"),
        ("0.22.1rc1", "IndexError: list index out of range"),
    ],
)
def test_an_empty_map_fails_by_the_releases_parser(facts_of, version, words):
    plan = predict(facts_of("map_empty"), "map_empty", version)
    assert words in plan["reason"]
    assert set(r["outcome"] for r in plan["vllm_ascend"]["ranks"]) == {"error"}


def test_a_running_subset_without_visible_devices_from_026(facts_of):
    """0.26+ binds ASCEND_RT_VISIBLE_DEVICES[rank], i.e. NPU <rank> without the variable:
    NPUs 0 and 1 run nothing, so both ranks are skipped; 0.25 binds the running list."""
    facts = facts_of("subset_no_visible")
    new = predict(facts, "subset_no_visible", "0.26.0rc1")["vllm_ascend"]["ranks"]
    assert [(r["rank"], r["outcome"], r["own_npu"]) for r in new] == [(0, "skipped", 2), (1, "skipped", 3)]
    assert new[0]["reason"] == "Bind cpus failed in rank0: 0 Skip binding cpu."
    old = predict(facts, "subset_no_visible", "0.25.1rc1")["vllm_ascend"]["ranks"]
    assert [(r["rank"], r["npu"], r["outcome"]) for r in old] == [(0, 2, "bound"), (1, 3, "bound")]
