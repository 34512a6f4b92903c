#!/usr/bin/env bash
# ansible-lint, production profile (.ansible-lint), run from the collection root.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
cd "$REPO"
export PATH="$VENV/bin:$PATH"
# Resolve npuops.fleet through the repo link, never a stale copy in ~/.ansible/collections.
export ANSIBLE_COLLECTIONS_PATH="$REPO/.cache/collections"
exec ansible-lint --nocolor --offline "$@" </dev/null
