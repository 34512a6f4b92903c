# -*- coding: utf-8 -*-
"""Under make test (scripts/check.sh exports NPUOPS_STRICT_SKIPS=1) a skipped test is a failure
that names the skip's reason; NPUOPS_ALLOW_SKIPS=1 or a plain pytest run keep skips as skips."""

import importlib.util
import os
import types

import pytest

from npuops_testing import REPO


@pytest.fixture(name="conftest")
def _conftest():
    spec = importlib.util.spec_from_file_location("npuops_tests_conftest", os.path.join(REPO, "tests", "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _skipped():
    return types.SimpleNamespace(
        skipped=True, outcome="skipped", longrepr=("tests/x.py", 3, "Skipped: chromium is not installed")
    )


def test_a_skip_fails_under_make_test(conftest, monkeypatch):
    monkeypatch.setattr(conftest, "STRICT_SKIPS", True)
    report = conftest._strict_skip(_skipped())
    assert report.outcome == "failed"
    assert "chromium is not installed" in report.longrepr and "NPUOPS_ALLOW_SKIPS=1" in report.longrepr


def test_a_skip_stays_a_skip_outside_make_test(conftest, monkeypatch):
    monkeypatch.setattr(conftest, "STRICT_SKIPS", False)
    assert conftest._strict_skip(_skipped()).outcome == "skipped"


def test_an_expected_failure_is_not_touched(conftest, monkeypatch):
    monkeypatch.setattr(conftest, "STRICT_SKIPS", True)
    report = _skipped()
    report.wasxfail = "known"
    assert conftest._strict_skip(report).outcome == "skipped"


@pytest.mark.parametrize(
    "env, strict",
    [
        ({"NPUOPS_STRICT_SKIPS": "1"}, True),
        ({"NPUOPS_STRICT_SKIPS": "1", "NPUOPS_ALLOW_SKIPS": "1"}, False),
        ({}, False),
    ],
)
def test_the_switches(env, strict, monkeypatch, conftest):
    for name in ("NPUOPS_STRICT_SKIPS", "NPUOPS_ALLOW_SKIPS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("npuops_tests_conftest2", os.path.join(REPO, "tests", "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.STRICT_SKIPS is strict


def test_check_sh_exports_the_switch():
    with open(os.path.join(REPO, "scripts", "check.sh"), encoding="utf-8") as handle:
        assert "export NPUOPS_STRICT_SKIPS=1" in handle.read().splitlines()
