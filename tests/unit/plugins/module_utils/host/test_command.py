# -*- coding: utf-8 -*-
"""host/command.run: one command, bounded in time and output, never an exception."""

import sys

from ansible_collections.npuops.fleet.plugins.module_utils.host import command


def test_ok_output_and_c_locale():
    res = command.run([sys.executable, "-c", "import os; print(os.environ.get('LC_ALL'))"])
    assert res.ok and res.rc == 0 and res.stdout.strip() in ("C", "C.UTF-8") and res.failure() is None
    assert res.key == " ".join(res.argv)


def test_missing_command():
    res = command.run(["/nonexistent/npu-smi", "info"])
    assert res.missing and res.rc == 127 and not res.ok and res.failure() == "command not found"


def test_nul_in_an_argument_is_a_result():
    res = command.run(["echo", "a\0b"])
    assert not res.ok and res.rc == 126


def test_exit_code_and_last_stderr_line():
    res = command.run([sys.executable, "-c", "import sys; sys.stderr.write('x\\nno device\\n'); sys.exit(3)"])
    assert res.rc == 3 and res.failure() == "exit code 3: no device"


def test_timeout_kills_the_whole_group():
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    res = command.run([sys.executable, "-c", code], timeout=0.5)
    assert res.timed_out and res.rc == -9 and res.failure().startswith("timed out after")


def test_output_over_the_cap_is_refused():
    proc_text = "import sys; sys.stdout.write('x' * (%d + 1))" % command.MAX_OUTPUT
    res = command.run([sys.executable, "-c", proc_text], timeout=60)
    assert res.stdout == "" and res.error and "larger than 8 MiB" in res.failure()


def test_without_tracking_the_bounds_hold_and_proc_is_not_scanned(monkeypatch):
    """track=False (the binder's runs): the timeout, the group kill and the output cap hold;
    /proc is never scanned (track_family and pipe_holders are not called)."""

    def scanned(*args):
        raise AssertionError("/proc scanned")

    monkeypatch.setattr(command, "_proc_table", scanned)
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    res = command.run([sys.executable, "-c", code], timeout=0.5, track=False)
    assert res.timed_out and res.rc == -9
    flood = "import sys; sys.stdout.write('x' * (%d + 1))" % command.MAX_OUTPUT
    res = command.run([sys.executable, "-c", flood], timeout=60, track=False)
    assert res.stdout == "" and "larger than 8 MiB" in res.failure()
    res = command.run([sys.executable, "-c", "print('ok')"], track=False)
    assert res.ok and res.stdout == "ok\n"
    # a command that exits while its child holds the pipe: reading stops after LINGER
    lingering = (
        "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print('done')"
    )
    res = command.run([sys.executable, "-c", lingering], timeout=30, track=False)
    assert res.stdout == "done\n" and not res.timed_out
