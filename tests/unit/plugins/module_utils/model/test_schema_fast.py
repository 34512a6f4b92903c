# -*- coding: utf-8 -*-
"""The compiled checks of model/spec.py (``compile_spec``) against the reference walk
(``spec._check``, the one place that words a problem): the same answer on real topologies and
plans, on mutated ones and on random values at every position of the specs; make_plan's check
of the fields it reads (``schema.PLANNER_INPUT``) with check_topology's messages; the depth
bound (``yaml_subset.check_depth``) against its first form."""
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError, NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, yaml_subset
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema, spec, topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.modules import npu_cpu_plan
from npuops_testing import SNAPSHOTS, cpu_hosts
from npuops_testing.hostile import HOSTILE_VALUES, fuzz_examples, mutated_value

SETTINGS = settings(max_examples=fuzz_examples(300), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
SPECS = {"topology": schema.TOPOLOGY, "planner": schema.PLANNER_INPUT, "plan": schema.PLAN}
FITS = dict((name, spec.compile_spec(value)) for name, value in SPECS.items())


def slow_ok(value, which):
    problems = []
    spec._check(value, SPECS[which], "", problems)
    return not problems


def _topologies():
    out = {"a2": cpu_hosts.a2(), "a2-busy": cpu_hosts.a2(busy=(1, 3), numa_node=True),
           "a3": cpu_hosts.a3(), "a3-affinity": cpu_hosts.a3(affinity="0-639"),
           "a2-real": cpu_hosts.a2_real(), "a5": cpu_hosts.a5()}
    for host in sorted(os.listdir(SNAPSHOTS)):
        if os.path.isfile(os.path.join(SNAPSHOTS, host, "snapshot.yml")):
            out[host] = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, host)))
    return out


def _plans():
    out = {}
    for name, facts in TOPOLOGIES.items():
        for policy in dispatch.POLICIES:
            try:
                out["%s/%s" % (name, policy)] = dispatch.make_plan(facts, policy)
            except NpuopsError:
                continue
    return out


TOPOLOGIES = _topologies()
PLANS = _plans()


class Text(str):
    pass


class Number(int):
    pass


class Mapping(dict):
    pass


def _subspecs(value, out):
    """Every spec nested in ``value`` (OPT wrappers and records' fields included)."""
    out.append(value)
    kind = value[0]
    if kind in (spec.OPT, spec.LIST):
        _subspecs(value[1], out)
    elif kind == spec.MAP:
        _subspecs(value[2], out)
    elif kind == spec.RECORD:
        for sub in value[1].values():
            _subspecs(sub, out)
    return out


SUBSPECS = []
for _spec in SPECS.values():
    _subspecs(_spec, SUBSPECS)

# values for every position: JSON types, the bounds of the leaves, subclasses
LEAVES = st.sampled_from(
    HOSTILE_VALUES + [0, 1, 7, 4095, 4096, (1 << 31) - 1, 1 << 31, -2, 2.0, "7", "0012",
                      "4095", "4096", "123456789", "1234567890", "\uff11", "\u0663", "0-3,8",
                      Text("5"), Number(3), Number(-1)])
JSON = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["0", "1", "07", "x", "logic_id", "affinity", "pool",
                                         "numa_node", "processes", "cpu", "npus", "0-1"]),
                        inner, max_size=4),
        st.builds(Mapping, st.dictionaries(st.sampled_from(["0", "logic_id", "pool"]), inner,
                                           max_size=3))),
    max_leaves=12)


def test_real_inputs_fit():
    for name, facts in TOPOLOGIES.items():
        assert FITS["topology"](facts) and slow_ok(facts, "topology"), name
        assert FITS["planner"](facts) and slow_ok(facts, "planner"), name
    for name, plan in PLANS.items():
        assert FITS["plan"](plan) and slow_ok(plan, "plan"), name
    assert len(PLANS) >= 6


@SETTINGS
@given(st.sampled_from(sorted(TOPOLOGIES)).flatmap(lambda h: mutated_value(TOPOLOGIES[h])))
def test_mutated_topologies_agree(facts):
    assert FITS["topology"](facts) == slow_ok(facts, "topology")
    assert FITS["planner"](facts) == slow_ok(facts, "planner")


