#!/usr/bin/env bash
# The ruff gate: `ruff check` (the rules in ruff.toml) and `ruff format --check` over the tree.
# Both run; the exit is non-zero if either fails.
# Usage: scripts/ruff.sh          check only (the gate of `make test` / `make check GATES=ruff`)
#        scripts/ruff.sh --fix    apply: `ruff check --fix` (safe fixes only), then `ruff format`
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
RUFF=${RUFF:-$VENV/bin/ruff}
[[ -x "$RUFF" ]] || { echo "ruff: $RUFF missing; run 'make venv' (requirements-dev.txt pins it)" >&2; exit 2; }
cd "$REPO" || exit 2

if [[ ${1:-} == --fix ]]; then
    "$RUFF" check --fix . && "$RUFF" format .
    exit $?
fi
[[ $# -eq 0 ]] || { echo "usage: scripts/ruff.sh [--fix]" >&2; exit 2; }

rc=0
"$RUFF" check --output-format concise . || rc=1
if ! "$RUFF" format --check .; then
    echo "ruff: files not formatted; run scripts/ruff.sh --fix (then review and commit)"
    rc=1
fi
if [[ $rc -eq 0 ]]; then echo "ruff: check and format clean"; else echo "ruff: FAILED"; fi
exit $rc
