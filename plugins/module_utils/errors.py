# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own exceptions. Every one carries a message fit for a user.

Modules catch ``NpuopsError`` and turn it into ``fail_json(msg=str(err))``: a bad input
never reaches the user as a traceback.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class NpuopsError(Exception):
    """Base class: ``str(err)`` is the complete user-facing message."""


class ParseError(NpuopsError):
    """Text from a named source (a command, a file) could not be understood."""

    def __init__(self, source, msg):
        self.source = source
        self.msg = msg
        super(ParseError, self).__init__("%s: %s" % (source, msg))


class PlanError(NpuopsError):
    """A CPU/GPU plan cannot be made. ``npu`` names the device (or None for the host).

    ``cpu_shortage``: the plan failed because too few CPUs are allowed, so a cpuset that
    cut the facts may be the cause (``plan.make_plan`` then says so with ``add_hint``).
    """

    def __init__(self, reason, npu=None, cpu_shortage=False):
        self.npu = npu
        self.reason = reason
        self.cpu_shortage = cpu_shortage
        self.hint = None
        if npu is None:
            text = reason
        else:
            text = "NPU %s: %s" % (npu, reason)
        super(PlanError, self).__init__(text)

    def add_hint(self, hint):
        """Append what to do to the message (``str(err)``): ``<message>; <hint>``."""
        self.hint = hint
        base = self.args[0]
        if base.endswith("."):
            base = base[:-1]
        self.args = ("%s; %s" % (base, hint),) + tuple(self.args[1:])


class UnsafePathError(NpuopsError):
    """A path we were asked to create or write is unsafe (symlink, '..', relative)."""

    def __init__(self, path, msg):
        self.path = path
        self.msg = msg
        super(UnsafePathError, self).__init__("refusing path %s: %s" % (path, msg))


class SnapshotError(NpuopsError):
    """A host snapshot directory is missing or malformed."""
