# -*- coding: utf-8 -*-
"""The host CPU partition from the plan, on the recorded A2, A3 and DGX hosts: isolated,
IRQ and housekeeping CPUs, the refusals with their numbers, and the rendered files."""

import re

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import PlanError
from ansible_collections.npuops.fleet.plugins.module_utils.plan import cpu_partition, dispatch
from ansible_collections.npuops.fleet.plugins.module_utils.render import cpu_partition as render
from npuops_testing.module_harness import facts_of

TWO = [{"name": "svc0", "npus": [0, 1, 2, 3]}, {"name": "svc1", "npus": [4, 5, 6, 7]}]
A3_TWO = [{"name": "svc0", "npus": list(range(8))}, {"name": "svc1", "npus": list(range(8, 16))}]


def ids(text):
    return set(cpulist.parse(text or ""))


def plan_and_part(host, instances=None, **kw):
    facts = facts_of(host)
    plan = dispatch.make_plan(facts, "strict", instances=instances)
    return facts, plan, cpu_partition.partition(plan, facts["cpu"], **kw)


def test_a2_worked_example():
    """a2-910b3x8, svc0 = NPUs 0-3, svc1 = NPUs 4-7: each NPU's 12-CPU pool gives 2 IRQ CPUs
    and 10 isolated; the frontends' nodes are the housekeeping CPUs."""
    _facts, plan, part = plan_and_part("a2-910b3x8", TWO)
    assert part["housekeeping"] == "24-47,72-95,120-143,168-191"
    assert part["counts"] == {"isolated": 80, "irq": 16, "housekeeping": 96, "allowed": 192}
    npu0 = plan["npus"]["0"]
    assert ids(npu0["irq"]) <= ids(part["irq"])
    assert ids(npu0["main"]) | ids(npu0["acl"]) | ids(npu0["release"]) <= ids(part["isolated"])
    # the three sets are disjoint and cover the allowed CPUs
    sets = [ids(part[k]) for k in ("isolated", "irq", "housekeeping")]
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert set().union(*sets) == ids(part["allowed"])


def test_a3_without_frontends_is_refused_with_numbers():
    """a3-16die, no instances: the workers hold all 640 CPUs - nothing left for the host."""
    with pytest.raises(PlanError) as err:
        plan_and_part("a3-16die")
    msg = str(err.value)
    assert "leaves 0 housekeeping CPU(s) (none)" in msg
    assert "npuops_cpu_partition_min_housekeeping=2" in msg
    assert "640 CPUs are workers'" in msg and "of 640 allowed" in msg


def test_a3_with_instances_gets_the_carved_frontends():
    _facts, plan, part = plan_and_part("a3-16die", A3_TWO)
    frontend = ids(plan["cpu_budget"]["frontend"])
    assert frontend and ids(part["housekeeping"]) == frontend
    assert not ids(part["isolated"]) & frontend


def test_dgx_gpu_pools_isolated_whole():
    _facts, plan, part = plan_and_part("dgx-a100")
    pools = set()
    for entry in plan["gpus"].values():
        pools |= ids(entry["pool"])
    assert ids(part["isolated"]) == pools and part["irq"] == ""
    assert part["housekeeping"] == "0-15,32-47,64-79,96-111,128-143,160-175,192-207,224-239"


def test_kernel_isolated_cpus_are_not_housekeeping():
    plan = {
        "cpu_budget": {"workers": "2-5", "frontend": "0-1", "reserved": "6-7", "spare": ""},
        "npus": {"0": {"irq": "2-3"}},
    }
    part = cpu_partition.partition(plan, {"isolated": "7", "nohz_full": ""})
    assert (part["isolated"], part["irq"], part["housekeeping"]) == ("4-5", "2-3", "0-1,6")


def test_too_few_housekeeping_cpus_refused():
    plan = {"cpu_budget": {"workers": "1-7", "frontend": "0", "reserved": "", "spare": ""}}
    with pytest.raises(PlanError, match=r"leaves 1 housekeeping CPU\(s\) \(0\)"):
        cpu_partition.partition(plan)
    assert cpu_partition.partition(plan, min_housekeeping=1)["housekeeping"] == "0"


def test_plans_without_budget_or_skipped_refused():
    with pytest.raises(PlanError, match="needs a plan with a cpu_budget.*vllm_ascend"):
        cpu_partition.partition({"policy": "vllm_ascend", "npus": {}})
    with pytest.raises(PlanError, match="skipped"):
        cpu_partition.partition({"skipped": True, "reason": "x86_64"})


# ---- rendered -------------------------------------------------------------------------------


