# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each kubelet version accepts of the keys the kubelet profile writes: the one table.

Every fact below is a row citing the kubelet file it comes from (kubernetes/kubernetes, read
at the tags named). A behaviour that changed between versions is a row with a version, never
an ``if`` in a planner; ``kubelet/plan/profile`` and ``kubelet/plan/checks`` only look rows up.

- ``GATES``: feature gate -> steps ``(since, maturity, default)``
  (pkg/features/kube_features.go and, from v1.31, its versioned specs, which carry the history);
- ``OPTIONS``: ``(field, option)`` -> steps ``(since, maturity)``: the option is unknown before
  its first step ("unknown CPU Manager Policy option"); alpha needs the group's Alpha gate,
  beta its Beta gate (on by default), ga none (cm/cpumanager/policy_options.go and
  cm/topologymanager/policy_options.go, ``CheckPolicyOptionAvailable``);
- ``FIELD_GATES``: a policy-options field needs its gate on (apis/config/validation/validation.go);
- ``CONFLICTS``: options the kubelet refuses together (``NewStaticPolicyOptions``,
  ``ValidateStaticPolicyOptions``);
- ``FIELDS``: the other keys the profile writes, with the version they appeared in;
- ``TOPOLOGY_NODE_LIMIT``: the Topology Manager refuses any policy but ``none`` on more NUMA
  nodes than this unless ``max-allowable-numa-nodes`` raises it (topologymanager/
  topology_manager.go ``NewManager``, ``defaultMaxAllowableNUMANodes``).

Provenance: kubernetes/kubernetes (1.9 GB) could not be fetched whole here, so no file was
read at a tag checkout. Each row was read from the stored versions of the file it names (the
commits are listed in docs/kubernetes.md) and from the versioned feature-gate specs, which
carry each gate's history; the version in a row is the release the change landed in, taken
from those specs, the KEP or the release's documentation where the stored file was between
tags.

Versions are ``(major, minor)``; ``parse_version`` reads ``v1.33.2``, ``1.33`` or
``Kubernetes v1.33.2-eks``. ``KNOWN`` runs from 1.26 to ``NEWEST``; a newer kubelet is judged by
the newest row (options are not taken back once GA), with a warning from the caller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

KNOWN = tuple((1, minor) for minor in range(26, 37))
OLDEST, NEWEST = KNOWN[0], KNOWN[-1]
ALPHA, BETA, GA = "alpha", "beta", "ga"
CPU_OPTIONS, TOPOLOGY_OPTIONS = "cpuManagerPolicyOptions", "topologyManagerPolicyOptions"

_K = "kubernetes/kubernetes "
SRC_CPU_OPTIONS = _K + "pkg/kubelet/cm/cpumanager/policy_options.go"
SRC_TM_OPTIONS = _K + "pkg/kubelet/cm/topologymanager/policy_options.go"
SRC_FEATURES = _K + "pkg/features/kube_features.go (versioned specs)"
SRC_VALIDATION = _K + "pkg/kubelet/apis/config/validation/validation.go"
SRC_TM = _K + "pkg/kubelet/cm/topologymanager/topology_manager.go NewManager"

# gate -> ((since, maturity, default on), ...)
GATES = {
    "CPUManagerPolicyOptions": (((1, 22), ALPHA, False), ((1, 23), BETA, True), ((1, 33), GA, True)),
    "CPUManagerPolicyAlphaOptions": (((1, 23), ALPHA, False),),
    "CPUManagerPolicyBetaOptions": (((1, 23), BETA, True),),
    "TopologyManagerPolicyOptions": (((1, 26), ALPHA, False), ((1, 28), BETA, True), ((1, 32), GA, True)),
    "TopologyManagerPolicyAlphaOptions": (((1, 26), ALPHA, False),),
    "TopologyManagerPolicyBetaOptions": (((1, 26), BETA, False), ((1, 28), BETA, True)),
    "MemoryManager": (((1, 21), ALPHA, False), ((1, 22), BETA, True), ((1, 32), GA, True)),
}
GATE_SOURCE = SRC_FEATURES + " at v1.31-v1.35; the 1.26-1.30 values from the plain specs of those tags"

