# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """What every module of the collection shares in its documentation: the author.

    Use in a module's DOCUMENTATION (ansible-doc merges ``author`` in; a module that names its
    own authors keeps them beside these)::

        extends_documentation_fragment:
          - npuops.fleet.module
    """

    DOCUMENTATION = r"""
options: {}
author:
  - npuops.fleet contributors (@npuops)
"""
