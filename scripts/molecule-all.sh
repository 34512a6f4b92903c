#!/usr/bin/env bash
# Both molecule scenarios, as a `make test` gate: `default` (local connection) and `chroot`
# (a Debian bookworm chroot without psutil; prints SKIPPED and passes when not root, without
# debootstrap or without the Debian mirror). Prints one "molecule <scenario>: ok" line each.
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_COLOR=1 ANSIBLE_NOCOLOR=1 PY_COLORS=0
for scenario in default chroot; do
    extensions/molecule/run.sh "$scenario" test
    echo "molecule $scenario: ok"
done
