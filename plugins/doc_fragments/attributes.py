# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Shared ``attributes:`` descriptions (community.general ``_attributes`` spirit).

    Use in a module's DOCUMENTATION::

        extends_documentation_fragment:
          - npuops.fleet.attributes
          - npuops.fleet.attributes.facts   # facts modules only

        attributes:
          check_mode:
            support: full
          diff_mode:
            support: full
          facts:
            support: full
    """

    # Standard documentation fragment: check_mode and diff_mode.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target,
      if not supported the action will be skipped.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)),
      when in diff mode.
"""

    # Facts modules: add this on top of the standard fragment.
    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
"""

    # Modules that only read (facts/info): changed is always false, nothing to diff.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
"""
