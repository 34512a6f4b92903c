# -*- coding: utf-8 -*-
"""Role cpu_binding, tasks_from partition, on recorded hosts in sandbox roots: check mode
writes nothing, the partition is written, a second run changes nothing, and
npuops_cpu_partition: false takes every file back; a host left without housekeeping CPUs
fails with the numbers."""

import pytest

from npuops_testing.fleet import make_fleet, need, play, recap, written
from npuops_testing.runner import run_playbook

TWO = [{"name": "a", "npus": [0, 1, 2, 3]}, {"name": "b", "npus": [4, 5, 6, 7]}]
LOCK = "/var/lib/npuops/.cpu_partition.json.lock"
DROPINS = {
    "/etc/systemd/system/%s.d/50-npuops-cpu-partition.conf" % u for u in ("system.slice", "user.slice", "init.scope")
}


def partition(tmp_path, name="play.yml"):
    return play(
        tmp_path,
        [
            {
                "name": "Partition",
                "ansible.builtin.import_role": {"name": "npuops.fleet.cpu_binding", "tasks_from": "partition"},
            }
        ],
        name,
    )


@pytest.mark.slow
def test_partition_role_check_apply_again_and_back(tmp_path):
    need("a2-910b3x8", "dgx-a100")
    common = {"npuops_cpu_partition": True, "npuops_cpu_partition_cgroup": "v2"}
    inv = make_fleet(
        tmp_path,
        {
            "a2": ("a2-910b3x8", dict(common, npuops_vllm_instances=TWO)),
            "dgx": ("dgx-a100", dict(common, npuops_cpu_partition_cgroup="v1")),
        },
    )
    pb = partition(tmp_path)
    check = run_playbook(pb, inv, ["--check"])
    assert check.returncode == 0, check.stdout
    assert recap(check.stdout)["a2"]["changed"] == 1
    assert written(tmp_path, "a2", "a2-910b3x8") == set()

    first = run_playbook(pb, inv)
    assert first.returncode == 0, first.stdout
    a2 = written(tmp_path, "a2", "a2-910b3x8")
    assert DROPINS <= a2 and "/var/lib/npuops/cpu_partition.json" in a2
    assert {
        "/etc/systemd/system/vllm-a.service.d/50-npuops-cpu-partition.conf",
        "/etc/systemd/system/vllm-b.service.d/50-npuops-cpu-partition.conf",
    } <= a2
    dgx = written(tmp_path, "dgx", "dgx-a100")
    assert "/etc/systemd/system.conf.d/50-npuops-cpu-partition.conf" in dgx and not DROPINS & dgx

    second = run_playbook(pb, inv)
    assert second.returncode == 0, second.stdout
    assert all(r["changed"] == 0 for r in recap(second.stdout).values()), second.stdout

    back = run_playbook(pb, inv, ["-e", "npuops_cpu_partition=false"])
    assert back.returncode == 0, back.stdout
    # every file taken back; the state file's lock stays, empty, as every shared file's lock
    for host, snap in (("a2", "a2-910b3x8"), ("dgx", "dgx-a100")):
        assert written(tmp_path, host, snap) == {LOCK}
        assert (tmp_path / "demo" / host / "root" / LOCK.lstrip("/")).read_text() == ""


@pytest.mark.slow
def test_partition_refused_without_housekeeping_cpus(tmp_path):
    need("a3-16die")
    inv = make_fleet(
        tmp_path, {"a3": ("a3-16die", {"npuops_cpu_partition": True, "npuops_cpu_partition_cgroup": "v2"})}
    )
    result = run_playbook(partition(tmp_path), inv)
    assert result.returncode != 0
    assert "leaves 0 housekeeping CPU(s)" in result.stdout
    assert written(tmp_path, "a3", "a3-16die") == set()
