# -*- coding: utf-8 -*-
"""cpus/nodemap.NodeMap: which node a CPU is on, answered per run, against a plain dict."""

from hypothesis import given, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.cpus.nodemap import NodeMap

NODES = {"0": [0, 1, 2, 3, 8, 9], "1": [4, 5, 6, 7], "2": []}


def test_lookup_and_membership():
    nm = NodeMap(NODES)
    assert nm[0] == "0" and nm[9] == "0" and nm[5] == "1"
    assert nm.get(10) is None and nm.get(10, "x") == "x"
    assert 7 in nm and 10 not in nm


def test_runs_spanning_nodes():
    nm = NodeMap(NODES)
    assert nm.nodes([3, 4, 100]) == {"0", "1"}
    assert nm.nodes(range(4, 8)) == {"1"} and nm.nodes([3, 4]) == {"0", "1"}
    assert nm.nodes([10, 11]) == set() and nm.nodes(range(2, 10)) == {"0", "1"}
    assert nm.split([9, 8, 4, 3, 100]) == {"0": [9, 8, 3], "1": [4]}
    assert nm.counts([0, 1, 4, 9]) == {"0": 3, "1": 1}
    assert nm.first_missing([0, 4, 10, 11]) == 10 and nm.first_missing([0, 5]) is None


def test_a_cpu_on_two_nodes_belongs_to_the_later():
    nm = NodeMap({"0": [0, 1, 2], "1": [2, 3]})
    assert nm[2] == "1" and nm[1] == "0"
    assert nm.counts([0, 1, 2, 3]) == {"0": 2, "1": 2}


def test_nodes_listed_by_first_cpu():
    assert list(NodeMap({"1": [4, 5], "0": [0, 1]}).node_runs) == ["0", "1"]


@given(
    st.dictionaries(st.sampled_from("0123"), st.lists(st.integers(0, 40), max_size=12), max_size=4),
    st.lists(st.integers(0, 45), max_size=15),
)
def test_agrees_with_the_plain_dict(node_cpus, cpus):
    plain = {}
    for node, ids in node_cpus.items():
        plain.update(dict.fromkeys(ids, node))
    nm = NodeMap(node_cpus)
    assert [nm.get(c) for c in cpus] == [plain.get(c) for c in cpus]
    assert nm.nodes(cpus) == set(plain[c] for c in cpus if c in plain)
    want = {}
    for c in cpus:
        if c in plain:
            want[plain[c]] = want.get(plain[c], 0) + 1
    parts = {}
    for c in cpus:
        if c in plain:
            parts.setdefault(plain[c], []).append(c)
    assert nm.split(cpus) == parts
    missing = [c for c in cpus if c not in plain]
    first = nm.first_missing(cpus)
    assert (first is None) is (not missing) and (first is None or first in missing)
    assert nm.counts(cpus) == want


def test_every_layer_asks_the_one_map():
    """The kubelet profile's IRQ targets, the report (its pools' nodes and a pod's CPU nodes)
    and the binder name the node NodeMap names, on a layout with gaps and unsorted nodes."""
    from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import irq_targets_on_reserved
    from ansible_collections.npuops.fleet.plugins.module_utils.standalone import targets
    from ansible_collections.npuops.fleet.plugins.plugin_utils.report import kubernetes, schema

    text = {"2": "0-3,16-19", "0": "4-7", "5": "8-11,20"}
    nm = NodeMap(dict((int(n), kubernetes.cpus(t)) for n, t in text.items()))
    facts = {"cpu": {"numa_nodes": text}}
    for cpus in ([0], [4, 5], [3, 4, 8], [20, 16], [12], [11, 19, 6]):
        want = sorted(nm.nodes(cpus))
        assert schema.nodes_of(cpus, schema.node_map(facts)) == want
        assert sorted(kubernetes._node_of(facts).nodes(set(cpus))) == want
    doc = {"numa_nodes": text}
    for cpu in list(range(0, 24)) + [None]:
        assert targets.node_of(doc, cpu) == (None if cpu is None else nm.get(cpu))
    node_cpus = dict((int(n), kubernetes.cpus(t)) for n, t in text.items())
    reserved = [1, 5, 9, 16]
    moved, warnings = irq_targets_on_reserved(
        [{"irq": 100 + cpu, "device": "npu0", "cpus": [cpu]} for cpu in (2, 6, 10, 13)], reserved, node_cpus
    )
    # each IRQ goes to the reserved CPUs of its CPU's node; CPU 13 is on none
    assert [t["cpus"] for t in moved] == [[1], [5], [9], [13]]
    assert len(warnings) == 1 and "NUMA node None" in warnings[0]
