# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet Topology Manager's hint merge, as the kubelet of a given version does it - a
reading of ``pkg/kubelet/cm/topologymanager`` (``policy.go`` mergePermutation /
filterProvidersHints / the hint merger, ``policy_none.go``, ``policy_best_effort.go``,
``policy_restricted.go``, ``policy_single_numa_node.go`` filterSingleNumaHints,
``numa_info.go`` Narrowest / Closest, ``bitmask/bitmask.go`` IsNarrowerThan), checked against
its own Go test tables (tests/fixtures/kubelet/topology_policy_merge.yml).

A hint is ``(mask, preferred)``: ``mask`` a frozenset of NUMA node ids or None (no
preference, "any node"). A provider's hints are a list, None for "no preference", [] for
"cannot be satisfied".

What changed between kubelet versions is a row of ``MERGE_RULES`` (``rule_for(version)``),
never an ``if`` on a version number here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
MAX_PERMUTATIONS = 1 << 20  # the merge walks every permutation, as the kubelet does: bounded here

# (first kubelet version, rule, what the kubelet does, where it is written). The first row whose
# version is <= the node's kubelet applies; an unknown version takes the newest row.
MERGE_RULES = (
    (
        (1, 0),
        "all-preferred",
        "a merged hint is preferred when every hint in the permutation is; among non-preferred "
        "merged hints the narrowest wins",
        "pkg/kubelet/cm/topologymanager/policy.go mergePermutation / mergeFilteredHints (v1.23 and "
        "before; stored at 09690029935f)",
    ),
    (
        (1, 24),
        "equal-masks",
        "a merged hint is preferred only when every hint is preferred AND every non-nil mask is the "
        "same (kubernetes PR #108052); among non-preferred merged hints the one whose node count is "
        "nearest to, not above, the largest of the providers' narrowest counts wins "
        "(bestNonPreferredAffinityCount, kubernetes PR #108154); equally good masks: Narrowest, or "
        "Closest with prefer-closest-numa-nodes (v1.26+, not under single-numa-node)",
        "pkg/kubelet/cm/topologymanager/policy.go mergePermutation / maxOfMinAffinityCounts / "
        "HintMerger.compare, numa_info.go Narrowest / Closest (v1.24+; the HintMerger form v1.26+)",
    ),
)
DEFAULT_RULE = MERGE_RULES[-1][1]


