# -*- coding: utf-8 -*-
"""The kubelet's --config / --config-dir found as systemd resolves its unit: drop-in precedence
across /etc, /run, /usr/lib and /lib, ExecStart= resets, Environment= and EnvironmentFile=
(only those the unit names), ';' and '#' comment lines, and `systemctl show` on a live host."""

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.model import facts as kubelet
from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse import files as parse
from npuops_testing import fixture_text
from npuops_testing.fake_io import FakeIO

KUBEADM = "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"
FLAGS_ENV = "/var/lib/kubelet/kubeadm-flags.env"
SHOW = " ".join(kubelet.SYSTEMCTL_ARGV)


def host(**extra):
    files = {
        "/usr/lib/systemd/system/kubelet.service": "[Unit]\nDescription=kubelet\n[Service]\nExecStart=/usr/bin/kubelet\nRestart=always\n",
        KUBEADM: fixture_text("kubernetes/10-kubeadm.conf"),
        FLAGS_ENV: 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"\n',
    }
    files.update(extra)
    return files


def flags(files, commands=None):
    errors = []
    config, config_dir, used = kubelet.read_flags(FakeIO(files=files, commands=commands), errors)
    return config, config_dir, used, errors


def test_kubeadm_unit_gives_its_config_and_the_files_it_read():
    config, config_dir, used, errors = flags(host())
    assert (config, config_dir, errors) == ("/var/lib/kubelet/config.yaml", None, [])
    assert used == sorted([KUBEADM, FLAGS_ENV, "/usr/lib/systemd/system/kubelet.service"])


def test_an_etc_dropin_resetting_execstart_wins():
    over = "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet --config /etc/kubelet/site.yaml $KUBELET_KUBEADM_ARGS\n"
    config, dummy, used, dummy = flags(host(**{"/etc/systemd/system/kubelet.service.d/20-site.conf": over}))
    assert config == "/etc/kubelet/site.yaml"
    assert "/etc/systemd/system/kubelet.service.d/20-site.conf" in used


def test_a_same_named_dropin_in_etc_masks_the_packaged_one():
    mask = (
        '[Service]\nEnvironment="KUBELET_CONFIG_ARGS=--config=/etc/kubelet/masked.yaml"\n'
        "ExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_CONFIG_ARGS\n"
    )
    config, dummy, used, dummy = flags(host(**{"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": mask}))
    assert config == "/etc/kubelet/masked.yaml"
    assert KUBEADM not in used  # masked: systemd never reads it
    # /run comes before /usr/lib, after /etc
    run = "[Service]\nEnvironment=KUBELET_CONFIG_ARGS=--config=/run/k.yaml\n"
    assert (
        flags(
            host(
                **{
                    "/run/systemd/system/kubelet.service.d/10-kubeadm.conf": run,
                    "/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": mask,
                }
            )
        )[0]
        is None
    )
    assert flags(host(**{"/run/systemd/system/kubelet.service.d/99-run.conf": run}))[0] == "/run/k.yaml"


def test_semicolon_and_hash_comment_lines_are_not_live():
    commented = (
        "[Service]\n; ExecStart=/usr/bin/kubelet --config=/wrong/semicolon.yaml\n"
        '# Environment="KUBELET_CONFIG_ARGS=--config=/wrong/hash.yaml"\n'
    )
    config, dummy, dummy, errors = flags(host(**{"/usr/lib/systemd/system/kubelet.service.d/90-notes.conf": commented}))
    assert config == "/var/lib/kubelet/config.yaml" and errors == []


