# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own exceptions. Every one carries a message fit for a user.

Every exception class of the collection is here and derives from ``NpuopsError``; the module
runner (``apply/module_runner.py``) turns any of them into ``fail_json(msg=str(err))``, so a
bad input never reaches the user as a traceback. The binder (``standalone/``, shipped as a
zipapp with the module_utils files it imports) raises ``BindError``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class NpuopsError(Exception):
    """Base class: ``str(err)`` is the complete user-facing message."""


class InputError(NpuopsError):
    """An input from a named source is wrong: ``<source>: <msg>``."""

    def __init__(self, source, msg):
        self.source = source
        self.msg = msg
        super(InputError, self).__init__("%s: %s" % (source, msg))


class ParseError(InputError):
    """Text from a named source (a command, a file) could not be understood."""


class PlanError(NpuopsError):
    """A CPU/GPU plan cannot be made. ``npu`` names the device (or None for the host),
    ``word`` its kind (NPU, GPU on NVIDIA hosts).

    ``cpu_shortage``: the plan failed because too few CPUs are allowed, so a cpuset that
    cut the facts may be the cause (``plan.make_plan`` then says so with ``add_hint``).
    """

    def __init__(self, reason, npu=None, cpu_shortage=False, word="NPU"):
        self.npu = npu
        self.reason = reason
        self.cpu_shortage = cpu_shortage
        self.hint = None
        if npu is None:
            text = reason
        else:
            text = "%s %s: %s" % (word, npu, reason)
        super(PlanError, self).__init__(text)

    def add_hint(self, hint):
        """Append what to do to the message (``str(err)``): ``<message>; <hint>``."""
        self.hint = hint
        base = self.args[0]
        if base.endswith("."):
            base = base[:-1]
        self.args = ("%s; %s" % (base, hint),) + tuple(self.args[1:])


class UnsafePathError(InputError):
    """A path we were asked to create or write is unsafe (symlink, '..', relative)."""

    def __init__(self, path, msg):
        super(UnsafePathError, self).__init__("refusing path %s" % (path,), msg)
        self.path = path


class SnapshotError(NpuopsError):
    """A host snapshot directory is missing or malformed."""


class GpuPlanError(PlanError):
    """A GPU plan cannot be made; names the GPU (``GPU 3: ...``) when one is at fault."""

    def __init__(self, reason, gpu=None, cpu_shortage=False):
        super(GpuPlanError, self).__init__(reason, cpu_shortage=cpu_shortage)
        self.npu = gpu
        self.gpu = gpu
        if gpu is not None:
            self.args = ("GPU %s: %s" % (gpu, reason),)

    def __str__(self):
        return self.args[0]


class SoftShareError(InputError):
    """A soft-share input (job, allocation, plugin configuration) is invalid."""


class IrqError(NpuopsError):
    """IRQ affinity cannot be applied; the message names the IRQ or file and why."""


class WrapperError(NpuopsError):
    """A wrapper or unit cannot be rendered from these inputs; the message says why."""


class BindError(NpuopsError):
    """The binder (standalone/) cannot bind a worker, or its plan is unusable; the message
    says why."""


class PartitionError(NpuopsError):
    """A host CPU partition step failed; the message says what was rolled back and what state
    the host is in (``apply/cpu_partition``)."""
