# -*- coding: utf-8 -*-
"""Real SSH transport: a throwaway sshd on 127.0.0.1 (Debian's openssh-server, our own config,
host key and user key in a temporary directory; /etc/ssh untouched) and site.yml run over SSH
against two inventory hosts with different snapshots. Proves the modules travel and run
remotely (AnsiballZ over ssh/sftp), not only with the local connection."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.host import snapshot
from npuops_testing import REPO, SNAPSHOTS
from npuops_testing.runner import run_playbook

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
TEMPLATE = os.path.join(REPO, "tests", "integration", "ssh", "sshd_config.tmpl")
SITE = os.path.join(REPO, "playbooks", "site.yml")
HOSTS = {"ssh-a2": "a2-910b3x8", "ssh-gpu": "dgx-a100"}


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def sshd(tmp_path):
    if not os.path.exists(SSHD):
        pytest.skip("sshd not installed (Debian package openssh-server; `make deps` installs it)")
    if not shutil.which("ssh-keygen") or not shutil.which("ssh"):
        pytest.skip("openssh-client not installed")
    for snap in HOSTS.values():
        if not os.path.isfile(os.path.join(SNAPSHOTS, snap, "snapshot.yml")):
            pytest.fail("tests/snapshots/%s is missing" % snap)
    keys = tmp_path / "ssh"
    keys.mkdir()
    os.chmod(str(keys), 0o700)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "ssh_host_ed25519_key")], check=True
    )
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "id_user")], check=True)
    shutil.copy(str(keys / "id_user.pub"), str(keys / "authorized_keys"))
    port = free_port()
    with open(TEMPLATE) as handle:
        config = handle.read().format(port=port, tmp=str(keys))
    (keys / "sshd_config").write_text(config)
    os.makedirs("/run/sshd", exist_ok=True)  # privilege-separation dir sshd insists on
    control = None
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(keys / "sshd_config")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.skip("sshd did not start: %s" % proc.stdout.read().decode()[-500:])
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        # one SSH connection per host, reused by every task (ControlMaster), in a short private
        # directory (a socket path is limited to about 100 bytes): a new connection for each
        # of a module's steps cost 40 % of the test's time; the modules still travel by sftp
        control = tempfile.mkdtemp(prefix="npuops-cm-")
        yield {
            "port": port,
            "key": str(keys / "id_user"),
            "user": os.environ.get("USER") or __import__("getpass").getuser(),
            "control": os.path.join(control, "%C"),
        }
    finally:
        if control:
            for name in os.listdir(control):  # the masters this test's runs left, asked to exit
                subprocess.run(
                    ["ssh", "-o", "ControlPath=" + os.path.join(control, name), "-O", "exit", "127.0.0.1"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=10,
                    check=False,
                )
            shutil.rmtree(control, ignore_errors=True)
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
def test_site_yml_over_real_ssh_two_hosts(sshd, tmp_path):
    import sys

    inv = {"all": {"hosts": {}}}
    for host, snap in HOSTS.items():
        root = tmp_path / "remote" / host / "root"
        snapshot.copy_host_tree(os.path.join(SNAPSHOTS, snap), str(root))
        (root / "etc").mkdir(exist_ok=True)
        inv["all"]["hosts"][host] = {
            "ansible_host": "127.0.0.1",
            "ansible_port": sshd["port"],
            "ansible_user": sshd["user"],
            "ansible_connection": "ansible.builtin.ssh",
            "ansible_ssh_private_key_file": sshd["key"],
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
            " -o ControlMaster=auto -o ControlPersist=20s"
            " -o ControlPath=" + sshd["control"],
            "ansible_python_interpreter": sys.executable,
            "npuops_snapshot": os.path.join(SNAPSHOTS, snap),
            "npuops_host_root": str(root),
            "npuops_vllm_instances": [
                {"name": "svc", "npus": [0, 1, 2, 3], "command": ["vllm", "serve", "/m", "-tp", "4"]}
            ],
        }
    path = tmp_path / "hosts.yml"
    path.write_text(json.dumps(inv))
    dump = tmp_path / "dump.yml"
    dump.write_text(
        json.dumps(
            [
                {
                    "name": "Dump",
                    "hosts": "all",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Write what the remote side saw",
                            "ansible.builtin.copy": {
                                "content": "{{ {'vendor': ansible_facts['npu_topology']['vendor'], "
                                "'mode': npuops_plan['mode']} | to_json }}",
                                "dest": str(tmp_path / "{{ inventory_hostname }}.json"),
                            },
                            "changed_when": False,
                        }
                    ],
                }
            ]
        )
    )
    env = {
        "ANSIBLE_CACHE_PLUGIN": "ansible.builtin.jsonfile",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "cache"),
        "ANSIBLE_HOST_KEY_CHECKING": "False",
    }
    proc = run_playbook(SITE, str(path), ["-vvv"], env=env)
    assert proc.returncode == 0, proc.stdout
    assert "ESTABLISH SSH CONNECTION" in proc.stdout
    first = [ln for ln in proc.stdout.split("PLAY RECAP")[1].splitlines() if "ok=" in ln]
    assert len(first) == 2 and all("changed=0" not in ln for ln in first), first
    seen = run_playbook(str(dump), str(path), env=env)
    assert seen.returncode == 0, seen.stdout
    a2 = json.loads((tmp_path / "ssh-a2.json").read_text())
    gpu = json.loads((tmp_path / "ssh-gpu.json").read_text())
    assert a2 == {"vendor": "ascend", "mode": "topo_affinity"}
    assert gpu["vendor"] == "nvidia" and gpu["mode"] == "gpu_numa"
    for host in HOSTS:
        root = tmp_path / "remote" / host / "root"
        assert list((root / "usr" / "local" / "lib" / "npuops").glob("svc-launch")), host
    again = run_playbook(SITE, str(path), env=env)
    assert again.returncode == 0, again.stdout
    lines = [ln for ln in again.stdout.split("PLAY RECAP")[1].splitlines() if "ok=" in ln]
    assert len(lines) == 2
    for line in lines:
        assert "changed=0" in line and "failed=0" in line, line
