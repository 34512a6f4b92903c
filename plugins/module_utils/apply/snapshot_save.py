# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a facts module records what it read into a snapshot (``save_snapshot``).

Both facts modules (``npu_topology_facts``, ``vllm_binding_facts``) read through
``recorder(source, save_dir)`` and finish with ``save(...)``: a snapshot written is the only change
such a module makes, so ``changed`` is true when one is written and, in check mode, when one would
be (nothing is written then and ``snapshot_saved`` is absent).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SnapshotError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio, snapshot


def recorder(source, save_dir, overwrite=False):
    """A RecordingHostIO over ``source`` when a snapshot is asked for, else None. The
    destination is refused here, before anything is read (check mode too): the snapshot being
    replayed, or a directory that holds anything unless ``overwrite``."""
    if not save_dir:
        return None
    recording = hostio.RecordingHostIO(source)
    snapshot.check_destination(save_dir, overwrite, recording.replayed())
    return recording


def save(recording, save_dir, check_mode, result, overwrite=False):
    """Write the recording to ``save_dir`` (not in check mode); set ``changed`` truthfully."""
    if recording is None:
        return result
    result["changed"] = True
    if check_mode:
        return result
    try:
        recording.save(save_dir, overwrite=overwrite)
    except (IOError, OSError) as err:
        raise SnapshotError("cannot write snapshot %s: %s" % (save_dir, err))
    result["snapshot_saved"] = save_dir
    return result
