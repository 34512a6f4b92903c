# -*- coding: utf-8 -*-
"""Sandbox roots can never mean the real machine by accident: every module that
takes ``host_root`` (and ``npu_topology_facts``' ``snapshot_overlay``) is refused by the one
runner before its body runs when the root is empty (an unset variable, a lookup that found
nothing), relative, holds ``.``/``..`` (``<sandbox>/root/../../..`` was normalised and written
three levels above the sandbox) or does not exist; ``/`` only as ``/``. The layers under the
modules (host I/O, file effects, host paths) refuse the same values."""

import importlib
import os

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops, module_runner
from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, paths

MODULES = ("npu_irq_affinity", "npu_share_dirs", "vllm_binding_facts", "vllm_launch_wrapper")


class Refused(Exception):
    pass


class FakeAnsibleModule(object):
    """AnsibleModule as the runner uses it: params with the spec's defaults; fail_json raises."""

    body_ran = False

    def __init__(self, argument_spec, **kwargs):
        self.params = dict((k, v.get("default")) for k, v in argument_spec.items())
        self.params.update(FakeAnsibleModule.given)
        self.check_mode = False
        self._diff = False

    def fail_json(self, msg):
        raise Refused(msg)

    def exit_json(self, **result):
        raise Refused("exited: %s" % result)

    def warn(self, text):
        pass


def _main_of(name, monkeypatch, params):
    module = importlib.import_module("ansible_collections.npuops.fleet.plugins.modules." + name)
    FakeAnsibleModule.given = params
    monkeypatch.setattr(module_runner, "AnsibleModule", FakeAnsibleModule)
    ran = []
    original = module_runner.run

    def run(spec, body, *args, **kwargs):
        def watched(module):
            ran.append(name)
            return body(module)

        return original(spec, watched, *args, **kwargs)

    monkeypatch.setattr(module, "run", run)
    return module.main, ran


def _bad_roots(tmp_path):
    sandbox = tmp_path / "sandbox" / "root"
    sandbox.mkdir(parents=True)
    return [
        ("", "is not a root"),
        (None, "is not a root"),
        (str(sandbox) + "/../../..", "'..' components"),
        (str(sandbox) + "/./x", "'.' and '..'"),
        ("sandbox/root", "must be absolute"),
        ("//", "write '/' for the real machine"),
        (str(sandbox) + "/missing", "not an existing"),
        (str(sandbox) + "\x00", "NUL"),
    ]


@pytest.mark.parametrize("name", MODULES)
def test_every_module_refuses_a_bad_root_before_its_body_runs(name, monkeypatch, tmp_path):
    for root, words in _bad_roots(tmp_path):
        main, ran = _main_of(name, monkeypatch, {"host_root": root})
        with pytest.raises(Refused) as err:
            main()
        assert str(err.value).startswith("host_root: ") and words in str(err.value), root
        assert ran == [], root


def test_snapshot_overlay_is_a_root_too(monkeypatch, tmp_path):
    for root, words in _bad_roots(tmp_path):
        if root is None:
            continue  # left out: no overlay
        if words == "not an existing":
            # a sandbox not written yet (the demo's first facts) overlays nothing: allowed
            main, ran = _main_of("npu_topology_facts", monkeypatch, {"snapshot_overlay": root})
            with pytest.raises(Refused) as err:  # the fake module's exit_json raises too
                main()
            assert str(err.value).startswith("exited") and ran, root
            continue
        main, ran = _main_of("npu_topology_facts", monkeypatch, {"snapshot_overlay": root})
        with pytest.raises(Refused) as err:
            main()
        assert words in str(err.value) and ran == [], root


def test_a_good_root_reaches_the_body(monkeypatch, tmp_path):
    main, ran = _main_of(
        "vllm_binding_facts", monkeypatch, {"host_root": str(tmp_path), "dest": "/usr/local/lib/npuops"}
    )
    with pytest.raises(Refused, match="exited"):
        main()
    assert ran == ["vllm_binding_facts"]
    assert paths.check_host_root("/") == "/"
    assert paths.check_host_root(str(tmp_path) + "/", must_exist=True) == str(tmp_path) + "/"


def test_the_layers_refuse_the_same_roots(tmp_path):
    escape = str(tmp_path / "a" / "root") + "/../../.."
    os.makedirs(str(tmp_path / "a" / "root"))
    for root in ("", None, escape, "relative"):
        with pytest.raises(InputError, match="host_root"):
            hostio.LiveHostIO(root)
        with pytest.raises(InputError, match="host_root"):
            paths.host_path(root, "/etc/x")
        with pytest.raises(InputError, match="host_root"):
            fileops.ensure_file(root, "/etc/npuops-test", content="x\n")
    assert not os.path.exists(str(tmp_path / "etc"))
