# -*- coding: utf-8 -*-
"""scripts/real-gpu-check.py where there is no GPU (every CI machine): its arguments, and the
clear exit 3 with a summary when nvidia-smi, the driver or torch with CUDA is missing -
nothing started, nothing written outside its folder."""

import json
import os
import subprocess
import sys

import pytest

from npuops_testing import REPO

SCRIPT = os.path.join(REPO, "scripts", "real-gpu-check.py")


def _run(args, tmp_path, tools=None, environ=None):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name, body in (tools or {}).items():
        tool = bindir / name
        tool.write_text("#!/bin/sh\n" + body)
        tool.chmod(0o755)
    env = dict(os.environ, PATH=str(bindir))
    env.pop("OUT", None)
    env.update(environ or {})
    proc = subprocess.run(
        [sys.executable, SCRIPT] + args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        env=env,
        timeout=60,
        check=False,
        cwd=str(tmp_path),
    )
    return proc.returncode, proc.stdout, proc.stderr


def _summary(out):
    with open(os.path.join(str(out), "summary.json")) as handle:
        return json.load(handle)


def test_help_names_every_option(tmp_path):
    code, out, _err = _run(["--help"], tmp_path)
    assert code == 0
    for option in ("--out", "--python", "--gpu", "--deadline", "--tool-timeout"):
        assert option in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--deadline", "481"], "--deadline must be between 10 and 480"),
        (["--deadline", "5"], "--deadline must be between 10 and 480"),
        (["--gpu", "-1"], "--gpu must be a GPU index"),
        (["--python", "python3"], "--python python3 is not an executable absolute path"),
        (["--tool-timeout", "0"], "--tool-timeout must be between 1 and 120"),
        (["--deadline", "soon"], "invalid float value"),
    ],
)
def test_bad_arguments_exit_2_naming_the_option(tmp_path, args, message):
    code, _out, err = _run(["--out", str(tmp_path / "o")] + args, tmp_path)
    assert code == 2 and message in err
    assert not (tmp_path / "o").exists()


def test_a_folder_with_files_is_refused(tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "keep").write_text("x")
    code, _out, err = _run(["--out", str(tmp_path / "o")], tmp_path)
    assert code == 2 and "exists and is not an empty folder" in err
    assert os.listdir(str(tmp_path / "o")) == ["keep"]


def test_no_nvidia_smi_exits_3_and_says_so(tmp_path):
    out = tmp_path / "o"
    code, stdout, err = _run(["--out", str(out)], tmp_path)
    assert code == 3 and stdout == ""
    assert "no usable NVIDIA GPU here: nvidia-smi is not on PATH" in err
    assert "nothing was started" in err
    summary = _summary(out)
    assert summary["status"] == "no-gpu" and summary["steps"] == []
    assert os.listdir(str(out)) == ["summary.json"]


def test_a_driver_that_does_not_answer_exits_3_with_its_words(tmp_path):
    words = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running."
    )
    code, _out, err = _run(
        ["--out", str(tmp_path / "o")], tmp_path, tools={"nvidia-smi": 'echo "%s"\nexit 9\n' % words}
    )
    assert code == 3
    assert "nvidia-smi -L exited 9 and lists no GPU 0: NVIDIA-SMI has failed" in err
    assert _summary(tmp_path / "o")["status"] == "no-gpu"


def test_a_gpu_it_does_not_list_exits_3(tmp_path):
    code, _out, err = _run(
        ["--out", str(tmp_path / "o"), "--gpu", "3"],
        tmp_path,
        tools={"nvidia-smi": "echo 'GPU 0: NVIDIA H200 (UUID: GPU-1)'\n"},
    )
    assert code == 3 and "lists no GPU 3" in err


def test_python_without_torch_exits_3_naming_the_interpreter(tmp_path):
    python = tmp_path / "py" / "python3"
    python.parent.mkdir()
    python.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    python.chmod(0o755)
    code, _out, err = _run(
        ["--python", str(python)],
        tmp_path,
        tools={"nvidia-smi": "echo 'GPU 0: NVIDIA H200 (UUID: GPU-1)'\n"},
        environ={"OUT": str(tmp_path / "from-env")},
    )
    assert code == 3
    assert "%s has no torch with CUDA: ModuleNotFoundError: No module named 'torch'" % python in err
    # $OUT is the folder when --out is not given
    assert _summary(tmp_path / "from-env")["status"] == "no-gpu"


TOPO = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-1\t0\t\tN/A\n\nLegend:\n\n  X    = Self\n"
FAKE_SMI = """case "$*" in
  "-L") echo 'GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)' ;;
  "topo -m") cat '%(topo)s' ;;
  --query-gpu=index,pci.bus_id*) echo '0, 00000000:18:00.0' ;;
  --query-compute-apps=*) [ -f '%(pid)s' ] && echo "$(cat '%(pid)s'), 00000000:18:00.0, 900 MiB" ;;
  *) exit 6 ;;
esac
"""
# torch as far as the worker uses it, so the pipeline runs where there is no GPU
TORCH_STUB = """
uint8 = "uint8"
class cuda(object):
    is_available = staticmethod(lambda: True)
    set_device = staticmethod(lambda gpu: None)
    synchronize = staticmethod(lambda: None)
def empty(*args, **kwargs):
    return bytearray(16)
"""


@pytest.mark.slow
def test_the_whole_run_rehearsed_with_stand_ins(tmp_path):
    """The steps after the preflight, on this machine with a stand-in nvidia-smi (one GPU,
    a process table that lists the worker) and a stand-in torch: the snapshot is recorded,
    the plan made, the files rendered into the sandbox root, the worker titled like vLLM's
    and placed by the binder from nvidia-smi's table."""
    out = tmp_path / "o"
    (tmp_path / "topo.txt").write_text(TOPO)
    (tmp_path / "stub").mkdir()
    (tmp_path / "stub" / "torch.py").write_text(TORCH_STUB)
    smi = FAKE_SMI % {"topo": tmp_path / "topo.txt", "pid": out / "worker.pid"}
    code, stdout, err = _run(
        ["--out", str(out), "--deadline", "120"],
        tmp_path,
        tools={"nvidia-smi": smi},
        environ={"PYTHONPATH": str(tmp_path / "stub"), "PATH": "%s:/usr/bin:/bin" % (tmp_path / "bin")},
    )
    summary = _summary(out)
    assert code == 0, (err, summary)
    assert [s["step"] for s in summary["steps"]] == ["facts", "plan", "render", "start_worker", "tables", "bind"]
    assert summary["status"] == "ok" and json.loads(stdout)["status"] == "ok"
    steps = dict((s["step"], s["detail"]) for s in summary["steps"])
    assert steps["start_worker"]["title"] == "VLLM::Worker_TP0"
    assert steps["bind"]["workers"] == [[steps["start_worker"]["worker"], 0]]
    for rel in (
        "snapshot/snapshot.yml",
        "facts.json",
        "plan.json",
        "binder.json",
        "binder.log",
        "nvidia-smi/apps.txt",
        "root/usr/local/lib/npuops/gpucheck-launch",
        "root/usr/local/lib/npuops/gpucheck.plan.json",
        "root/usr/local/lib/npuops/gpucheck-bind",
        "root/etc/systemd/system/vllm-gpucheck.service",
        "root/etc/systemd/system/vllm-gpucheck-bind.service",
    ):
        assert (out / rel).is_file(), rel
    # check mode: the worker kept its CPUs, the binder only said what it would change
    assert json.loads((out / "binder.json").read_text())["changed"] in (True, False)
