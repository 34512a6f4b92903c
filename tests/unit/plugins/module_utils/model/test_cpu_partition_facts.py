# -*- coding: utf-8 -*-
"""The facts' cpu_partition section, and cpu.allowed on a partitioned host: a system.slice
held on the housekeeping CPUs is not what a vLLM service gets (it runs in npuops-vllm.slice),
so the plan must not shrink to it on the next run."""

import json

from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import LiveHostIO
from ansible_collections.npuops.fleet.plugins.module_utils.model import cpu_facts, cpu_partition_facts


def host(tmp_path, files):
    root = tmp_path / "root"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return LiveHostIO(str(root))


CGROUPS = {
    "sys/fs/cgroup/cpuset.cpus.effective": "0-15\n",
    "sys/fs/cgroup/system.slice/cpuset.cpus.effective": "0-1,8-9\n",
    "sys/fs/cgroup/system.slice/cpuset.cpus": "0-1,8-9\n",
}
DROPIN = "etc/systemd/system/system.slice.d/50-npuops-cpu-partition.conf"


def test_allowed_reads_the_root_when_the_partition_holds_system_slice(tmp_path):
    io = host(tmp_path, dict(CGROUPS, **{DROPIN: "[Slice]\nAllowedCPUs=0-1,8-9\n"}))
    assert cpu_facts._service_cpus(io, []) == ("0-15", "cgroup root")


def test_allowed_is_system_slice_without_the_partition(tmp_path):
    io = host(tmp_path, CGROUPS)
    assert cpu_facts._service_cpus(io, []) == ("0-1,8-9", "system.slice")


def test_gather_reads_slices_masks_tuned_and_cmdline(tmp_path):
    io = host(
        tmp_path,
        dict(
            CGROUPS,
            **{
                "proc/1/status": "Name:\tsystemd\nCpus_allowed_list:\t0-1,8-9\n",
                "sys/devices/virtual/workqueue/cpumask": "0303\n",
                "proc/irq/default_smp_affinity": "ffff\n",
                "etc/tuned/active_profile": "npuops-cpu-partition\n",
                "var/lib/npuops/cpu_partition.json": "{}\n",
                "proc/cmdline": "BOOT_IMAGE=/vmlinuz nohz_full=2-7 rcu_nocbs=2-7 quiet\n",
            },
        ),
    )
    facts = cpu_partition_facts.gather(io)
    assert facts["applied"] is True
    assert facts["slices"]["system.slice"] == {"allowed": "0-1,8-9", "effective": "0-1,8-9"}
    assert facts["slices"]["npuops-vllm.slice"] == {"allowed": None, "effective": None}
    assert facts["manager_affinity"] == "0-1,8-9"
    assert (facts["workqueue"], facts["default_smp_affinity"]) == ("0-1,8-9", "0-15")
    assert facts["tuned_profile"] == "npuops-cpu-partition"
    assert facts["cmdline"] == {"nohz_full": "2-7", "rcu_nocbs": "2-7"}


def test_gather_on_a_bare_root_is_all_null(tmp_path):
    facts = cpu_partition_facts.gather(host(tmp_path, {"etc/hostname": "x\n"}))
    assert facts["applied"] is False and facts["workqueue"] is None and facts["cmdline"] == {}


def test_reboot_pending_when_the_running_kernel_lacks_the_asked_arguments(tmp_path):
    state = json.dumps({"kernel_cmdline": ["isolcpus=managed_irq,domain,2-7", "nohz_full=2-7", "rcu_nocbs=2-7"]})
    before = cpu_partition_facts.gather(
        host(
            tmp_path / "a",
            {"var/lib/npuops/cpu_partition.json": state, "proc/cmdline": "BOOT_IMAGE=/vmlinuz nohz_full=2-7 quiet\n"},
        )
    )
    assert before["reboot_pending"] is True and before["kernel_cmdline_wanted"][1] == "nohz_full=2-7"
    after = cpu_partition_facts.gather(
        host(
            tmp_path / "b",
            {
                "var/lib/npuops/cpu_partition.json": state,
                "proc/cmdline": "ro isolcpus=managed_irq,domain,2-7 nohz_full=2-7 rcu_nocbs=2-7\n",
            },
        )
    )
    assert after["reboot_pending"] is False


def test_the_audit_says_a_reboot_is_pending():
    """The fleet report's problem for a partition whose kernel arguments wait for a reboot."""
    import copy
    from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis
    from npuops_testing.report_fleet import real_fleet

    entry = copy.deepcopy(real_fleet()["a2-910b3x8"])
    entry["facts"]["cpu_partition"] = {
        "applied": True,
        "reboot_pending": True,
        "kernel_cmdline_wanted": ["nohz_full=2-7"],
        "cmdline": {},
    }
    problems = [p for p in analysis.build_report({"a2": entry})["problems"] if p["kind"] == "partition_reboot_pending"]
    assert len(problems) == 1
    assert problems[0]["evidence"] == "the partition asks for nohz_full=2-7; the running kernel has none of them"
    entry["facts"]["cpu_partition"]["reboot_pending"] = False
    assert not [p for p in analysis.build_report({"a2": entry})["problems"] if p["kind"] == "partition_reboot_pending"]