def test_only_the_environment_files_the_unit_names_count():
    # /etc/default/kubelet is the deb packages' file; the rpm unit above names /etc/sysconfig
    files = host(
        **{
            "/etc/default/kubelet": "KUBELET_EXTRA_ARGS=--config-dir=/wrong\n",
            "/etc/sysconfig/kubelet": "KUBELET_EXTRA_ARGS=--config-dir=/etc/kubelet.d\n",
        }
    )
    config, config_dir, used, dummy = flags(files)
    assert config_dir == "/etc/kubelet.d" and "/etc/default/kubelet" not in used
    # a file's value wins over Environment=, and a later file over an earlier one
    files[FLAGS_ENV] = "KUBELET_CONFIG_ARGS=--config=/from/env-file.yaml\n"
    assert flags(files)[0] == "/from/env-file.yaml"


def test_systemctl_show_is_what_a_live_host_says():
    shown = (
        "ExecStart={ path=/usr/bin/kubelet ; argv[]=/usr/bin/kubelet $KUBELET_CONFIG_ARGS "
        "$KUBELET_KUBEADM_ARGS ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; "
        "pid=0 ; code=(null) ; status=0/0 }\n"
        "Environment=KUBELET_CONFIG_ARGS=--config=/srv/kubelet/live.yaml\n"
        "EnvironmentFiles=/var/lib/kubelet/kubeadm-flags.env (ignore_errors=yes)\n"
    )
    config, dummy, used, dummy = flags(host(), commands={SHOW: shown})
    assert config == "/srv/kubelet/live.yaml" and SHOW in used
    # systemctl failing (no systemd, a timeout) falls back to the unit files
    failed = {SHOW: {"rc": 1, "stdout": "", "stderr": "System has not been booted with systemd"}}
    assert flags(host(), commands=failed)[0] == "/var/lib/kubelet/config.yaml"
    timed_out = {SHOW: {"rc": -9, "timed_out": True}}
    assert flags(host(), commands=timed_out)[0] == "/var/lib/kubelet/config.yaml"


def test_a_required_environment_file_missing_is_an_error():
    unit = "[Service]\nEnvironmentFile=/etc/kubelet/required.env\nExecStart=/usr/bin/kubelet $ARGS\n"
    files = {"/etc/systemd/system/kubelet.service": unit}
    dummy, dummy, dummy, errors = flags(files)
    assert errors and "does not exist" in errors[0]["msg"]


@pytest.mark.parametrize(
    "value, argv",
    [
        ("-/usr/bin/kubelet ${A} $B", ["/usr/bin/kubelet", "x y", "p", "q"]),
        ('/usr/bin/kubelet "--config=/a b.yaml"', ["/usr/bin/kubelet", "--config=/a b.yaml"]),
        ("/usr/bin/kubelet --config=${DIR}/k.yaml", ["/usr/bin/kubelet", "--config=/d/k.yaml"]),
    ],
)
def test_expand_command(value, argv):
    assert parse.expand_command(value, {"A": "x y", "B": "p q", "DIR": "/d"}) == argv


def test_bad_unit_text_is_a_parse_error():
    with pytest.raises(ParseError, match="neither"):
        parse.parse_unit("[Service]\nnot a setting\n", "u")
    with pytest.raises(ParseError, match="unclosed"):
        parse.expand_command('/usr/bin/kubelet "--config=/x', {})
    with pytest.raises(ParseError, match="not an absolute path"):
        parse.config_flags(["kubelet", "--config", "relative.yaml"])
    assert parse.parse_unit("[Service]\nExecStart=/a \\\n  --config=/b\n") == [
        ("Service", "ExecStart", "/a  --config=/b")
    ]


UNITISH = st.text(alphabet=st.sampled_from(list("[]=#;$\\{}\"' \n-/abcEXStrtonfig")), max_size=200)


@settings(max_examples=300, deadline=None)
@given(UNITISH)
def test_unit_readers_raise_only_parse_errors(text):
    for call in (
        lambda: parse.service_settings([("u", parse.parse_unit(text, "u"))]),
        lambda: parse.parse_env_file(text, "e"),
        lambda: parse.parse_systemctl_show(text),
        lambda: parse.config_flags(parse.expand_command(text, {"A": text})),
    ):
        try:
            call()
        except ParseError:
            pass
