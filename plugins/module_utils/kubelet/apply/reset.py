# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host-side steps of a kubelet configuration change, taken while the kubelet is stopped.

The drain, the stop and start, the healthz and Ready checks and the uncordon are the role's
(``roles/k8s_node/tasks/kubelet_change.yml``: ``kubernetes.core.k8s_drain`` on the controller,
``ansible.builtin.systemd_service``, ``ansible.builtin.uri``); what is left for the host is
three file steps, each one atomic and each one leaving every file where the kubelet expects it:

- ``apply``: the configuration file saved beside itself (``<name>.npuops-old``, or an empty
  ``<name>.npuops-none`` when there was none), the kubelet's state files moved aside
  (``<name>.npuops-old``, when ``move_state``), the new text written (temporary file + rename);
- ``rollback``: the saved configuration put back (the new file removed when there was none)
  and the state files moved back over whatever a failed kubelet wrote there;
- ``commit``: the saved copies removed (the change is kept).

Every file is found as the kubelet finds it: a symlinked directory on the way (a
``/var/lib/kubelet`` on a data disk) is followed, as if the host root were ``/``
(``host/paths.resolve``); the files themselves are never followed: a state or configuration
file that is a symlink, a directory, a device, has more than one hard link or is larger than
``MAX_STATE_BYTES`` is refused, by ``inspect`` before anything moves (the role runs it in
check mode before the drain), so nothing is read outside the rollback once the kubelet is
stopped. A copy left aside by an earlier run that did not finish is refused too: ``apply``
never overwrites the only copy of the old state; ``rollback`` (or ``commit``) resolves it.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import paths

STATE_FILES = ("/var/lib/kubelet/cpu_manager_state", "/var/lib/kubelet/memory_manager_state")
OLD = ".npuops-old"  # the saved copy of a file, beside it
NONE = ".npuops-none"  # the marker of a configuration file that did not exist
# the kubelet's checkpoints are a few KB (a CPU set and a few containers' sets per pod)
MAX_STATE_BYTES = 4 * 1024 * 1024
MAX_CONFIG_BYTES = 1024 * 1024
STEPS = ("apply", "rollback", "commit")


def resolve_dirs(host_root, path):
    """``path`` with the symlinks of its directories resolved as the kubelet resolves them
    (absolute targets restart at ``host_root``): where ``fileops``, which follows none, finds
    the file the kubelet reads. A directory missing on the way leaves ``path`` as it is (it is
    created without following anything)."""
    parts = paths.check_components(path)
    if len(parts) < 2:
        return path
    root_fd = paths.open_root(host_root)
    try:
        try:
            parent, name, names = paths.resolve(root_fd, parts[:-1])
        except OSError as err:
            if err.errno == errno.ENOENT:
                return path
            raise NpuopsError("%s: its directory cannot be resolved (%s)" % (path, os.strerror(err.errno)))
        os.close(parent)
    finally:
        os.close(root_fd)
    return "/" + "/".join(list(names) + ([name] if name else []) + [parts[-1]])


class _Dir(object):
    """The directory that holds host path ``path`` under ``host_root``, symlinks on the way
    followed as the kubelet would (absolute targets restart at the root); ``fd`` is None when
    the directory does not exist (and ``create`` was not asked)."""

    def __init__(self, host_root, path, create=False):
        self.path = path
        parts = paths.check_components(path)
        if not parts:
            raise NpuopsError("%s: a file path, not the root" % path)
        self.name = parts[-1]
        self.fd = None
        root_fd = paths.open_root(host_root)
        try:
            try:
                parent, name, dummy = paths.resolve(root_fd, parts[:-1])
            except OSError as err:
                if err.errno == errno.ENOENT and create:
                    # a directory missing on the way: created, no symlink followed while creating
                    self.fd = paths.open_dirs(root_fd, parts[:-1], path, create_mode=0o755)
                    return
                if err.errno == errno.ENOENT:
                    return  # no directory: no file
                raise NpuopsError("%s: its directory cannot be resolved (%s)" % (path, os.strerror(err.errno)))
            if name is None:
                self.fd = parent
                return
            try:
                self.fd = os.open(name, paths.DIR_FLAGS | paths.NOFOLLOW, dir_fd=parent)
            except OSError as err:
                if err.errno != errno.ENOENT:
                    raise NpuopsError("%s: its directory is not one (%s)" % (path, os.strerror(err.errno)))
                if create:
                    os.mkdir(name, 0o755, dir_fd=parent)
                    self.fd = os.open(name, paths.DIR_FLAGS | paths.NOFOLLOW, dir_fd=parent)
            finally:
                os.close(parent)
        finally:
            os.close(root_fd)

    def close(self):
        paths.close(self.fd)
        self.fd = None

    def lstat(self, name=None):
        return None if self.fd is None else paths.lstat_at(self.fd, name or self.name)

    def exists(self, suffix=""):
        return self.lstat(self.name + suffix) is not None


def _check_file(directory, name, path, limit):
    """Refuse what the kubelet's own file cannot be: returns the lstat (None when absent)."""
    st = directory.lstat(name)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise NpuopsError(
            "%s is a symlink: the kubelet writes its own files in place, so this one "
            "was put there by someone else; nothing was changed - look at it by hand" % path
        )
    if not stat.S_ISREG(st.st_mode):
        raise NpuopsError("%s is not a regular file; nothing was changed" % path)
    if st.st_nlink > 1:
        raise NpuopsError(
            "%s has %d hard links (a link can lead outside the kubelet's directory); "
            "nothing was changed" % (path, st.st_nlink)
        )
    if st.st_size > limit:
        raise NpuopsError(
            "%s is %d bytes, more than the %d a kubelet file can be; nothing was changed" % (path, st.st_size, limit)
        )
    return st


