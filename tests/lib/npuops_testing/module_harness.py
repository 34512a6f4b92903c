# -*- coding: utf-8 -*-
"""Run a module of the collection in this process, without ansible-playbook (the unit tier's
answer to community.general's ``ModuleTestCase``/``UTHelper``).

- ``call_module(name, args, check=False, diff=False)``: runs ``plugins/modules/<name>.main()``
  with ``args`` (``ansible.module_utils.testing.patch_module_args``) and returns the result
  dict it would hand Ansible: ``exit_json``'s keys, or ``fail_json``'s with ``failed: true``. A
  traceback escaping the module is not caught: the test fails with it, as it should.
- ``run_main(main, args, check=False, diff=False)``: the same for any ``main`` callable (a
  test's own body given to ``module_runner.run``)
- ``expand(value, tmp)``: the data cases' placeholders, recursively - a string
  ``@snapshot:<host>`` is that recorded host's directory, ``@facts:<host>`` its facts,
  ``@plan:<host>`` / ``@plan:<host>:<policy>`` its whole-host plan, ``@tmp/<rel>`` a path in the
  case's temporary directory.
"""

import contextlib
import importlib
import io
import json
import os

from ansible.module_utils.testing import patch_module_args

from npuops_testing import SNAPSHOTS

MODULES = "ansible_collections.npuops.fleet.plugins.modules."


def fresh_warnings():
    """Forget the warnings and deprecations of earlier runs: ansible-core keeps them in a
    process-wide table (one process per module run outside tests)."""
    from ansible.module_utils.common import warnings

    for name in ("_global_warnings", "_global_deprecations"):
        table = getattr(warnings, name, None)
        if table is not None:
            table.clear()


def run_main(main, args, check=False, diff=False):
    """The result dict of ``main()`` (an AnsibleModule program) run with ``args``."""
    full = dict(args)
    full.update(_ansible_check_mode=check, _ansible_diff=diff)
    out = io.StringIO()
    fresh_warnings()
    # a module runs on a target: once a test has loaded controller code in this process,
    # ansible-core would send the module's deprecations to the controller's display instead of
    # its result (module_utils/common/warnings.deprecate)
    from ansible.module_utils import _internal

    was_controller = getattr(_internal, "is_controller", False)
    _internal.is_controller = False
    try:
        with patch_module_args(full), contextlib.redirect_stdout(out):
            try:
                main()
            except SystemExit:
                pass
    finally:
        _internal.is_controller = was_controller
    return json.loads(out.getvalue())


def call_module(name, args, check=False, diff=False):
    return run_main(importlib.import_module(MODULES + name).main, args, check, diff)


def facts_of(host):
    from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import SnapshotHostIO
    from ansible_collections.npuops.fleet.plugins.module_utils.model import topology

    return topology.gather(SnapshotHostIO(os.path.join(SNAPSHOTS, host)))


def plan_of(host, policy="strict"):
    from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch

    return dispatch.make_plan(facts_of(host), policy=policy)


def expand(value, tmp):
    if isinstance(value, dict):
        return dict((k, expand(v, tmp)) for k, v in value.items())
    if isinstance(value, list):
        return [expand(v, tmp) for v in value]
    if not isinstance(value, str) or not value.startswith("@"):
        return value
    if value.startswith("@tmp/"):
        return os.path.join(str(tmp), value[len("@tmp/") :])
    kind, _sep, rest = value[1:].partition(":")
    if kind == "snapshot":
        return os.path.join(SNAPSHOTS, rest)
    if kind == "facts":
        return facts_of(rest)
    if kind == "plan":
        return plan_of(*rest.split(":"))
    raise ValueError("unknown placeholder %r" % value)
