# -*- coding: utf-8 -*-
"""npu_cpu_partition in-process on a sandbox root: inert in check mode, applied, a second run
unchanged, taken back to the exact tree it found, tuned driven, rolled back on a failure."""

import json
import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import cpu_partition as apply
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.render import cpu_partition as render
from npuops_testing.module_harness import call_module, facts_of, plan_of

HOSTS = ("a2-910b3x8", "dgx-a100")
LOCK = "var/lib/npuops/.cpu_partition.json.lock"
ALL_MASK = "ffffffff,ffffffff,ffffffff,ffffffff,ffffffff,ffffffff,ffffffff,ffffffff"


def make_root(tmp_path, tuned=None):
    root = tmp_path / "root"
    for path in render.RUNTIME_FILES:
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / path.lstrip("/")).write_text(ALL_MASK + "\n")
    (root / "etc").mkdir(exist_ok=True)
    (root / "proc" / "cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro\n")
    (root / "proc" / "1").mkdir()
    (root / "proc" / "1" / "status").write_text("Name:\tsystemd\nCpus_allowed_list:\t0-255\n")
    if tuned:
        (root / "etc/tuned").mkdir(parents=True)
        (root / "etc/tuned/active_profile").write_text(tuned + "\n")
    return root


def tree(path):
    """Every file under ``path`` and its text, but the state file's lock (``LOCK``: a real run
    leaves it, empty, as every shared file's lock)."""
    out = []
    for dirpath, dirnames, files in os.walk(str(path)):
        dirnames.sort()
        for name in sorted(files):
            if os.path.relpath(os.path.join(dirpath, name), str(path)) == LOCK:
                continue
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, str(path)), open(full).read()))
    return out


def args(root, host="a2-910b3x8", **extra):
    base = {"plan": plan_of(host), "topology": facts_of(host), "host_root": str(root), "cgroup": "v2", "tuned": "auto"}
    base.update(extra)
    return base


def read(root, path):
    return (root / path.lstrip("/")).read_text()


@pytest.mark.parametrize("host", HOSTS)
def test_check_mode_is_inert_then_applied_idempotent_and_reversible(tmp_path, host):
    root = make_root(tmp_path)
    found = tree(root)
    a = args(root, host)
    check = call_module("npu_cpu_partition", a, check=True, diff=True)
    assert not check.get("failed"), check.get("msg")
    assert check["changed"] is True and tree(root) == found
    applied = call_module("npu_cpu_partition", a, diff=True)
    assert applied["changed"] is True and applied["steps"] == check["steps"]
    assert applied["pending"] == ["systemctl daemon-reload"]
    housekeeping = set(cpulist.parse(applied["housekeeping"]))
    for path in render.RUNTIME_FILES:
        assert set(cpulist.from_mask(read(root, path))) == housekeeping
    assert read(root, render.unit_dropin("system.slice")).endswith("AllowedCPUs=%s\n" % applied["housekeeping"])
    state = json.loads(read(root, render.STATE_FILE))
    assert state["runtime_before"] == dict((p, ALL_MASK) for p in render.RUNTIME_FILES)
    again = call_module("npu_cpu_partition", a)
    assert again["changed"] is False and again["steps"] == []
    # taken back: check mode inert, then the tree exactly as found
    applied_tree = tree(root)
    back_check = call_module("npu_cpu_partition", {"state": "absent", "host_root": str(root)}, check=True)
    assert back_check["changed"] is True and tree(root) == applied_tree
    back = call_module("npu_cpu_partition", {"state": "absent", "host_root": str(root)})
    assert back["changed"] is True and not back.get("failed"), back.get("msg")
    assert (root / LOCK).read_text() == ""  # the state file's lock stays, empty
    assert [(p, t.strip() if p.startswith(("proc", "sys")) else t) for p, t in tree(root)] == [
        (p, t.strip() if p.startswith(("proc", "sys")) else t) for p, t in found
    ]
    assert call_module("npu_cpu_partition", {"state": "absent", "host_root": str(root)})["changed"] is False