@SETTINGS
@given(st.sampled_from(sorted(PLANS)).flatmap(lambda h: mutated_value(PLANS[h])))
def test_mutated_plans_agree(plan):
    assert FITS["plan"](plan) == slow_ok(plan, "plan")


@SETTINGS
@given(st.sampled_from(SUBSPECS), JSON)
def test_random_values_agree_at_every_position(sub, value):
    problems = []
    spec._check(value, sub, "", problems)
    assert spec.compile_spec(sub)(value) == (not problems)


def _npus(*records):
    facts = cpu_hosts.a2()
    facts["npus"] = [dict(facts["npus"][0], **record) for record in records]
    return facts


@pytest.mark.parametrize("facts, fits", [
    (_npus({"logic_id": True}), False),
    (_npus({"logic_id": Number(2)}), True),
    (_npus({"logic_id": (1 << 31) - 1}), True),
    (_npus({"logic_id": 1 << 31}), False),
    (_npus({"logic_id": 0}, {"numa_node": -1}), True),
    (_npus({"logic_id": 0}, {"numa_node": -2}), False),
    (_npus({"logic_id": 0}, {"affinity": ["1", 2, Text("3")]}), True),
    (_npus({"logic_id": 0}, {"affinity": [True]}), False),
    (_npus({"logic_id": 0}, {"affinity": ["\u00b2"]}), False),
    (_npus({"logic_id": 0}, {"processes": [None, {}]}), True),
    (_npus({"logic_id": 0}, {"processes": [1]}), False),
    (_npus({"logic_id": 0}, {"processes": [[]] * (spec.MAX_ITEMS + 1)}), False),
    (_npus({"logic_id": 0}, Mapping(logic_id=1)), True),
    (_npus({"logic_id": 0}, Mapping(logic_id="1")), False),
    (dict(cpu_hosts.a2(), npus=[{"affinity": "0-3"}]), False),       # logic_id is required
    (dict(cpu_hosts.a2(), npus=[{"logic_id": None}]), False),
    (dict(cpu_hosts.a2(), cpu={"numa_nodes": {"0012": "0-3", "4096": "4"}}), True),
    (dict(cpu_hosts.a2(), cpu={"numa_nodes": {"\uff11": "0-3"}}), False),
    (dict(cpu_hosts.a2(), cpu={"numa_nodes": {1: "0-3"}}), False),
    (dict(cpu_hosts.a2(), npu_map={"0": {"0": "0012", "1": 5, "2": None}, "1": None}), True),
    (dict(cpu_hosts.a2(), npu_map={"0": {"0": "1234567890"}}), False),
    (dict(cpu_hosts.a2(), npu_map={"0": Mapping({"0": "x"})}), False),
    (dict(cpu_hosts.a2(), npu_map={"0": []}), False),
    (dict(cpu_hosts.a2(), visible_devices={"X": [1]}), False),
])
def test_edges_agree(facts, fits):
    for which in ("topology", "planner"):
        assert FITS[which](facts) == slow_ok(facts, which) == fits, which


def test_planner_input_is_topology_less_the_unread_fields():
    def fields(value, prefix=""):
        kind = value[0]
        if kind in (spec.OPT, spec.LIST):
            return fields(value[1], prefix)
        if kind != spec.RECORD:
            return set()
        out = set()
        for name, sub in value[1].items():
            out.add(prefix + name)
            out |= fields(sub, prefix + name + ".")
        return out
    every, read = fields(schema.TOPOLOGY), fields(schema.PLANNER_INPUT)
    unread = set(schema.UNREAD_BY_PLANNERS)
    assert unread <= every
    assert read == set(f for f in every if not any(f == u or f.startswith(u + ".") for u in unread))
    # the fields make_plan reads of an NPU
    npu_fields = fields(schema.PLANNER_INPUT[1]["npus"])
    assert npu_fields == {"logic_id", "numa_node", "affinity", "processes"}
    with pytest.raises(ValueError):
        schema._without(schema.TOPOLOGY, ["npus", "nothing", "deeper"])


