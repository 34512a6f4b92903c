# -*- coding: utf-8 -*-
"""kubelet/apply/reset.py: the host-side steps of a kubelet change on a sandbox root - apply
(configuration saved, state files aside, new text written), rollback (everything back where the
kubelet expects it, over what a failed kubelet wrote), commit (copies gone) - and every file the
kubelet could not have written itself refused before anything moves: a symlinked kubelet
directory is followed, a symlinked, hard-linked, directory or oversized state file is not."""

import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.apply import reset as kubelet_reset

CONFIG = "/var/lib/kubelet/config.yaml"
OLD_TEXT = "kind: KubeletConfiguration\ncpuManagerPolicy: none\n"
NEW_TEXT = "kind: KubeletConfiguration\ncpuManagerPolicy: static\n"
CPU_STATE = '{"policyName":"none","defaultCpuSet":"","checksum":1}'
MEM_STATE = '{"policyName":"None","machineState":{},"checksum":2}'


def sandbox(tmp_path, kubelet_dir="var/lib/kubelet"):
    root = tmp_path / "host"
    kdir = root / kubelet_dir
    kdir.mkdir(parents=True)
    (kdir / "config.yaml").write_text(OLD_TEXT)
    (kdir / "cpu_manager_state").write_text(CPU_STATE)
    (kdir / "memory_manager_state").write_text(MEM_STATE)
    os.chmod(str(kdir / "config.yaml"), 0o600)
    return root, kdir


def tree(directory):
    return dict((name, (directory / name).read_text()) for name in sorted(os.listdir(str(directory))))


def step(root, name, content=None, **kw):
    change = kubelet_reset.Change(str(root), CONFIG, content, **kw)
    try:
        return change.run(name)
    finally:
        change.close()


def test_apply_then_commit(tmp_path):
    root, kdir = sandbox(tmp_path)
    done = step(root, "apply", NEW_TEXT)
    assert done == [
        "saved %s as %s.npuops-old" % (CONFIG, CONFIG),
        "moved /var/lib/kubelet/cpu_manager_state aside",
        "moved /var/lib/kubelet/memory_manager_state aside",
        "wrote %s" % CONFIG,
    ]
    assert tree(kdir) == {
        "config.yaml": NEW_TEXT,
        "config.yaml.npuops-old": OLD_TEXT,
        "cpu_manager_state.npuops-old": CPU_STATE,
        "memory_manager_state.npuops-old": MEM_STATE,
    }
    assert oct(os.stat(str(kdir / "config.yaml")).st_mode & 0o777) == "0o600"  # its mode kept
    (kdir / "cpu_manager_state").write_text('{"policyName":"static"}')  # the new kubelet's
    assert step(root, "commit") == [
        "removed %s.npuops-old" % CONFIG,
        "removed /var/lib/kubelet/cpu_manager_state.npuops-old",
        "removed /var/lib/kubelet/memory_manager_state.npuops-old",
    ]
    assert tree(kdir) == {"config.yaml": NEW_TEXT, "cpu_manager_state": '{"policyName":"static"}'}
    assert step(root, "commit") == []  # a second run changes nothing


def test_rollback_puts_back_over_what_the_failed_kubelet_wrote(tmp_path):
    root, kdir = sandbox(tmp_path)
    step(root, "apply", NEW_TEXT)
    (kdir / "cpu_manager_state").write_text('{"policyName":"static","defaultCpuSet":"0-7"}')
    assert step(root, "rollback") == [
        "put back %s" % CONFIG,
        "put back /var/lib/kubelet/cpu_manager_state",
        "put back /var/lib/kubelet/memory_manager_state",
    ]
    assert tree(kdir) == {"config.yaml": OLD_TEXT, "cpu_manager_state": CPU_STATE, "memory_manager_state": MEM_STATE}
    assert step(root, "rollback") == []


def test_new_dropin_rolled_back_is_removed(tmp_path):
    root, kdir = sandbox(tmp_path)
    path = "/etc/kubernetes/kubelet.conf.d/50-npuops.conf"
    change = kubelet_reset.Change(str(root), path, NEW_TEXT, move_state=False)
    try:
        assert change.run("apply") == ["saved %s as %s.npuops-none" % (path, path), "wrote %s" % path]
    finally:
        change.close()
    ddir = root / "etc/kubernetes/kubelet.conf.d"
    assert tree(ddir) == {"50-npuops.conf": NEW_TEXT, "50-npuops.conf.npuops-none": ""}
    assert tree(kdir)["cpu_manager_state"] == CPU_STATE  # move_state=False: untouched
    change = kubelet_reset.Change(str(root), path, None, move_state=False)
    try:
        assert change.run("rollback") == ["removed %s (there was none)" % path]
    finally:
        change.close()
    assert tree(ddir) == {}