# the gate an option of each maturity needs, per field
MATURITY_GATES = {
    CPU_OPTIONS: {ALPHA: "CPUManagerPolicyAlphaOptions", BETA: "CPUManagerPolicyBetaOptions"},
    TOPOLOGY_OPTIONS: {ALPHA: "TopologyManagerPolicyAlphaOptions", BETA: "TopologyManagerPolicyBetaOptions"},
}
FIELD_GATES = {CPU_OPTIONS: "CPUManagerPolicyOptions", TOPOLOGY_OPTIONS: "TopologyManagerPolicyOptions"}

# (field, option) -> {"steps": ((since, maturity), ...), "source": ..., "kep": ...}
OPTIONS = {
    (CPU_OPTIONS, "full-pcpus-only"): {
        "steps": (((1, 22), ALPHA), ((1, 23), BETA), ((1, 33), GA)),
        "kep": "KEP-2625",
        "source": SRC_CPU_OPTIONS + " v1.26.0 (betaOptions), v1.33.0 (stableOptions)",
    },
    (CPU_OPTIONS, "distribute-cpus-across-numa"): {
        "steps": (((1, 23), ALPHA), ((1, 33), BETA)),
        "kep": "KEP-2902",
        "source": SRC_CPU_OPTIONS + " v1.26.0 (alphaOptions), v1.33.0 (betaOptions)",
    },
    (CPU_OPTIONS, "align-by-socket"): {
        "steps": (((1, 25), ALPHA),),
        "kep": "KEP-3327",
        "source": SRC_CPU_OPTIONS + " v1.26.0 to v1.35 (alphaOptions)",
    },
    (CPU_OPTIONS, "distribute-cpus-across-cores"): {
        "steps": (((1, 31), ALPHA),),
        "kep": "KEP-4176",
        "source": SRC_CPU_OPTIONS + " v1.31.0 to v1.35 (alphaOptions)",
    },
    (CPU_OPTIONS, "strict-cpu-reservation"): {
        "steps": (((1, 32), ALPHA), ((1, 33), BETA), ((1, 35), GA)),
        "kep": "KEP-4540",
        "source": SRC_CPU_OPTIONS
        + (" v1.32.0 (alphaOptions), v1.33.0 (betaOptions), v1.35.0 (stableOptions; k/k PR #134388)"),
    },
    (CPU_OPTIONS, "prefer-align-cpus-by-uncorecache"): {
        "steps": (((1, 32), ALPHA), ((1, 34), BETA), ((1, 36), GA)),
        "kep": "KEP-4800",
        "source": SRC_CPU_OPTIONS
        + (
            " v1.32.0 (alphaOptions), v1.34.0 (betaOptions); GA 1.36 "
            "per the kubernetes/website cpu-management-policies page"
        ),
    },
    (TOPOLOGY_OPTIONS, "prefer-closest-numa-nodes"): {
        "steps": (((1, 26), ALPHA), ((1, 28), BETA), ((1, 32), GA)),
        "kep": "KEP-3545",
        "source": SRC_TM_OPTIONS + (" v1.26.0 (alphaOptions), v1.28.0 (betaOptions), v1.32.0 (stableOptions)"),
    },
    (TOPOLOGY_OPTIONS, "max-allowable-numa-nodes"): {
        "steps": (((1, 31), BETA), ((1, 35), GA)),
        "kep": "KEP-4622",
        "source": SRC_TM_OPTIONS
        + (" v1.31.0 (betaOptions; a pre-release commit had it in alphaOptions), v1.35.0 (stableOptions)"),
    },
}

# options the kubelet refuses together: (a, b, since, source); b may be a topology policy
CONFLICTS = (
    ("full-pcpus-only", "distribute-cpus-across-cores", (1, 31), SRC_CPU_OPTIONS + " NewStaticPolicyOptions v1.31.0"),
    (
        "distribute-cpus-across-numa",
        "distribute-cpus-across-cores",
        (1, 31),
        SRC_CPU_OPTIONS + " NewStaticPolicyOptions v1.31.0",
    ),
    (
        "prefer-align-cpus-by-uncorecache",
        "distribute-cpus-across-cores",
        (1, 32),
        SRC_CPU_OPTIONS + " NewStaticPolicyOptions v1.32.0",
    ),
    (
        "prefer-align-cpus-by-uncorecache",
        "distribute-cpus-across-numa",
        (1, 32),
        SRC_CPU_OPTIONS + " NewStaticPolicyOptions v1.32.0",
    ),
    (
        "align-by-socket",
        "topologyManagerPolicy=single-numa-node",
        (1, 25),
        SRC_CPU_OPTIONS + " ValidateStaticPolicyOptions v1.26.0",
    ),
)