def _field(message):
    """``npus.npu_id`` of ``topology: npus[0].npu_id: expected ...``."""
    field = message.split(": ", 2)[1]
    return re.sub(r"\[[^\]]*\]", "", field)


@SETTINGS
@given(st.sampled_from(sorted(TOPOLOGIES)).flatmap(lambda h: mutated_value(TOPOLOGIES[h])))
def test_planner_check_words_problems_as_check_topology(facts):
    try:
        schema.check_topology(facts)
        whole = None
    except InputError as err:
        whole = str(err)
    try:
        schema.check_planner_input(facts)
        planner = None
    except InputError as err:
        planner = str(err)
    if planner is not None:
        assert planner == whole
    elif whole is not None:
        # what make_plan lets pass is a field it does not read, or nesting below one
        assert "nested deeper than" in whole or any(
            (_field(whole) + ".").startswith(path + ".") for path in schema.UNREAD_BY_PLANNERS), whole


def test_make_plan_checks_what_it_reads_and_modules_the_whole_facts():
    facts = cpu_hosts.a2()
    facts["npus"][0]["hbm_total_mb"] = "x"     # read by no planner
    assert dispatch.make_plan(facts, "vllm_ascend") == \
        dispatch.make_plan(cpu_hosts.a2(), "vllm_ascend")
    words = "topology: npus[0].hbm_total_mb: expected an integer from 0 to 2147483647, got 'x'"
    with pytest.raises(InputError) as err:
        dispatch.make_plan(facts, "vllm_ascend", full_check=True)
    assert str(err.value) == words

    class Module(object):
        params = {"topology": facts, "policy": "strict", "npus": None, "instances": None,
                  "device_type": None, "allowed_cpus": None, "reserved_cpus": None,
                  "nics": None, "nics_regex": None, "frontend_cpus": None}
    with pytest.raises(InputError) as err:
        npu_cpu_plan.plan_host(Module())
    assert str(err.value) == words
    facts["npus"][0]["hbm_total_mb"] = 1
    assert npu_cpu_plan.plan_host(Module())["plan"] == dispatch.make_plan(facts)


@pytest.mark.parametrize("facts, words", [
    ({"vendor": "ascend", "npus": [{"logic_id": "x"}]},
     "topology: npus[0].logic_id: expected an integer from 0 to 2147483647, got 'x'"),
    # a field make_plan does not read, before one it reads: the first problem of the facts
    ({"schema_version": "2", "npus": [{"logic_id": "x"}]},
     "topology: schema_version: expected an integer from 0 to 2147483647, got '2'"),
    ({"cpu": {"numa_nodes": {"0": "0-3"}, "allowed_source": ["self"]}},
     "topology: cpu.allowed_source: expected a string, got list"),
    ({"npus": [{"logic_id": 0, "affinity": [[[]]]}]},
     "topology: npus[0].affinity: expected a cpulist such as \"0-3,8\", got [[[]]]"),
])
def test_make_plan_messages(facts, words):
    for full_check in (False, True):
        with pytest.raises(InputError) as err:
            dispatch.make_plan(facts, full_check=full_check)
        assert str(err.value) == words


def _depth_before(value, source):
    """check_depth as it was written first: every value of every level, 32 levels."""
    level = [value]
    for dummy in range(yaml_subset.MAX_DEPTH):
        level = [v for item in level if isinstance(item, (dict, list))
                 for v in (item.values() if isinstance(item, dict) else item)]
    return not any(isinstance(item, (dict, list)) for item in level)


def _nested(depth, leaf):
    value = leaf
    for level in range(depth):
        value = [value, 1] if level % 2 else {"k": value, "s": "x"}
    return value


@SETTINGS
@given(st.integers(0, 40), st.sampled_from([1, [], {}, [1], {"a": {}}, "x"]), JSON)
def test_depth_bound_as_before(depth, leaf, other):
    for value in (_nested(depth, leaf), [other, _nested(depth, leaf)], other):
        try:
            yaml_subset.check_depth(value, "x")
            fits = True
        except yaml_subset.SnapshotError as err:
            assert str(err).endswith("x: nested deeper than 32 levels")
            fits = False
        assert fits == _depth_before(value, "x"), depth