def version_tuple(version):
    """``v1.33.2`` / ``1.33`` -> (1, 33); None when absent or unreadable."""
    match = re.match(r"^v?([0-9]{1,3})\.([0-9]{1,3})", str(version or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def rule_for(version):
    """The merge rule name of a kubelet version (the newest for an unknown one)."""
    key = version_tuple(version)
    if key is None:
        return DEFAULT_RULE
    chosen = MERGE_RULES[0][1]
    for first, name, dummy, dummy2 in MERGE_RULES:
        if key >= first:
            chosen = name
    return chosen


def _value(mask):
    return sum(1 << n for n in mask)


def narrower(a, b):
    """bitmask IsNarrowerThan: fewer nodes, or as many with the lower mask value."""
    return (len(a), _value(a)) < (len(b), _value(b))


def average_distance(distances, mask):
    """numa_info.go CalculateAverageFor: the mean of distance[i][j] over every pair (i, j) of
    the mask, itself included; 0 for an empty mask. ``distances``: {node: {node: int}}."""
    if not mask:
        return 0.0
    total = 0
    for i in mask:
        row = (distances or {}).get(i) or {}
        for j in mask:
            total += row.get(j, 0)
    return total / float(len(mask) ** 2)


def narrowest(a, b):
    return a if narrower(a, b) else b


def closest(distances, a, b):
    """numa_info.go Closest: the narrower of two masks of different sizes; of two equal sizes
    the lower average distance, then the lower mask value."""
    if len(a) != len(b):
        return narrowest(a, b)
    da, db = average_distance(distances, a), average_distance(distances, b)
    if da == db:
        return a if _value(a) < _value(b) else b
    return a if da < db else b


def max_of_min_counts(lists):
    """maxOfMinAffinityCounts: per provider, the node count of its narrowest non-nil hint
    (preferred or not); the largest of those, 0 when none."""
    best = 0
    for hints in lists:
        masks = [m for m, dummy in hints if m is not None]
        if masks:
            narrow = masks[0]
            for mask in masks[1:]:
                if narrower(mask, narrow):
                    narrow = mask
            best = max(best, len(narrow))
    return best


class Merger(object):
    """One merge: the nodes, the rule, the options (``closest``: prefer-closest-numa-nodes with
    its distance table) and the providers' best-non-preferred count."""

    def __init__(self, nodes, lists, rule=DEFAULT_RULE, distances=None, closest_numa=False):
        if rule not in [r[1] for r in MERGE_RULES]:
            raise PlanError("topology merge: unknown rule %r" % (rule,))
        self.everything = frozenset(nodes)
        self.lists = lists
        self.rule = rule
        self.distances = distances
        self.closest_numa = bool(closest_numa)
        self.best_count = max_of_min_counts(lists)

    def permutation(self, combo):
        """mergePermutation: the AND of the masks (nil = every node) and its preference."""
        mask, preferred, first = self.everything, True, None
        for hint_mask, hint_preferred in combo:
            if hint_mask is not None:
                mask = mask & hint_mask
                if first is None:
                    first = hint_mask
                elif self.rule == "equal-masks" and hint_mask != first:
                    preferred = False
            if not hint_preferred:
                preferred = False
        return mask, preferred

    def fitter(self, current, candidate):
        """CompareNUMAAffinityMasks: True when ``candidate`` replaces ``current``."""
        if candidate[0] == current[0]:
            return False
        if self.closest_numa:
            best = closest(self.distances, current[0], candidate[0])
        else:
            best = narrowest(current[0], candidate[0])
        return best != current[0]

    def better(self, current, candidate):
        """True when ``candidate`` replaces ``current`` (None: no best yet)."""
        if not candidate[0]:
            return False
        if current is None:
            return True
        if candidate[1] != current[1]:
            return candidate[1]
        if current[1] or self.rule == "all-preferred":
            return self.fitter(current, candidate)
        # both non-preferred: as near to the providers' best count as can be, never above
        best, cur, cand = self.best_count, len(current[0]), len(candidate[0])
        if cur > best:
            return self.fitter(current, candidate)
        if cur == best:
            return cand == best and self.fitter(current, candidate)
        if cand > best:
            return False
        if cand == best:
            return True
        if cand != cur:
            return cand > cur
        return self.fitter(current, candidate)

    def merge(self):
        count = 1
        for hints in self.lists:
            count *= max(1, len(hints))
        if count > MAX_PERMUTATIONS:
            raise PlanError(
                "topology merge: %d hint permutations over %d NUMA nodes, more than the %d "
                "the what-if walks" % (count, len(self.everything), MAX_PERMUTATIONS)
            )
        best = None
        for combo in _product(self.lists):
            candidate = self.permutation(combo)
            if self.better(best, candidate):
                best = candidate
        return best if best is not None else (self.everything, False)


def _product(lists):
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for tail in _product(lists[1:]):
            yield (head,) + tail


def filter_providers(providers):
    """filterProvidersHints on lists: None (no preference) -> one preferred any-node hint;
    [] (cannot be satisfied) -> one non-preferred any-node hint."""
    out = []
    for hints in providers:
        if hints is None:
            out.append([(None, True)])
        elif not hints:
            out.append([(None, False)])
        else:
            out.append([(frozenset(m) if m is not None else None, bool(p)) for m, p in hints])
    return out


def filter_single_numa(lists):
    """filterSingleNumaHints: each provider keeps only its preferred any-node or one-node hints."""
    return [[h for h in hints if h[1] and (h[0] is None or len(h[0]) == 1)] for hints in lists]


def merge_hints(policy, providers, nodes, version=None, distances=None, closest_numa=False, rule=None):
    """``(mask, preferred, admit)`` of ``policy`` over ``providers`` (each a hint list, or
    None). ``none`` merges nothing (mask None, not preferred, admitted: no alignment);
    ``single-numa-node`` reports an any-node result as None; ``restricted`` and
    ``single-numa-node`` admit only a preferred result."""
    if policy not in POLICIES:
        raise PlanError("topology merge: unknown policy %r (one of %s)" % (policy, ", ".join(POLICIES)))
    if policy == "none":
        return None, False, True
    lists = filter_providers(providers)
    if policy == "single-numa-node":
        lists = filter_single_numa(lists)
        closest_numa = False  # the kubelet compares single-node masks by Narrowest only
    merger = Merger(nodes, lists, rule or rule_for(version), distances, closest_numa)
    mask, preferred = merger.merge()
    if policy == "single-numa-node" and mask == merger.everything:
        mask = None
    return mask, preferred, policy == "best-effort" or preferred


def merge_provider_maps(policy, providers, nodes, **kwargs):
    """The same from the kubelet's own input shape: each provider a map resource -> hints
    (None or {} = no preference at all; a resource's None = no preference, [] = cannot be
    satisfied; a hint ``(nodes, preferred)``)."""
    lists = []
    for provider in providers:
        if not provider:
            lists.append(None)
            continue
        for dummy, hints in sorted(provider.items()):
            lists.append(
                None if hints is None else [(frozenset(m) if m is not None else None, bool(p)) for m, p in hints]
            )
    return merge_hints(policy, lists, nodes, **kwargs)
