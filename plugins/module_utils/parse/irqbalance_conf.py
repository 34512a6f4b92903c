# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""irqbalance's environment file (``/etc/sysconfig/irqbalance``, ``/etc/default/irqbalance``):
text -> data. One parser for both readers: ``topology.gather`` (which IRQs are banned: the
facts' ``irqbalance.banned_irqs``) and ``render/irqbalance.render_irqbalance_config`` (which rewrites
``IRQBALANCE_ARGS``).

The unit runs ``irqbalance --foreground $IRQBALANCE_ARGS`` with this file as its
``EnvironmentFile``: the value is unquoted like the shell does, then split on blanks. The last
assignment wins, as in the shell. A ban is ``--banirq=N``, ``--banirq N``, ``-i N`` or ``-iN``.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import shlex

from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

# RHEL/openEuler/Kylin read the first, Debian/Ubuntu the second (EnvironmentFile of the unit).
CONFIG_PATHS = ("/etc/sysconfig/irqbalance", "/etc/default/irqbalance")
BAN_MARKER = "# npuops.fleet banned IRQs:"
_DIGITS_RE = re.compile(r"^[0-9]{1,10}\Z")  # IRQ numbers; bounded for int()
_ASSIGN_RE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=")
# irqbalance's setup_banned_cpus (cputree.c): a non-empty IRQBALANCE_BANNED_CPUS (hex mask,
# deprecated but honoured) wins, else a non-empty IRQBALANCE_BANNED_CPULIST, else the kernel's
# isolated and nohz_full CPUs.
_CPU_VARS = ("IRQBALANCE_BANNED_CPUS", "IRQBALANCE_BANNED_CPULIST")
_CPULIST_RE = re.compile(r"^[0-9]{1,5}(?:-[0-9]{1,5})?(?:,[0-9]{1,5}(?:-[0-9]{1,5})?)*\Z")
_MASK_RE = re.compile(r"^[0-9a-fA-F]{1,8}(?:,[0-9a-fA-F]{1,8}){0,2047}\Z")


def _value(line, name, source):
    """The words of ``NAME=value`` after shell unquoting (comments dropped)."""
    try:
        return shlex.split(line.split("=", 1)[1], comments=True)
    except ValueError as err:
        raise ParseError(source, "%s cannot be parsed (%s)" % (name, err))


def banned_irqs(args):
    """Sorted IRQ numbers that the options ``args`` ban (non-numeric values are ignored)."""
    found = set()
    index = 0
    while index < len(args):
        token = args[index]
        value = None
        if token.startswith("--banirq="):
            value = token[len("--banirq=") :]
        elif token in ("--banirq", "-i") and index + 1 < len(args):
            index += 1
            value = args[index]
        elif token.startswith("-i") and not token.startswith("--"):
            value = token[2:]
        if value is not None and _DIGITS_RE.match(value):
            found.add(int(value))
        index += 1
    return sorted(found)


def parse_config(text, source="irqbalance config", cpus=True):
    """The irqbalance environment file ``text`` as data.

    Returns ``{args_line, marker_line, args, ours, banned_irqs, banned_cpus}``:
    ``args_line`` / ``marker_line`` the 0-based line index of the (last) ``IRQBALANCE_ARGS``
    assignment and of our marker line, or None; ``args`` the options as the unit splits them;
    ``ours`` the IRQs our marker line lists; ``banned_irqs`` the IRQs ``args`` ban;
    ``banned_cpus`` the CPUs irqbalance keeps IRQs off as a cpulist: the hex mask
    ``IRQBALANCE_BANNED_CPUS`` when it is set and not empty, else ``IRQBALANCE_BANNED_CPULIST``
    (irqbalance's own order; ``""`` when the one that decides bans nothing), None when neither
    is set or ``cpus`` is false - irqbalance then bans the kernel's isolated and nohz_full CPUs;
    ``banned_cpus_from`` names the variable that decided. Raises ``ParseError(source, ...)`` on text it cannot read.
    """
    if not isinstance(text, str):
        raise ParseError(source, "expected text, got %s" % type(text).__name__)
    lines = text.splitlines()
    marker_at = args_at = None
    ours = set()
    cpu_lines = {}
    for index, line in enumerate(lines):
        if line.startswith(BAN_MARKER):
            marker_at = index
            ours = set(int(t) for t in line[len(BAN_MARKER) :].split() if _DIGITS_RE.match(t))
            continue
        match = _ASSIGN_RE.match(line)
        if not match:
            continue
        if match.group(1) == "IRQBALANCE_ARGS":
            args_at = index
        elif match.group(1) in _CPU_VARS:
            cpu_lines[match.group(1)] = line
    args = []
    if args_at is not None:
        # the shell/systemd value, then split on blanks like the unit's $IRQBALANCE_ARGS
        args = " ".join(_value(lines[args_at], "IRQBALANCE_ARGS", source)).split()
    banned_cpus = banned_from = None
    if cpus:
        banned_cpus, banned_from = _banned_cpus(cpu_lines, source)
    return {
        "args_line": args_at,
        "marker_line": marker_at,
        "args": args,
        "ours": sorted(ours),
        "banned_irqs": banned_irqs(args),
        "banned_cpus": banned_cpus,
        "banned_cpus_from": banned_from,
    }


def _banned_cpus(cpu_lines, source):
    """``(cpulist, variable)`` as irqbalance's setup_banned_cpus decides: a non-empty
    IRQBALANCE_BANNED_CPUS mask wins (even all zeros); else IRQBALANCE_BANNED_CPULIST when it is
    set at all (set but empty bans nothing, not even the kernel's isolated CPUs); else
    ``(None, None)``: irqbalance then bans the isolated and nohz_full CPUs."""
    for name in _CPU_VARS:
        if name not in cpu_lines:
            continue
        words = _value(cpu_lines[name], name, source)
        if not words:
            if name.endswith("CPULIST"):
                return "", name
            continue  # an empty mask is skipped by irqbalance
        if len(words) > 1:
            raise ParseError(
                source,
                "%s: %r is not one %s" % (name, " ".join(words), "cpulist" if name.endswith("CPULIST") else "CPU mask"),
            )
        # ASCII ids below 100000 / at most 65536 mask bits: a typo must not expand to
        # billions of CPU ids
        try:
            if name.endswith("CPULIST"):
                if not _CPULIST_RE.match(words[0]):
                    raise ParseError(source, "%s: %r is not a cpulist" % (name, words[0]))
                ids = cpulist.parse(words[0], name)
            else:
                if not _MASK_RE.match(words[0]):
                    raise ParseError(source, "%s: %r is not a CPU mask" % (name, words[0]))
                ids = cpulist.from_mask(words[0], name)
        except ParseError as err:
            # named as "<file>: <variable>: <problem>", like every other error of this file
            raise ParseError(source, err.msg if err.source == source else "%s: %s" % (err.source, err.msg))
        return cpulist.format(ids), name
    return None, None


_ENV_FILE_RE = re.compile(r"(/[^\s()]+) \(ignore_errors=(?:yes|no)\)")


def unit_environment_files(text):
    """The files of ``systemctl show -p EnvironmentFiles --value <unit>``, in order."""
    return _ENV_FILE_RE.findall(text or "")
