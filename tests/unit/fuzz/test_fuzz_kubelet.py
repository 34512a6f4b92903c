# -*- coding: utf-8 -*-
"""Fuzz: kubelet_cpu_profile on mutated facts and plans of the recorded hosts, and the kubelet
profile and what-if on them, fail with a message (NpuopsError) or succeed - never a traceback."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan import whatif as kubelet_whatif
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.plan.profile import kubelet_profile
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.modules import kubelet_cpu_profile as mod
from npuops_testing import SNAPSHOTS, fixture_text
from npuops_testing.hostile import fuzz_examples, mutated_value

HOSTS = ("a2-910b3x8", "a3-16die", "dgx-a100")
PAIRS = {}
for _host in HOSTS:
    _facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, _host)))
    PAIRS[_host] = (_facts, dispatch.make_plan(_facts))
SETTINGS = settings(
    max_examples=fuzz_examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class FakeModule(object):
    def __init__(self, params):
        self.params, self.check_mode = params, True


@SETTINGS
@given(st.sampled_from(sorted(PAIRS)), st.data())
def test_profile_module_on_mutated_inputs(tmp_path_factory, host, data):
    facts, plan = PAIRS[host]
    which = data.draw(st.sampled_from(["facts", "plan"]))
    if which == "facts":
        facts = data.draw(mutated_value(facts))
    else:
        plan = data.draw(mutated_value(plan))
    root = tmp_path_factory.mktemp("root")
    (root / "var/lib/kubelet").mkdir(parents=True)
    (root / "var/lib/kubelet/config.yaml").write_text(fixture_text("kubernetes/kubeadm_var-lib-kubelet_config.yaml"))
    params = dict(
        plan=plan,
        topology=facts,
        mode="auto",
        config_dir=None,
        dropin_name="50-npuops.conf",
        config_file=None,
        housekeeping_cpus=None,
        pod_devices=None,
        memory_manager=True,
        kube_reserved_memory="1Gi",
        system_reserved_memory=None,
        eviction_hard_memory=None,
        memory_reserved_node=None,
        strict_cpu_reservation=None,
        kubelet_version="v1.35.0",
        alpha_gates=False,
        host_root=str(root),
    )
    try:
        result = mod.prepare(FakeModule(params))
    except NpuopsError:
        return
    assert result["profile"]["config"]["cpuManagerPolicy"] == "static"


@SETTINGS
@given(
    st.sampled_from(sorted(PAIRS)),
    st.integers(min_value=0, max_value=400),
    st.integers(min_value=0, max_value=16),
    st.sampled_from(["restricted", "single-numa-node", "best-effort"]),
)
def test_whatif_never_raises_and_never_hands_out_reserved_cpus(host, cpus, devices, policy):
    facts, plan = PAIRS[host]
    profile = kubelet_profile(facts, plan)
    topo = kubelet_whatif.Topo.from_facts(facts)
    reserved = set(int(c) for c in _ids(profile["reserved_cpus"]))
    nodes = [n.get("numa_node") for n in facts["npus"]] or [g.get("numa_node") for g in facts["gpus"]]
    got = kubelet_whatif.whatif(
        topo, reserved, cpus, {"count": devices, "nodes": nodes}, policy=policy, full_pcpus_only=profile["smt"]
    )
    if got["admitted"]:
        assert reserved.isdisjoint(_ids(got["cpus"])) and len(_ids(got["cpus"])) == cpus


def _ids(text):
    out = []
    for part in (text or "").split(","):
        if part:
            lo, dummy, hi = part.partition("-")
            out.extend(range(int(lo), int(hi or lo) + 1))
    return out
