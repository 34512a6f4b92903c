# -*- coding: utf-8 -*-
"""apply/module_runner.run: the error shape, warnings and diff handling every module shares."""

from ansible_collections.npuops.fleet.plugins.module_utils.apply import module_runner
from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError, PlanError
from npuops_testing.module_harness import run_main

SPEC = {"value": {"type": "int", "default": 1}}


def _run(body, args=None, check=False, diff=False, **kwargs):
    return run_main(lambda: module_runner.run(SPEC, body, **kwargs), args or {}, check, diff)


def test_result_passes_through():
    result = _run(lambda m: {"changed": True, "value": m.params["value"]}, {"value": 7})
    assert result["changed"] is True and result["value"] == 7 and not result.get("failed")


def test_collection_error_is_a_message_with_the_prefix():
    def body(module):
        raise InputError("npu-smi info", "no chip table")

    result = _run(body, prefix="npu_cpu_plan: ")
    assert result["failed"] is True
    assert result["msg"] == "npu_cpu_plan: npu-smi info: no chip table"
    assert "exception" not in result


def test_plan_error_hint_reaches_the_message():
    def body(module):
        err = PlanError("too few CPUs", npu=3)
        err.add_hint("widen allowed_cpus")
        raise err

    assert _run(body)["msg"] == "NPU 3: too few CPUs; widen allowed_cpus"


def test_os_error_names_the_path_not_the_errno():
    def body(module):
        raise OSError(13, "Permission denied", "/proc/irq/5/smp_affinity_list")

    result = _run(body)
    assert result["msg"] == "/proc/irq/5/smp_affinity_list: Permission denied"


def test_os_error_without_a_path():
    assert module_runner.os_error_message(OSError("boom")) == "boom"
    assert module_runner.os_error_message(OSError(28, "No space left on device")) == "No space left on device"


def test_warnings_are_emitted_and_removed_from_the_result(monkeypatch):
    # module.warn itself: where it sends a warning depends on the process (a module's result
    # in a module process; once controller code was imported in the same process, Display)
    from ansible.module_utils.basic import AnsibleModule

    emitted = []
    monkeypatch.setattr(AnsibleModule, "warn", lambda self, text: emitted.append(text))
    result = _run(lambda m: {"changed": False, "warnings": ["irqbalance is running"]})
    assert emitted == ["irqbalance is running"]
    assert "irqbalance is running" not in str(result.get("warnings"))  # not passed on raw


def test_diff_dropped_outside_diff_mode_kept_in_it():
    def body(module):
        return {"changed": True, "diff": [{"before": "a", "after": "b"}]}

    assert "diff" not in _run(body)
    assert _run(body, diff=True)["diff"] == [{"before": "a", "after": "b"}]


def test_check_mode_supported_by_default():
    result = _run(lambda m: {"changed": True, "check": m.check_mode}, check=True)
    assert result["check"] is True and not result.get("skipped")


def test_argument_errors_are_ansible_messages():
    result = _run(lambda m: {"changed": False}, {"value": "many"})
    assert result["failed"] is True and "value" in result["msg"]