def test_a_second_run_keeps_the_first_runs_saved_values(tmp_path):
    """A changed plan re-applies; the state keeps the values from before the first partition."""
    root = make_root(tmp_path)
    call_module("npu_cpu_partition", args(root))
    other = args(root, min_housekeeping=1)
    other["plan"] = dict(other["plan"], cpu_budget=dict(other["plan"]["cpu_budget"], frontend="24-47"))
    assert call_module("npu_cpu_partition", other)["changed"] is True
    state = json.loads(read(root, render.STATE_FILE))
    assert state["runtime_before"][render.WORKQUEUE_MASK] == ALL_MASK


def test_tuned_host_gets_a_profile_and_its_previous_back(tmp_path):
    root = make_root(tmp_path, tuned="throughput-performance")
    result = call_module("npu_cpu_partition", args(root))
    assert result["tuned"] is True
    assert "include=cpu-partitioning" in read(root, render.TUNED_CONF)
    assert result["pending"] == ["systemctl daemon-reload", "tuned-adm profile npuops-cpu-partition"]
    # tuned writes the masks itself: untouched here
    assert read(root, render.WORKQUEUE_MASK).strip() == ALL_MASK
    assert json.loads(read(root, render.STATE_FILE))["tuned_before"] == "throughput-performance"
    assert not (root / render.TMPFILES.lstrip("/")).exists()


def test_refused_plan_writes_nothing(tmp_path):
    root = make_root(tmp_path)
    found = tree(root)
    result = call_module("npu_cpu_partition", args(root, "a3-16die"))
    assert result["failed"] and "leaves 0 housekeeping CPU(s)" in result["msg"]
    assert tree(root) == found


def test_unknown_cgroup_version_is_an_error(tmp_path):
    root = make_root(tmp_path)
    result = call_module("npu_cpu_partition", args(root, cgroup="auto"))
    assert result["failed"] and "set cgroup: v2 or v1" in result["msg"]


def test_failure_rolls_every_step_back(tmp_path):
    """default_smp_affinity refuses the write (a second hard link: never written through):
    the drop-ins, the state file and the workqueue mask already written are undone."""
    root = make_root(tmp_path)
    smp = root / render.DEFAULT_SMP_AFFINITY.lstrip("/")
    os.link(str(smp), str(tmp_path / "elsewhere"))
    found = tree(root)
    result = call_module("npu_cpu_partition", args(root))
    assert result["failed"]
    assert "Rolled back:" in result["msg"] and "The host is as it was before this run." in result["msg"]
    assert tree(root) == found


def test_instances_in_system_slice_are_found(tmp_path):
    root = tmp_path / "root"
    for name, procs in (
        ("vllm-svc0.service", "1234\n"),
        ("vllm-svc0-bind.service", "9\n"),
        ("vllm-svc1.service", ""),
        ("sshd.service", "77\n"),
    ):
        (root / "sys/fs/cgroup/system.slice" / name).mkdir(parents=True)
        (root / "sys/fs/cgroup/system.slice" / name / "cgroup.procs").write_text(procs)
    assert apply.Partition(str(root)).instances_in_system_slice() == ["vllm-svc0.service"]


def test_instance_services_move_to_their_slice_and_back(tmp_path):
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch

    root = make_root(tmp_path)
    found = tree(root)
    facts = facts_of("a2-910b3x8")
    plan = dispatch.make_plan(
        facts, "strict", instances=[{"name": "svc0", "npus": [0, 1, 2, 3]}, {"name": "svc1", "npus": [4, 5, 6, 7]}]
    )
    a = {"plan": plan, "topology": facts, "host_root": str(root), "cgroup": "v2"}
    result = call_module("npu_cpu_partition", a)
    assert not result.get("failed"), result.get("msg")
    for name in ("svc0", "svc1"):
        path = "/etc/systemd/system/vllm-%s.service.d/50-npuops-cpu-partition.conf" % name
        assert path in result["files"]
        assert read(root, path).endswith("[Service]\nSlice=npuops-vllm.slice\n")
    assert call_module("npu_cpu_partition", a)["changed"] is False
    call_module("npu_cpu_partition", {"state": "absent", "host_root": str(root)})
    assert [row[0] for row in tree(root)] == [row[0] for row in found]


