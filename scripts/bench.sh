#!/usr/bin/env bash
# Run every bench/bench_*.py with the venv python; each prints its own Markdown table.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
cd "$REPO"
shopt -s nullglob
benches=(bench/bench_*.py)
if [[ ${#benches[@]} -eq 0 ]]; then
    echo "bench: no bench/bench_*.py yet"
    exit 0
fi
failed=0
for bench in "${benches[@]}"; do
    printf '\n### %s\n\n' "$bench"
    PYTHONPATH="$REPO/.cache/collections${PYTHONPATH:+:$PYTHONPATH}" "$VENV/bin/python" "$bench" </dev/null \
        || { echo "bench: $bench failed (rc=$?)" >&2; failed=1; }
done
exit $failed
