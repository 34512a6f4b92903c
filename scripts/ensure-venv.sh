#!/usr/bin/env bash
# Create or refresh .venv from requirements-dev.txt, and link the collection for Ansible.
# REQUIREMENTS=requirements-demo.txt builds the light venv of the tour and the demo instead
# (make venv-demo: ansible-core only).
#
# Rebuild trigger: the sha256 of the requirements file differs from the stamp in .venv (or the
# venv is missing/broken). Quick no-op otherwise. Controller Python must be 3.11-3.13
# (ansible-core 2.19); the first suitable python3.X on PATH wins.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
REQ=$REPO/${REQUIREMENTS:-requirements-dev.txt}
# the dev venv must also run the tests; the demo venv only ansible
CHECK=ansible
[[ "$(basename "$REQ")" == requirements-dev.txt ]] && CHECK="ansible, pytest, kubernetes"
STAMP=$VENV/.requirements.sha256

log() { printf 'venv: %s\n' "$*"; }

link_collection() {
    local parent=$REPO/.cache/collections/ansible_collections/npuops
    mkdir -p "$parent"
    if [[ "$(readlink "$parent/fleet" 2>/dev/null)" != "../../../.." ]]; then
        rm -f "$parent/fleet"
        ln -s ../../../.. "$parent/fleet"
        log "linked .cache/collections/ansible_collections/npuops/fleet -> repo"
    fi
}

# shellcheck source-path=SCRIPTDIR source=lib/python.sh
. "$REPO/scripts/lib/python.sh"

want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [[ -x "$VENV/bin/python" ]] && [[ -f "$STAMP" ]] && [[ "$(cat "$STAMP")" == "$want" ]] \
    && "$VENV/bin/python" -c "import $CHECK" 2>/dev/null; then
    log "up to date ($VENV)"
    link_collection
    exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    python=$(pick_python 3.11 3.13) || { log "need Python 3.11-3.13 for ansible-core 2.19 (set PYTHON=...)" >&2; exit 2; }
    log "creating $VENV with $python ($("$python" --version 2>&1))"
    "$python" -m venv "$VENV"
fi
log "installing $(basename "$REQ")"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ" </dev/null
printf '%s\n' "$want" >"$STAMP"
link_collection
# The version from the package metadata: `ansible --version | head -1` made ansible-core print a
# "Broken pipe" traceback whenever head closed the pipe before ansible had written everything.
log "ready: ansible-core $("$VENV/bin/python" -c \
    'from importlib.metadata import version; print(version("ansible-core"))')"