def test_cgroup_v1_take_back_reloads_the_manager_on_its_old_affinity(tmp_path):
    """An unset CPUAffinity= leaves the manager's affinity where the partition put it (the
    systemd tier saw a new service stay on the housekeeping CPU): taking it back rewrites the
    drop-in to the affinity before, reloads, then removes it."""
    from ansible_collections.npuops.fleet.plugins.module_utils.apply import cpu_partition as part_apply

    root = make_root(tmp_path)
    found = tree(root)
    applied = call_module("npu_cpu_partition", args(root, "dgx-a100", cgroup="v1"))
    assert applied["pending"] == ["systemctl daemon-reload"]
    assert json.loads(read(root, render.STATE_FILE))["manager_affinity_before"] == "0-255"
    written = []
    real_write = part_apply.Partition._write

    def spy(self, path, text):
        written.append((path, text))
        return real_write(self, path, text)

    part_apply.Partition._write = spy
    try:
        back = call_module("npu_cpu_partition", {"state": "absent", "host_root": str(root)})
    finally:
        part_apply.Partition._write = real_write
    assert back["pending"] == ["systemctl daemon-reload"]
    manager = [t for p, t in written if p == render.MANAGER_DROPIN]
    assert manager[0].endswith("[Manager]\nCPUAffinity=0-255\n") and manager[-1] is None
    assert [(p, t.strip()) for p, t in tree(root)] == [(p, t.strip()) for p, t in found]


def test_kernel_cmdline_is_explicit_and_waits_for_a_reboot(tmp_path):
    root = make_root(tmp_path)
    plain = call_module("npu_cpu_partition", args(root, "dgx-a100"))
    assert plain["reboot_pending"] is False and render.GRUB_DROPIN not in plain["files"]
    asked = call_module("npu_cpu_partition", args(root, "dgx-a100", kernel_cmdline=True))
    assert asked["reboot_pending"] is True and render.GRUB_DROPIN in asked["files"]
    iso = asked["isolated"]
    assert json.loads(read(root, render.STATE_FILE))["kernel_cmdline"] == [
        "isolcpus=managed_irq,domain,%s" % iso,
        "nohz_full=%s" % iso,
        "rcu_nocbs=%s" % iso,
    ]
    # after the reboot the running kernel has them: nothing pending, nothing to change
    (root / "proc/cmdline").write_text(
        "ro isolcpus=managed_irq,domain,%s nohz_full=%s rcu_nocbs=%s\n" % (iso, iso, iso)
    )
    again = call_module("npu_cpu_partition", args(root, "dgx-a100", kernel_cmdline=True))
    assert again["changed"] is False and again["reboot_pending"] is False


def test_a_file_at_a_partition_path_not_written_by_it_is_left_alone(tmp_path):
    root = make_root(tmp_path)
    mine = root / render.TMPFILES.lstrip("/")
    mine.parent.mkdir(parents=True)
    mine.write_text("w /sys/kernel/mm/transparent_hugepage/enabled - - - - never\n")
    back = call_module("npu_cpu_partition", {"state": "absent", "host_root": str(root)})
    assert back["changed"] is False and mine.read_text().startswith("w /sys/kernel/mm")
    # the warning, from the step list itself (ansible-core's warning table is process-wide)
    _steps, warnings = apply.Partition(str(root)).restore_steps(None)
    assert any("was not written by the partition: left alone" in w for w in warnings)


