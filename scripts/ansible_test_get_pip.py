# -*- coding: utf-8 -*-
# Copyright (c) npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline stand-in for ansible-test's downloaded ``get-pip-<ver>.py``.

ansible-test bootstraps pip in every sanity venv by downloading get-pip from
ci-files.testing.ansible.com, which is unreachable here. scripts/sanity.sh copies this file to
``~/.ansible/test/cache/get_pip_<ver>.py`` so ansible-test finds it "cached". It bootstraps
pip from the interpreter's bundled wheel (ensurepip), then installs the requested packages
(e.g. ``pip==24.2``) with the ordinary pip client and the machine's pip configuration.
"""

import ensurepip
import os
import subprocess
import sys

DROPPED = ("--no-setuptools", "--no-wheel")


def main():
    saved_env = dict(os.environ)
    # ensurepip strips PIP_* variables and points PIP_CONFIG_FILE at /dev/null; restore the
    # caller's environment afterwards or the machine's mirrors and certificates are lost.
    ensurepip.bootstrap(upgrade=True)
    os.environ.clear()
    os.environ.update(saved_env)
    args = [arg for arg in sys.argv[1:] if arg not in DROPPED]
    packages = [arg for arg in args if not arg.startswith("-")]
    if not packages:
        return 0
    return subprocess.call([sys.executable, "-m", "pip", "install"] + args, env=saved_env)


if __name__ == "__main__":
    sys.exit(main())
