# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply or take back a host CPU partition (``render/cpu_partition``), all or nothing.

- ``Partition(host_root, ...).compare(files, runtime, tuned)`` reads what the host has: every
  file the partition may own, the runtime masks, tuned's active profile; ``steps`` is what
  a run would change (the same list in check mode and in a real run).
- ``apply`` saves the values it is about to replace (the state file: the runtime masks and
  tuned's profile as they were before the first partition, kept across later runs so that
  ``npuops_cpu_partition: false`` restores those), then writes files, removes stale ones,
  writes the masks, reloads systemd and switches tuned. A failure undoes every step taken, in
  reverse, and the error says what was undone and what state the host is in.
- ``take_back`` removes every partition file, restores the saved masks and tuned profile and
  removes the state file - the same way, all or nothing.
- The module holds the state file's lock (``apply/fileops.exclusive``) from reading the state
  to the last step of a real run (check mode takes none), so two runs at once cannot lose the
  values saved before the first partition.
- On a live host (``host_root=/``) a cgroup v2 partition is refused while an instance unit
  (``vllm-*.service``) still runs in ``system.slice``: the slice's ``AllowedCPUs=`` would cut
  its pools at once. It moves to ``npuops-vllm.slice`` at its next restart.
- Commands (``systemctl daemon-reload``, ``tuned-adm profile``) run only on a live host; in a
  sandbox root they are returned as ``pending``.

Standard library only, importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.npuops.fleet.plugins.module_utils.apply import fileops
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError, ParseError, PartitionError
from ansible_collections.npuops.fleet.plugins.module_utils.host import command
from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import LiveHostIO
from ansible_collections.npuops.fleet.plugins.module_utils.model.cpu_partition_facts import TUNED_ACTIVE
from ansible_collections.npuops.fleet.plugins.module_utils.render import cpu_partition as render

SYSTEM_SLICE_CGROUP = "/sys/fs/cgroup/system.slice"
MAX_STATE_BYTES = 65536
# the state file's lock (apply/fileops.exclusive) is held across a whole run, which may restart
# instances and run daemon-reload and tuned-adm (120 s each at most): a second run waits that long
LOCK_SECONDS = 600.0


def _mask_cpus(text, source):
    try:
        return set(cpulist.from_mask(text or "", source))
    except ParseError:
        return None


def systemd_file(path):
    return path.startswith("/etc/systemd/")


