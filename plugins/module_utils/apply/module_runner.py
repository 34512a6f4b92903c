# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one module runner: every module of the collection is ``run(argument_spec, body)``.

``body(module)`` returns the result dict. The runner turns the collection's errors
(``NpuopsError`` and its subclasses) and ``OSError`` into ``fail_json`` the same way for every
module, so a bad input or a host that refuses a write is a message, never a traceback; it also
emits ``warnings`` (a list in the result) through ``module.warn`` and drops ``diff`` unless
diff mode is on.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host.paths import check_host_root

# options that name a root every host path is read or written under (``paths.HOST_ROOT_RULE``)
ROOT_OPTIONS = ("host_root", "snapshot_overlay")


def os_error_message(err):
    """``<path>: <reason>`` for an OSError (``[Errno 2] ...`` is not a message for a user)."""
    reason = err.strerror or str(err)
    name = err.filename if err.filename is not None else None
    return "%s: %s" % (name, reason) if name else reason


def run(argument_spec, body, prefix="", **module_kwargs):
    """Build the AnsibleModule (check mode supported unless said otherwise), run ``body``."""
    module_kwargs.setdefault("supports_check_mode", True)
    module = AnsibleModule(argument_spec=argument_spec, **module_kwargs)
    try:
        for option in ROOT_OPTIONS:  # before anything runs: "" is not the real machine
            if option in argument_spec and (option == "host_root" or module.params.get(option) is not None):
                # a sandbox overlay not written yet (the demo's first facts) overlays nothing
                check_host_root(module.params.get(option), must_exist=option == "host_root")
        result = body(module)
    except NpuopsError as err:
        module.fail_json(msg=prefix + str(err))
    except (IOError, OSError) as err:
        module.fail_json(msg=prefix + os_error_message(err))
    for warning in result.pop("warnings", None) or []:
        module.warn(warning)
    if not module._diff:
        result.pop("diff", None)
    module.exit_json(**result)
