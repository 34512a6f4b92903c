# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The binder as one executable file: a Python zipapp (``#!<python>`` + a zip holding the
``standalone/`` package as ``npuops_bind/`` and a ``__main__.py``), so the several files of
the binder ship and run as one program on a host without the collection.

The zip is built byte-for-byte the same from the same sources (stored, fixed timestamps and
modes, sorted names), so installing it twice changes nothing.

Beside each module it holds that module compiled by the interpreter rendering it, as an
unchecked hash-based ``.pyc`` (PEP 552): zipimport cannot cache what it compiles, so without
them every run of the binder compiles its own source again, the largest part of what a
reconcile run costs. A binder run by another Python version finds a foreign magic number and
falls back to the source.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import io
import marshal
import re
import zipfile

from ansible_collections.npuops.fleet.plugins.module_utils.errors import WrapperError

PACKAGE = "npuops_bind"
MAIN = b"from npuops_bind.binder import main\n\nraise SystemExit(main())\n"
_PYTHON_RE = re.compile(r"^/[A-Za-z0-9_./+-]+\Z")
_NAME_RE = re.compile(r"^[a-z_]+\.py\Z")


def _entry(name, data):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_STORED
    return info, data


def compiled(name, data):
    """An unchecked hash-based .pyc of ``data`` (the bytes of module ``name``)."""
    code = compile(data, "%s/%s" % (PACKAGE, name), "exec", dont_inherit=True)
    return (importlib.util.MAGIC_NUMBER + b"\x01\x00\x00\x00" +
            importlib.util.source_hash(data) + marshal.dumps(code))


def render(sources, python="/usr/bin/env python3", bytecode=True):
    """Bytes of the zipapp from ``sources`` ({file name: bytes} of the standalone package),
    with their ``.pyc`` unless ``bytecode`` is False."""
    if python != "/usr/bin/env python3" and not _PYTHON_RE.match(python or ""):
        raise WrapperError("binder interpreter %r is not a plain absolute path" % (python,))
    entries = [_entry("__main__.py", MAIN)]
    for name in sorted(sources):
        if not _NAME_RE.match(name):
            raise WrapperError("binder source %r is not a module file name" % (name,))
        entries.append(_entry("%s/%s" % (PACKAGE, name), sources[name]))
        if bytecode:
            try:
                entries.append(_entry("%s/%sc" % (PACKAGE, name), compiled(name, sources[name])))
            except (SyntaxError, ValueError) as err:
                raise WrapperError("binder source %s does not compile: %s" % (name, err))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return ("#!%s\n" % python).encode("utf-8") + buffer.getvalue()