class Partition(object):
    def __init__(self, host_root="/", run=None, io=None):
        self.host_root = host_root or "/"
        self.live = self.host_root == "/"
        self.run = run or command.run
        self.io = io or LiveHostIO(self.host_root)

    # ---- reading -------------------------------------------------------------------------
    def read(self, path):
        return fileops.read_host_text(self.host_root, path)

    def state(self):
        text = self.read(render.STATE_FILE)
        if text is None:
            return None
        try:
            doc = json.loads(text[:MAX_STATE_BYTES])
        except ValueError as err:
            raise PartitionError(
                "%s: not the partition's state (JSON: %s); remove it only if no "
                "partition is applied" % (render.STATE_FILE, err)
            )
        if not isinstance(doc, dict):
            raise PartitionError("%s: not the partition's state (a JSON object)" % render.STATE_FILE)
        return doc

    def manager_affinity(self):
        """PID 1's Cpus_allowed_list (the manager's affinity), or None."""
        for line in (self.io.read_text("/proc/1/status") or "").splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip() or None
        return None

    def root_cpus(self):
        """The cgroup v2 root's effective CPUs (what an unrestricted slice gets), or None."""
        text = self.io.read_text("/sys/fs/cgroup/cpuset.cpus.effective")
        try:
            return cpulist.format(cpulist.parse(text.strip())) or None if text else None
        except ParseError:
            return None

    def tuned_active(self):
        text = self.read(TUNED_ACTIVE)
        return text.strip() if text is not None else None

    def runtime_now(self, path):
        text = self.io.read_text(path)
        return None if text is None else text.strip()

    def instance_dropins(self):
        """The instances' partition drop-ins on the host (``vllm-*.service.d``)."""
        out = []
        for name in sorted(self.io.listdir(render.UNIT_DIR) or []):
            path = "%s/%s/%s" % (render.UNIT_DIR, name, render.DROPIN)
            if render.is_instance_dropin(path) and self.io.exists(path):
                out.append(path)
        return out

    def instances_in_system_slice(self):
        """Instance units whose processes still run in system.slice (cgroup v2, live)."""
        names = self.io.listdir(SYSTEM_SLICE_CGROUP) or []
        found = []
        for name in sorted(names):
            if (
                name.startswith("vllm-")
                and name.endswith(".service")
                and not name.endswith("-bind.service")
                and not name.endswith("-reconcile.service")
            ):
                procs = self.io.read_text("%s/%s/cgroup.procs" % (SYSTEM_SLICE_CGROUP, name))
                if procs and procs.strip():
                    found.append(name)
        return found

    # ---- what would change ---------------------------------------------------------------
    def compare(self, files, runtime, tuned):
        """``(steps, warnings)``: each step a dict ``{kind, path, before, after}``."""
        steps, warnings = [], []
        known = render.every_file()
        for path in sorted(set(self.instance_dropins()) | set(p for p in files if p not in known)):
            known.insert(0, path)
        for path in known:
            before = self.read(path)
            after = files.get(path)
            if before is not None and after is None and not before.startswith(render.HEADER):
                warnings.append("%s was not written by the partition: left alone" % path)
                continue
            if before != after:
                steps.append({"kind": "file", "path": path, "before": before, "after": after})
        for path in render.RUNTIME_FILES:
            if path not in runtime:
                continue
            now = self.runtime_now(path)
            if now is None:
                warnings.append("%s is not there (kernel without it, or a sandbox root): not written" % path)
                continue
            if _mask_cpus(now, path) == _mask_cpus(runtime[path], path):
                continue
            if not fileops.writable(self.host_root, path):
                warnings.append(
                    "%s is read-only here (a container's /sys or /proc): not written "
                    "now; the tmpfiles.d line writes it at boot" % path
                )
                continue
            steps.append({"kind": "runtime", "path": path, "before": now, "after": runtime[path]})
        active = self.tuned_active()
        if tuned and active != tuned:
            steps.append({"kind": "tuned", "path": TUNED_ACTIVE, "before": active, "after": tuned})
        return steps, warnings

    def restore_steps(self, state):
        """Steps that take a partition back: every file of ours, the saved runtime values,
        tuned's previous profile, the state file."""
        saved = ((state or {}).get("runtime_before") or {}).items()
        steps, warnings = self.compare({}, dict((k, v) for k, v in saved if k in render.RUNTIME_FILES), None)
        before = (state or {}).get("manager_affinity_before")
        for step in steps:
            if step["path"] == render.MANAGER_DROPIN and step["after"] is None and not before:
                warnings.append(
                    "the manager's affinity before the partition is not known: "
                    "it keeps the partition's until the next boot"
                )
            if step["path"] == render.MANAGER_DROPIN and step["after"] is None and before:
                # an unset CPUAffinity= leaves the manager's affinity as it is (systemd
                # src/core/main.c update_cpu_affinity): reload it on the old one, then remove
                step["kind"] = "restore_then_remove"
                step["restore"] = render.manager_dropin(before)
        every = (state or {}).get("allowed_before")
        held = dict((render.unit_dropin(unit), section) for unit, section in render.cpu_partition.HELD_UNITS)
        for step in steps:
            if step["path"] in held and step["after"] is None and every:
                # removing AllowedCPUs= leaves the live cpuset as it was (systemd/systemd#43846,
                # open): widen it to every CPU first, then remove the drop-in
                step["kind"] = "restore_then_remove"
                step["restore"] = render.slice_dropin(held[step["path"]], every)
        active = self.tuned_active()
        if active == render.TUNED_PROFILE:
            steps.append(
                {
                    "kind": "tuned",
                    "path": TUNED_ACTIVE,
                    "before": active,
                    "after": (state or {}).get("tuned_before") or None,
                }
            )
        if state is not None:
            steps.append(
                {"kind": "file", "path": render.STATE_FILE, "before": self.read(render.STATE_FILE), "after": None}
            )
        return steps, warnings

    # ---- acting --------------------------------------------------------------------------
    def _write(self, path, text):
        if text is None:
            fileops.remove_file(self.host_root, path)
        else:
            fileops.ensure_file(self.host_root, path, text, mode=0o644, create_parents=True)

    def _command(self, argv):
        result = self.run(argv, timeout=120)
        if not result.ok:
            raise PartitionError(
                "%s failed (rc=%s): %s" % (" ".join(argv), result.rc, (result.stderr or "").strip()[-300:])
            )

    def _tuned(self, profile):
        if profile:
            self._command(["tuned-adm", "profile", profile])
        else:
            self._command(["tuned-adm", "off"])

    def execute(self, steps, state_text=None, restart=()):
        """Carry ``steps`` out (``state_text``: the state file to write first, or None;
        ``restart``: instance units restarted after the reload, so they move to their slice).
        Returns the commands left pending (sandbox root). All or nothing."""
        done = []
        pending = []
        try:
            if state_text is not None:
                before = self.read(render.STATE_FILE)
                if before != state_text:
                    self._write(render.STATE_FILE, state_text)
                    done.append({"kind": "file", "path": render.STATE_FILE, "before": before, "after": state_text})
            for step in steps:
                if step["kind"] == "file":
                    self._write(step["path"], step["after"])
                    done.append(step)
                elif step["kind"] == "restore_then_remove":
                    self._write(step["path"], step["restore"])
                    done.append(dict(step, after=step["restore"]))
            # daemon-reload re-reads system.conf.d too and applies the manager's CPUAffinity=
            # (systemd src/core/main.c, invoke_main_loop MANAGER_RELOAD: update_cpu_affinity);
            # a re-exec would not (initialize_runtime skips it when re-executing)
            if any(systemd_file(s["path"]) for s in done):
                if self.live:
                    self._command(["systemctl", "daemon-reload"])
                else:
                    pending.append("systemctl daemon-reload")
            restored = [s for s in steps if s["kind"] == "restore_then_remove"]
            for step in restored:
                self._write(step["path"], None)
            if restored and self.live:  # systemd's view matches the files again
                self._command(["systemctl", "daemon-reload"])
            for unit in restart:
                self._command(["systemctl", "restart", unit])
            for step in steps:
                if step["kind"] == "runtime":
                    fileops.write_in_place(self.host_root, step["path"], step["after"] + "\n")
                    done.append(step)
            for step in steps:
                if step["kind"] == "tuned":
                    if self.live:
                        self._tuned(step["after"])
                    else:
                        pending.append("tuned-adm profile %s" % step["after"])
                    done.append(step)
        except (NpuopsError, OSError) as err:
            undone, left = self._undo(done)
            raise PartitionError(
                "CPU partition step failed: %s. Rolled back: %s. %s"
                % (
                    err,
                    "; ".join(undone) or "nothing had changed",
                    ("NOT rolled back (the host keeps these): %s" % "; ".join(left))
                    if left
                    else "The host is as it was before this run.",
                )
            )
        return pending

    def _undo(self, done):
        undone, left = [], []
        reload_needed = False
        for step in reversed(done):
            what = "%s %s" % (step["kind"], step["path"])
            try:
                if step["kind"] in ("file", "restore_then_remove"):
                    self._write(step["path"], step["before"])
                    reload_needed = reload_needed or systemd_file(step["path"])
                elif step["kind"] == "runtime":
                    fileops.write_in_place(self.host_root, step["path"], step["before"] + "\n")
                elif step["kind"] == "tuned" and self.live:
                    self._tuned(step["before"])
                undone.append(what)
            except (NpuopsError, OSError) as err:
                left.append("%s (%s)" % (what, err))
        if reload_needed and self.live:
            try:
                self._command(["systemctl", "daemon-reload"])
            except NpuopsError as err:
                left.append("systemctl daemon-reload (%s)" % err)
        return undone, left