def _read(directory, name, path, limit):
    data, problem = paths.read_at(directory.fd, name, limit)
    if problem:
        raise NpuopsError("%s %s; nothing was changed" % (path, problem))
    return data


class Change(object):
    """One configuration file and the kubelet's state files, opened (directories resolved)
    and checked; ``plan(step)`` says what ``run(step)`` does, without doing it. ``content``:
    the new configuration text (``apply`` only); ``create``: make a missing configuration
    directory (False in check mode). The caller closes it."""

    def __init__(self, host_root, config_path, content=None, state_files=STATE_FILES, move_state=True, create=True):
        self.host_root = host_root
        self.content = None if content is None else content.encode("utf-8")
        if self.content is not None and len(self.content) > MAX_CONFIG_BYTES:
            raise NpuopsError("config_content: %d bytes, more than %d" % (len(self.content), MAX_CONFIG_BYTES))
        self.config = _Dir(host_root, config_path, create=create and content is not None)
        self.states = []
        try:
            for path in state_files if move_state else ():
                self.states.append(_Dir(host_root, path))
            self._inspect()
        except BaseException:
            self.close()
            raise

    def close(self):
        self.config.close()
        for state in self.states:
            state.close()

    def _inspect(self):
        config = self.config
        self.config_st = _check_file(config, config.name, config.path, MAX_CONFIG_BYTES)
        self.old_config = None
        if self.config_st is not None:
            self.old_config = _read(config, config.name, config.path, MAX_CONFIG_BYTES)
        self.saved = None  # OLD or NONE when an earlier apply left its copy
        for suffix in (OLD, NONE):
            if config.exists(suffix):
                _check_file(config, config.name + suffix, config.path + suffix, MAX_CONFIG_BYTES)
                if self.saved:
                    raise NpuopsError(
                        "%s: both %s and %s are there; put the right one back by hand" % (config.path, OLD, NONE)
                    )
                self.saved = suffix
        for state in self.states:
            _check_file(state, state.name, state.path, MAX_STATE_BYTES)
            _check_file(state, state.name + OLD, state.path + OLD, MAX_STATE_BYTES)

    def _aside(self):
        """State files moved aside by an earlier apply (their copies are there)."""
        return [s for s in self.states if s.exists(OLD)]

    def plan(self, step):
        """The effects ``run(step)`` would have, as text, in order (empty: nothing to do)."""
        if step not in STEPS:
            raise NpuopsError("step %r: one of %s" % (step, ", ".join(STEPS)))
        config = self.config
        out = []
        if step == "apply":
            left = [config.path + self.saved] if self.saved else []
            left += [s.path + OLD for s in self._aside()]
            if left:
                raise NpuopsError(
                    "%s left by a run that did not finish: run step=rollback (put the "
                    "old files back) or step=commit (keep the new ones) first; "
                    "nothing was changed" % ", ".join(left)
                )
            moving = [s for s in self.states if s.exists()]
            if self.content != self.old_config:
                out.append("saved %s as %s" % (config.path, config.path + (OLD if self.config_st else NONE)))
            out.extend("moved %s aside" % s.path for s in moving)
            if self.content != self.old_config:
                out.append("wrote %s" % config.path)
        elif step == "rollback":
            if self.saved == OLD:
                out.append("put back %s" % config.path)
            elif self.saved == NONE:
                out.append("removed %s (there was none)" % config.path)
            out.extend("put back %s" % s.path for s in self._aside())
        else:
            if self.saved:
                out.append("removed %s" % (config.path + self.saved))
            out.extend("removed %s" % (s.path + OLD) for s in self._aside())
        return out

    def run(self, step):
        """Do ``step``; returns what was done (``plan(step)``)."""
        done = self.plan(step)
        getattr(self, "_" + step)()
        return done

    def _write(self, directory, name, data, like):
        mode = 0o644 if like is None else stat.S_IMODE(like.st_mode)
        uid = None if like is None else like.st_uid
        gid = None if like is None else like.st_gid
        paths.write_atomic_at(directory.fd, name, data, mode=mode, uid=uid, gid=gid)

    def _apply(self):
        config = self.config
        changed = self.content != self.old_config
        if changed:
            if self.config_st is not None:
                self._write(config, config.name + OLD, self.old_config, self.config_st)
            else:
                self._write(config, config.name + NONE, b"", None)
        for state in self.states:
            if state.exists():
                os.rename(state.name, state.name + OLD, src_dir_fd=state.fd, dst_dir_fd=state.fd)
        if changed:
            self._write(config, config.name, self.content, self.config_st)

    def _rollback(self):
        config = self.config
        if self.saved == OLD:
            os.rename(config.name + OLD, config.name, src_dir_fd=config.fd, dst_dir_fd=config.fd)
        elif self.saved == NONE:
            if config.exists():
                os.unlink(config.name, dir_fd=config.fd)
            os.unlink(config.name + NONE, dir_fd=config.fd)
        for state in self._aside():
            # a failed kubelet may have written a new state file: the old one replaces it
            os.rename(state.name + OLD, state.name, src_dir_fd=state.fd, dst_dir_fd=state.fd)

    def _commit(self):
        config = self.config
        if self.saved:
            os.unlink(config.name + self.saved, dir_fd=config.fd)
        for state in self._aside():
            os.unlink(state.name + OLD, dir_fd=state.fd)