def test_same_text_no_state_changes_nothing(tmp_path):
    root, kdir = sandbox(tmp_path)
    before = tree(kdir)
    assert step(root, "apply", OLD_TEXT, move_state=False) == []
    assert tree(kdir) == before


def test_symlinked_kubelet_directory_followed(tmp_path):
    """/var/lib/kubelet -> /data/kubelet (a data disk, an absolute link inside the root): the
    files are found where the kubelet finds them and stay there."""
    root, kdir = sandbox(tmp_path, "data/kubelet")
    (root / "var/lib").mkdir(parents=True)
    os.symlink("/data/kubelet", str(root / "var/lib/kubelet"))
    step(root, "apply", NEW_TEXT)
    assert sorted(os.listdir(str(kdir))) == [
        "config.yaml",
        "config.yaml.npuops-old",
        "cpu_manager_state.npuops-old",
        "memory_manager_state.npuops-old",
    ]
    assert os.path.islink(str(root / "var/lib/kubelet"))
    step(root, "rollback")
    assert tree(kdir) == {"config.yaml": OLD_TEXT, "cpu_manager_state": CPU_STATE, "memory_manager_state": MEM_STATE}


def _symlinked_state(kdir, tmp_path):
    outside = tmp_path / "outside"
    outside.write_text(CPU_STATE)
    os.unlink(str(kdir / "cpu_manager_state"))
    os.symlink(str(outside), str(kdir / "cpu_manager_state"))


def _hardlinked_state(kdir, tmp_path):
    os.link(str(kdir / "cpu_manager_state"), str(tmp_path / "elsewhere"))


def _directory_state(kdir, tmp_path):
    os.unlink(str(kdir / "cpu_manager_state"))
    (kdir / "cpu_manager_state").mkdir()


def _oversized_state(kdir, tmp_path):
    (kdir / "memory_manager_state").write_text("x" * (kubelet_reset.MAX_STATE_BYTES + 1))


def _leftover_copy(kdir, tmp_path):
    (kdir / "cpu_manager_state.npuops-old").write_text(CPU_STATE)


def _symlinked_config(kdir, tmp_path):
    os.rename(str(kdir / "config.yaml"), str(tmp_path / "real.yaml"))
    os.symlink(str(tmp_path / "real.yaml"), str(kdir / "config.yaml"))


@pytest.mark.parametrize(
    "trap, match",
    [
        (_symlinked_state, "cpu_manager_state is a symlink"),
        (_hardlinked_state, "cpu_manager_state has 2 hard links"),
        (_directory_state, "cpu_manager_state is not a regular file"),
        (_oversized_state, "memory_manager_state is %d bytes" % (kubelet_reset.MAX_STATE_BYTES + 1)),
        (_leftover_copy, "cpu_manager_state.npuops-old left by a run that did not finish"),
        (_symlinked_config, "config.yaml is a symlink"),
    ],
)
def test_traps_refused_before_anything_moves(tmp_path, trap, match):
    root, kdir = sandbox(tmp_path)
    trap(kdir, tmp_path)
    before = sorted(os.listdir(str(kdir)))
    with pytest.raises(NpuopsError, match=match):
        step(root, "apply", NEW_TEXT)
    assert sorted(os.listdir(str(kdir))) == before
    assert os.stat(str(kdir / "config.yaml")).st_size == len(OLD_TEXT)


def test_plan_only_does_nothing(tmp_path):
    root, kdir = sandbox(tmp_path)
    before = tree(kdir)
    change = kubelet_reset.Change(str(root), CONFIG, NEW_TEXT, create=False)
    try:
        assert len(change.plan("apply")) == 4
        with pytest.raises(NpuopsError, match="step 'undo'"):
            change.plan("undo")
    finally:
        change.close()
    assert tree(kdir) == before


def test_resolve_dirs_follows_directory_links_inside_the_root(tmp_path):
    root, kdir = sandbox(tmp_path, "data/kubelet")
    (root / "var/lib").mkdir(parents=True)
    os.symlink("/data/kubelet", str(root / "var/lib/kubelet"))
    assert kubelet_reset.resolve_dirs(str(root), CONFIG) == "/data/kubelet/config.yaml"
    os.symlink("../../data/kubelet", str(root / "var/lib/relative"))
    assert kubelet_reset.resolve_dirs(str(root), "/var/lib/relative/x") == "/data/kubelet/x"
    # escaping upwards stops at the root, as under chroot
    os.symlink("../../../../../../data/kubelet", str(root / "var/lib/up"))
    assert kubelet_reset.resolve_dirs(str(root), "/var/lib/up/x") == "/data/kubelet/x"
    assert kubelet_reset.resolve_dirs(str(root), "/etc/kubernetes/new.d/x.conf") == "/etc/kubernetes/new.d/x.conf"
    assert kubelet_reset.resolve_dirs(str(root), "/x.conf") == "/x.conf"
