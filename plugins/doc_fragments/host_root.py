# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The ``host_root`` option of the modules that read or write host paths.

    Use in a module's DOCUMENTATION (the module's argument_spec still declares it, as
    ``host_root=dict(type="path", default="/")``)::

        extends_documentation_fragment:
          - npuops.fleet.host_root
    """

    DOCUMENTATION = r"""
options:
  host_root:
    description:
      - Prefix for every host path the module reads or writes (a sandbox directory in tests and
        demos).
      - An absolute path of an existing directory without C(.) or C(..) components; the real
        machine only as C(/) itself (or the option left out). An empty value (an unset
        variable, a lookup that found nothing), a relative path, C(//) or
        C(/srv/sandbox/root/../../..) is refused before the module does anything, never
        normalised.
    type: path
    default: /
"""