def test_live_cgroup_v2_refuses_while_an_instance_runs_in_system_slice(tmp_path):
    """A running unit cannot change slice: system.slice's AllowedCPUs= would cut it at once.
    Refused with the unit named, nothing changed (restart_instances restarts it instead)."""
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
    from ansible_collections.npuops.fleet.plugins.modules import npu_cpu_partition as module_code

    root = make_root(tmp_path)
    unit = root / "sys/fs/cgroup/system.slice/vllm-svc0.service"
    unit.mkdir(parents=True)
    (unit / "cgroup.procs").write_text("4242\n")
    found = tree(root)
    facts = facts_of("a2-910b3x8")
    plan = dispatch.make_plan(facts, "strict", instances=[{"name": "svc0", "npus": [0, 1, 2, 3]}])

    class Module(object):
        check_mode = False
        params = {
            "plan": plan,
            "topology": facts,
            "min_housekeeping": 2,
            "cgroup": "v2",
            "tuned": "never",
            "kernel_cmdline": False,
            "restart_instances": False,
        }

    part = apply.Partition(str(root))
    part.live = True  # a live host's decisions, on the sandbox's files
    with pytest.raises(Exception) as err:
        module_code.present(Module, part)
    assert "vllm-svc0.service still run(s) in system.slice" in str(err.value)
    assert "Nothing was changed" in str(err.value) and tree(root) == found


def test_cgroup_v2_take_back_widens_the_slices_before_removing_them(tmp_path):
    """Removing AllowedCPUs= leaves a running cgroup's cpuset as it was (systemd/systemd#43846):
    taken back, each slice's drop-in is first rewritten to every CPU, reloaded, then removed."""
    from ansible_collections.npuops.fleet.plugins.module_utils.apply import cpu_partition as part_apply

    root = make_root(tmp_path)
    (root / "sys/fs/cgroup").mkdir(parents=True)
    (root / "sys/fs/cgroup/cpuset.cpus.effective").write_text("0-191\n")
    found = tree(root)
    call_module("npu_cpu_partition", args(root))
    assert json.loads(read(root, render.STATE_FILE))["allowed_before"] == "0-191"
    written = []
    real_write = part_apply.Partition._write

    def spy(self, path, text):
        written.append((path, text))
        return real_write(self, path, text)

    part_apply.Partition._write = spy
    try:
        call_module("npu_cpu_partition", {"state": "absent", "host_root": str(root)})
    finally:
        part_apply.Partition._write = real_write
    system = [t for p, t in written if p == render.unit_dropin("system.slice")]
    assert system[0].endswith("[Slice]\nAllowedCPUs=0-191\n") and system[-1] is None
    scope = [t for p, t in written if p == render.unit_dropin("init.scope")]
    assert scope[0].endswith("[Scope]\nAllowedCPUs=0-191\n")
    assert [(p, t.strip()) for p, t in tree(root)] == [(p, t.strip()) for p, t in found]


@pytest.mark.parametrize("state", ["present", "absent"])
def test_partition_state_write_waits_for_the_shared_lock(tmp_path, state):
    """The state file is read, merged and rewritten under the one lock of a shared host file
    (host/locks, ``.cpu_partition.json.lock`` beside it): while another run holds it, neither
    applying nor taking back writes anything; check mode takes no lock."""
    import fcntl
    import threading
    import time

    root = make_root(tmp_path)
    state_file = root / render.STATE_FILE.lstrip("/")
    lock = state_file.parent / (".%s.lock" % state_file.name)
    if state == "absent":
        assert call_module("npu_cpu_partition", args(root))["changed"] is True
        a = {"state": "absent", "host_root": str(root)}
    else:
        a = args(root)
        assert call_module("npu_cpu_partition", a, check=True)["changed"] is True
        assert not lock.exists()  # check mode: no lock taken, no lock file left
    state_file.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    held = open(str(lock), "r+")
    fcntl.flock(held.fileno(), fcntl.LOCK_EX)
    before = tree(root)
    done = []
    worker = threading.Thread(target=lambda: done.append(call_module("npu_cpu_partition", a)))
    worker.start()
    try:
        time.sleep(1.0)
        assert tree(root) == before and not done  # waiting on the lock, nothing written
    finally:
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
        held.close()
        worker.join(60)
    assert done and done[0]["changed"] is True and not done[0].get("failed"), done[0].get("msg")
    assert state_file.exists() is (state == "present")
