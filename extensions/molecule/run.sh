#!/usr/bin/env bash
# Run a molecule scenario of this collection from the repo root, against the collection as
# linked in .cache/collections (molecule's prerun, which would install a copy into
# ~/.ansible/collections, is off). Usage: extensions/molecule/run.sh [default|chroot] [action]
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
SCENARIO="${1:-default}"
ACTION="${2:-test}"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.cache/collections"
export PATH="$VENV/bin:$PATH"
cd "$REPO"
exec "$VENV/bin/molecule" "$ACTION" -s "$SCENARIO"