# the other keys the profile writes: key -> (since, source)
FIELDS = {
    "cpuManagerPolicy": ((1, 10), _K + "pkg/kubelet/apis/config/types.go; CPUManager GA v1.26.0"),
    "reservedSystemCPUs": ((1, 17), SRC_VALIDATION + " (with systemReservedCgroup/kubeReservedCgroup: refused)"),
    "topologyManagerPolicy": ((1, 18), _K + "pkg/kubelet/apis/config/types.go; TopologyManager GA v1.27.0"),
    "topologyManagerScope": ((1, 20), _K + "pkg/kubelet/apis/config/types.go"),
    "memoryManagerPolicy": ((1, 21), _K + "pkg/kubelet/cm/memorymanager/memory_manager.go; MemoryManager GA v1.32.0"),
    "reservedMemory": ((1, 21), _K + "pkg/kubelet/cm/memorymanager/memory_manager.go validateReservedMemory"),
    "featureGates": ((1, 10), _K + "pkg/kubelet/apis/config/types.go"),
    "mergeDefaultEvictionSettings": (
        (1, 33),
        _K + "cmd/kubelet/app/server.go loadConfigFile (k/k PR #127577, merged for v1.33)",
    ),
}
CPU_POLICIES = ("none", "static")
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_SCOPES = ("container", "pod")
MEMORY_POLICIES = ("None", "Static")
TOPOLOGY_NODE_LIMIT = 8
# evictionHard absent: the kubelet's default; set without memory.available: 0, unless
# mergeDefaultEvictionSettings (from 1.33) merges the defaults in
DEFAULT_EVICTION_MEMORY = "100Mi"
EVICTION_SOURCE = (
    _K + "pkg/kubelet/apis/config/v1beta1/defaults.go (EvictionHard defaulted "
    "only when nil) and cmd/kubelet/app/server.go loadConfigFile "
    "(mergeDefaultEvictionSettings from v1.33)"
)

_VERSION = re.compile(r"v?([0-9]{1,3})\.([0-9]{1,3})(?:\.[0-9]{1,4})?")


def parse_version(text):
    """``(major, minor)`` from a kubelet version text, or None when it holds none."""
    if isinstance(text, (tuple, list)) and len(text) == 2:
        return int(text[0]), int(text[1])
    match = _VERSION.search(str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def show(version):
    return "%d.%d" % version if version else "unknown"


def _step(steps, version):
    """The last step at or before ``version`` (None before the first)."""
    found = None
    for step in steps:
        if version >= step[0]:
            found = step
    return found


def gate_default(gate, version):
    """(exists, maturity, default) of ``gate`` at ``version``."""
    step = _step(GATES.get(gate, ()), version)
    if step is None:
        return False, None, False
    return True, step[1], step[2]


def gate_enabled(gate, version, gates):
    """Whether ``gate`` is on at ``version`` given the node's ``featureGates`` mapping."""
    exists, dummy, default = gate_default(gate, version)
    if not exists:
        return False
    value = (gates or {}).get(gate)
    return default if value is None else value is True or str(value).lower() == "true"


def option_maturity(field, option, version):
    """The option's maturity at ``version``, or None when that kubelet does not know it."""
    row = OPTIONS.get((field, option))
    step = _step(row["steps"], version) if row else None
    return step[1] if step else None


def option_needs(field, option, version):
    """``(known, gates)``: whether the kubelet at ``version`` knows the option, and the
    feature gates it needs on (the field's and the maturity group's)."""
    maturity = option_maturity(field, option, version)
    if maturity is None:
        return False, []
    gates = [FIELD_GATES[field]]
    group = MATURITY_GATES[field].get(maturity)
    if group:
        gates.append(group)
    return True, gates


def missing_gates(field, option, version, gates):
    """The gates ``option`` needs at ``version`` that are off on the node (None: unknown option)."""
    known, needed = option_needs(field, option, version)
    if not known:
        return None
    return [g for g in needed if not gate_enabled(g, version, gates)]


def conservative(field, option):
    """Whether every known kubelet accepts ``option`` with its default gates."""
    return all(missing_gates(field, option, v, {}) == [] for v in KNOWN)


def conflicts(version):
    """The ``CONFLICTS`` rows in force at ``version``."""
    return [row for row in CONFLICTS if version >= row[2]]


def row_source(field, option):
    row = OPTIONS.get((field, option))
    return row["source"] if row else None
