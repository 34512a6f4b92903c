# -*- coding: utf-8 -*-
"""errors.py: every message names its source; the subclasses keep what the runner reports."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils import errors


def test_input_errors_name_the_source():
    err = errors.ParseError("npu-smi info -t topo", "no header line")
    assert str(err) == "npu-smi info -t topo: no header line"
    assert (err.source, err.msg) == ("npu-smi info -t topo", "no header line")
    assert isinstance(err, errors.InputError) and isinstance(err, errors.NpuopsError)


def test_unsafe_path_names_the_path():
    err = errors.UnsafePathError("/etc/../x", "'..' in the path")
    assert str(err) == "refusing path /etc/../x: '..' in the path" and err.path == "/etc/../x"


def test_plan_error_names_the_device_and_takes_a_hint():
    err = errors.PlanError("needs 4 CPUs, has 2.", npu=5, cpu_shortage=True)
    assert str(err) == "NPU 5: needs 4 CPUs, has 2." and err.cpu_shortage and err.hint is None
    err.add_hint("a cgroup may cut the allowed CPUs")
    assert str(err) == "NPU 5: needs 4 CPUs, has 2; a cgroup may cut the allowed CPUs"
    assert str(errors.PlanError("no NPU")) == "no NPU"


def test_gpu_plan_error_says_gpu():
    err = errors.GpuPlanError("no CPUs on node 1", gpu=3)
    assert str(err) == "GPU 3: no CPUs on node 1" and err.gpu == err.npu == 3
    assert isinstance(err, errors.PlanError)
    err.add_hint("widen allowed_cpus")
    assert str(err) == "GPU 3: no CPUs on node 1; widen allowed_cpus"
    assert str(errors.GpuPlanError("no GPU")) == "no GPU"


@pytest.mark.parametrize("cls", [errors.SnapshotError, errors.IrqError, errors.WrapperError])
def test_plain_errors_carry_the_message(cls):
    assert str(cls("a message")) == "a message" and issubclass(cls, errors.NpuopsError)


def test_soft_share_error_is_an_input_error():
    assert str(errors.SoftShareError("job", "no chips")) == "job: no chips"
