# -*- coding: utf-8 -*-
"""Shared test helpers of npuops.fleet, importable from every test (``pytest.ini`` puts
``tests/lib`` on ``pythonpath``; no test edits ``sys.path``).

- this package: ``REPO``, ``FIXTURES`` (tests/fixtures/real), ``SNAPSHOTS`` (tests/snapshots),
  ``COLLECTIONS`` (.cache/collections), ``fixture_text(rel)``, ``ensure_collection_link()``,
  ``module_string(path, name)`` (a module's DOCUMENTATION / EXAMPLES / RETURN text)
- ``npuops_testing.cases``: data-driven parser cases (``cases/<parser>.yml``): load, select, check
- ``npuops_testing.cpu_hosts``: topology facts dicts for the CPU planner tests (A2, A3, A5, the
  real A2 layout with its paired distance table)
- ``npuops_testing.placement_hosts``: random hosts (distance tables, packages, SMT, isolated
  CPUs, instances) for the placement properties
- ``npuops_testing.fake_io``: ``FakeIO``, a HostIO answering from dicts, and ``cpu_tree``
- ``npuops_testing.gpu_hosts``: the real ``nvidia-smi topo -m`` fixtures and the host layout
  each comes from; ``topology_of(rel)`` builds the facts the GPU planner takes
- ``npuops_testing.report_fleet``: hand-built and real-snapshot fleets for the fleet report
- ``npuops_testing.sandbox``: sandbox host trees (``irq_sandbox``)
- ``npuops_testing.hostile``: hostile inputs for the fuzz suite (mutated texts, facts, plans)
- ``npuops_testing.module_harness``: ``call_module`` runs a module's ``main()`` in-process (unit
  tier), ``expand`` the contract cases' placeholders
- ``npuops_testing.runner``: ``run_module`` / ``run_playbook`` through a real
  ``ansible-playbook`` (integration tests only)
- ``npuops_testing.fleet``: inventories of recorded hosts with sandbox roots, PLAY RECAP parsing,
  play files (integration tests only)
"""

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "real")
SNAPSHOTS = os.path.join(REPO, "tests", "snapshots")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
COLLECTION_LINK = os.path.join(COLLECTIONS, "ansible_collections", "npuops", "fleet")


def ensure_collection_link():
    """Make ``.cache/collections/ansible_collections/npuops/fleet`` a link to this checkout, so
    the collection imports as ``ansible_collections.npuops.fleet`` and Ansible finds it."""
    if not os.path.lexists(COLLECTION_LINK):
        os.makedirs(os.path.dirname(COLLECTION_LINK), exist_ok=True)
        os.symlink(os.path.join("..", "..", "..", ".."), COLLECTION_LINK)


def fixture_text(rel):
    """Text of tests/fixtures/real/<rel> without its '# Source:' first line."""
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        text = handle.read()
    if text.startswith("# Source:"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text


def module_string(path, name):
    """The string a module file assigns to ``name`` (``DOCUMENTATION``, ``EXAMPLES``, ``RETURN``),
    read from its syntax tree: whatever quotes a formatter gives it."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError("%s assigns no %s" % (path, name))
