#!/usr/bin/env bash
# The docs gate: module pages current (gen_module_docs.py), the instance schema rendered into
# every role's argument spec (gen_argument_specs.py) and every role variable in its role's page
# (gen_role_docs.py). All run; the exit is non-zero if any fails.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
rc=0
"$VENV/bin/python" "$REPO/scripts/gen_module_docs.py" --check || rc=1
"$VENV/bin/python" "$REPO/scripts/gen_argument_specs.py" --check || rc=1
"$VENV/bin/python" "$REPO/scripts/gen_role_docs.py" --check || rc=1
exit $rc
