# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CANN toolkit's install record -> its version.

``/usr/local/Ascend/ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info`` (the
toolkit installer writes it; vllm-ascend's ``collect_env.py`` prints it under "CANN:"):
``key=value`` lines, ``package_name=Ascend-cann-toolkit``, ``version=8.3.RC2``,
``innerversion=V100R001C23SPC002B210``, ``arch``, ``os``, ``path``. Real captures:
tests/fixtures/real/ascend/cann-*_ascend_toolkit_install.info.txt. Pure, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError

TOOLKIT_DIR = "/usr/local/Ascend/ascend-toolkit/latest"
INFO_NAME = "ascend_toolkit_install.info"
MAX_LINES = 256
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")


def parse_install_info(text, source=TOOLKIT_DIR + "/<arch>-linux/" + INFO_NAME):
    """``{"version", "innerversion", "package_name", "arch"}`` (None when absent); ParseError
    when there is no ``version=`` line or its value is not a version."""
    if not isinstance(text, str):
        raise ParseError(source, "expected text")
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise ParseError(source, "more than %d lines" % MAX_LINES)
    fields = {}
    for line in lines:
        key, sep, value = line.strip().partition("=")
        if sep and _KEY.match(key.strip()):
            fields.setdefault(key.strip(), value.strip()[:200])
    version = fields.get("version")
    if not version:
        raise ParseError(source, "no 'version=' line")
    if not _VERSION.match(version):
        raise ParseError(source, "version %r is not a version" % version[:40])
    return {
        "version": version,
        "innerversion": fields.get("innerversion") or None,
        "package_name": fields.get("package_name") or None,
        "arch": fields.get("arch") or None,
    }
