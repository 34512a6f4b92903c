# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``npu_topology.vllm`` and an instance's own vLLM: which vLLM runs, read, never imported.

vLLM is read exactly as vllm-ascend is (``vllm_ascend/model/version``, ``package=VLLM``: the same
site-packages rules and the same bounds against hostile images): the facts look in the roots
of the accelerator workers, then in the environments the user names, then in the host's
site-packages. An instance looks in its own environment first - the virtual environment or
interpreter its command names (``/opt/venv/bin/vllm``, ``/opt/py/bin/python3``) - then in the
host's site-packages.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError
from ansible_collections.npuops.fleet.plugins.module_utils.model import vllm_flags
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.model import version as reader


def gather(io, paths=None, pids=(), errors=None, warnings=None):
    """``{version, source[, commit]}`` of vLLM, or None when it is found nowhere."""
    return reader.gather(io, paths, pids, errors, warnings, package=reader.VLLM)


def command_env(command):
    """The environment root the command's program lives in (``/opt/venv`` of
    ``/opt/venv/bin/vllm``), or None for a program found on PATH or a path with ``..``."""
    program = command[0] if command else ""
    if not isinstance(program, str) or not program.startswith("/") or "/bin/" not in program:
        return None
    if ".." in program.split("/") or len(program) > 4096:
        return None
    return program.rsplit("/bin/", 1)[0] or "/"


def for_command(io, command, errors=None, warnings=None):
    """The vLLM an instance runs: its command's environment, then the host's site-packages.
    ``{version, source[, commit]}`` or None."""
    env = command_env(command)
    paths = [env] if env and env != "/" else []
    return gather(io, paths, (), errors, warnings)


def resolve(io, command, given=None, errors=None, warnings=None):
    """The instance's vLLM: ``given`` (a version the user states) wins; else read from the
    command's environment, then the host. ``{version, source}`` or None when unknown.
    WrapperError when ``given`` is not a version."""
    if given:
        if vllm_flags.release_of(given) is None:
            raise WrapperError("vllm_version: %r is not a version such as 0.34.0" % (given[:60],))
        return {"version": given.strip(), "source": "option vllm_version"}
    return for_command(io, command, errors, warnings)