def test_rendered_cgroup_v2_files_and_masks():
    _facts, _plan, part = plan_and_part("a2-910b3x8", TWO)
    files, runtime = render.files(part, 2)
    assert sorted(files) == [
        "/etc/systemd/system/init.scope.d/50-npuops-cpu-partition.conf",
        "/etc/systemd/system/system.slice.d/50-npuops-cpu-partition.conf",
        "/etc/systemd/system/user.slice.d/50-npuops-cpu-partition.conf",
        "/etc/tmpfiles.d/npuops-cpu-partition.conf",
    ]
    assert files["/etc/systemd/system/init.scope.d/50-npuops-cpu-partition.conf"].endswith(
        "[Scope]\nAllowedCPUs=24-47,72-95,120-143,168-191\n"
    )
    mask = runtime[render.WORKQUEUE_MASK]
    assert set(cpulist.from_mask(mask)) == ids(part["housekeeping"])
    assert "w /proc/irq/default_smp_affinity - - - - %s\n" % mask in files[render.TMPFILES]


def test_rendered_cgroup_v1_sets_the_managers_affinity():
    _facts, _plan, part = plan_and_part("dgx-a100")
    files, _runtime = render.files(part, "hybrid")
    assert files[render.MANAGER_DROPIN].endswith("[Manager]\nCPUAffinity=%s\n" % part["housekeeping"])
    assert not any(".slice.d" in path for path in files)


def test_rendered_tuned_profile_drives_cpu_partitioning():
    _facts, _plan, part = plan_and_part("a2-910b3x8", TWO)
    files, runtime = render.files(part, 2, tuned=True)
    text = files[render.TUNED_CONF]
    assert runtime == {} and render.TMPFILES not in files
    assert "include=cpu-partitioning\n" in text
    assert "isolated_cores=%s\n" % part["isolated"] in text
    blacklist = re.search(r"^cgroup_ps_blacklist=(.*)$", text, re.M).group(1)
    # /proc/PID/cgroup as systemd 252 wrote it in the systemd tier: a dash in a slice name is a
    # level, so the instances' slice sits under npuops.slice
    for line in (
        "0::/npuops.slice/npuops-vllm.slice/vllm-standin.service",
        "1:name=systemd:/npuops.slice/npuops-vllm.slice/vllm-standin.service",
    ):
        assert re.search(blacklist, line), line
    for line in ("0::/system.slice/ssh.service", "0::/user.slice/user-0.slice/session-3.scope"):
        assert not re.search(blacklist, line), line
    assert text.endswith("[bootloader]\n# no kernel command line: nothing waits for a reboot\nenabled=false\n")
    with_cmdline = render.files(part, 2, tuned=True, kernel_cmdline=True)[0][render.TUNED_CONF]
    assert "[bootloader]" not in with_cmdline


def test_rendered_kernel_cmdline_without_tuned():
    _facts, _plan, part = plan_and_part("dgx-a100")
    files = render.files(part, 2, kernel_cmdline=True)[0]
    iso = part["isolated"]
    assert files[render.GRUB_DROPIN].endswith(
        'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX isolcpus=managed_irq,domain,%s nohz_full=%s '
        'rcu_nocbs=%s"\n' % (iso, iso, iso)
    )


# ---- invariants over random budgets ----------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def budgets(draw):
    cpus = list(range(draw(st.integers(min_value=2, max_value=96))))
    kind = draw(
        st.lists(st.sampled_from(["workers", "frontend", "reserved", "spare"]), min_size=len(cpus), max_size=len(cpus))
    )
    budget = dict(
        (k, cpulist.format([c for c, w in zip(cpus, kind) if w == k]))
        for k in ("workers", "frontend", "reserved", "spare")
    )
    workers = [c for c, w in zip(cpus, kind) if w == "workers"]
    irq = draw(st.lists(st.sampled_from(workers), max_size=4)) if workers else []
    kernel = draw(st.lists(st.sampled_from(cpus), max_size=3))
    return {"cpu_budget": budget, "npus": {"0": {"irq": cpulist.format(irq)}}}, {
        "isolated": cpulist.format(kernel),
        "nohz_full": "",
    }


@settings(deadline=None, max_examples=300)
@given(budgets(), st.integers(min_value=1, max_value=8))
def test_the_three_sets_partition_the_budget(case, least):
    plan, cpu = case
    budget = dict((k, ids(v)) for k, v in plan["cpu_budget"].items())
    kernel = ids(cpu["isolated"])
    expect_hk = (budget["frontend"] | budget["spare"] | budget["reserved"]) - kernel
    expect_irq = ids(plan["npus"]["0"]["irq"]) & budget["workers"]
    if not budget["workers"] - expect_irq or len(expect_hk) < least:
        with pytest.raises(PlanError):
            cpu_partition.partition(plan, cpu, least)
        return
    part = cpu_partition.partition(plan, cpu, least)
    iso, irq, hk = ids(part["isolated"]), ids(part["irq"]), ids(part["housekeeping"])
    assert not iso & irq and not iso & hk and not irq & hk
    assert iso | irq == budget["workers"] and irq == expect_irq and hk == expect_hk
    assert len(hk) >= least