def new_state(old, steps, tuned_before, layout=None, manager_before=None, kernel_cmdline=None, allowed_before=None):
    """The state file's text: the runtime values and tuned profile before the first partition
    (an existing state keeps its own), and the partition's CPUs (``layout``: the drift scan
    reads ``isolated``)."""
    doc = dict(old or {})
    for key in ("isolated", "housekeeping", "irq"):
        if layout is not None:
            doc[key] = layout[key]
    doc.setdefault("runtime_before", {})
    for step in steps:
        if step["kind"] == "runtime":
            doc["runtime_before"].setdefault(step["path"], step["before"])
    doc.pop("kernel_cmdline", None)
    if kernel_cmdline:
        doc["kernel_cmdline"] = list(kernel_cmdline)
    if "allowed_before" not in doc and allowed_before:
        doc["allowed_before"] = allowed_before
    if "manager_affinity_before" not in doc and manager_before:
        doc["manager_affinity_before"] = manager_before
    if "tuned_before" not in doc and tuned_before != render.TUNED_PROFILE:
        doc["tuned_before"] = tuned_before
    doc["schema_version"] = 1
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def diff_of(steps):
    """Ansible diffs of the steps."""
    out = []
    for step in steps:
        end = "" if step["kind"] in ("file", "restore_then_remove") else "\n"
        out.append(
            {
                "before_header": step["path"],
                "after_header": step["path"],
                "before": "" if step["before"] is None else step["before"] + end,
                "after": "" if step["after"] is None else step["after"] + end,
            }
        )
    return out
