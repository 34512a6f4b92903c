# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test harness itself: run_module (npuops_testing.runner) drives a real ansible-playbook."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from npuops_testing.runner import run_module


@pytest.mark.slow
def test_run_module_returns_the_module_result(tmp_path):
    target = tmp_path / "probe.txt"
    target.write_text("hello\n")
    result = run_module(None, {"path": str(target), "get_checksum": True}, fqcn="ansible.builtin.stat")
    assert result.get("failed") is not True, result
    assert result["stat"]["exists"] is True
    assert result["stat"]["size"] == 6


@pytest.mark.slow
def test_run_module_reports_failure_without_raising(tmp_path):
    result = run_module(None, {"path": str(tmp_path / "absent"), "state": "file"}, fqcn="ansible.builtin.file")
    assert result["failed"] is True
    assert "absent" in result["msg"]


@pytest.mark.slow
def test_run_module_check_mode_changes_nothing(tmp_path):
    dest = tmp_path / "made-in-check-mode"
    result = run_module(None, {"path": str(dest), "state": "directory"}, fqcn="ansible.builtin.file", check=True)
    assert result["changed"] is True
    assert not dest.exists()


@pytest.mark.slow
def test_run_module_resolves_the_collection(tmp_path):
    # A name that is not in the collection must fail at parse time, naming the FQCN: proves
    # run_module looks modules up under npuops.fleet.
    with pytest.raises(AssertionError, match="npuops.fleet.no_such_module"):
        run_module("no_such_module", {})
