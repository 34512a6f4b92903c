#!/usr/bin/env bash
# Run the quality gates in order, keep going after a failure, print one summary table and exit
# non-zero if any gate failed.
# Usage: scripts/check.sh [py37] [docs] [ruff] [unit] [realvllm] [sanity] [lint] [systemd] [molecule]   (default: all)
# Each gate's output streams to the terminal and to .cache/check/<gate>.log.
# A skipped pytest test fails here (NPUOPS_STRICT_SKIPS=1, tests/conftest.py): what `make deps`
# installs must be there, and CI must not pass a test it did not run. NPUOPS_ALLOW_SKIPS=1 accepts
# skips on purpose (a machine without chromium, say); the real tiers have NPUOPS_SKIP_REAL_*.
set -uo pipefail
export NPUOPS_STRICT_SKIPS=1

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
LOGS=$REPO/.cache/check
PYTEST_ARGS=${PYTEST_ARGS:-}
mkdir -p "$LOGS"
cd "$REPO" || exit 2

gates=("$@")
[[ ${#gates[@]} -eq 0 ]] && gates=(py37 docs ruff unit realvllm sanity lint systemd molecule)

gate_cmd() {
    case "$1" in
        py37)   echo "scripts/compile-py37.sh" ;;
        docs)   echo "scripts/check-docs.sh" ;;
        ruff)   echo "scripts/ruff.sh" ;;
        # one pytest run over both trees, so the closing "N passed" counts every test
        unit)   echo "$VENV/bin/python -m pytest tests/unit tests/integration -q -n ${PYTEST_WORKERS:-2} --durations=5 $PYTEST_ARGS" ;;
        realvllm) echo "scripts/real-vllm-tier.sh" ;;
        sanity) echo "scripts/sanity.sh" ;;
        lint)   echo "scripts/lint.sh" ;;
        systemd) echo "scripts/real-systemd-tier.sh" ;;
        molecule) echo "scripts/molecule-all.sh" ;;
        *)      return 1 ;;
    esac
}

# One line worth showing per gate in the summary.
gate_detail() {
    local gate=$1 log=$2
    case "$gate" in
        py37)   grep -E '^py37:' "$log" | tail -1 ;;
        docs)   grep -E '^docs:' "$log" | tail -1 ;;
        ruff)   grep -E '^ruff:' "$log" | tail -1 ;;
        unit)   grep -E '(passed|failed|error|no tests ran)' "$log" | grep -E ' in [0-9.]+s' | tail -1 | sed 's/=//g; s/^ *//' ;;
        realvllm) grep -E '^(realvllm: [0-9].*(passed|failed)|realvllm: (no|timed)|SKIPPED|FAILED)' "$log" | tail -1 ;;
        sanity) if grep -q 'FATAL: The' "$log"; then grep 'FATAL: The' "$log" | tail -1;
                else printf '%s tests run' "$(grep -c '^Running sanity test' "$log")"; fi ;;
        lint)   grep -E '^(Passed|Failed)' "$log" | tail -1 ;;
        systemd) grep -E '^(systemd tier: [0-9]+ passed|SKIPPED|FAIL: the systemd tier cannot run)' "$log" | tail -1 ;;
        molecule) grep -E '^(molecule (default|chroot): ok|SKIPPED)' "$log" | tr '\n' ' ' ;;
    esac
}

declare -A status detail seconds
overall=0
for gate in "${gates[@]}"; do
    cmd=$(gate_cmd "$gate") || { echo "check: unknown gate '$gate'" >&2; exit 2; }
    log=$LOGS/$gate.log
    printf '\n===== %s: %s\n' "$gate" "$cmd"
    start=$(date +%s)
    # shellcheck disable=SC2086  # cmd is a word list built above
    $cmd </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    seconds[$gate]=$(( $(date +%s) - start ))
    if [[ $rc -eq 0 ]]; then status[$gate]=PASS; else status[$gate]="FAIL(rc=$rc)"; overall=1; fi
    detail[$gate]=$(gate_detail "$gate" "$log")
done

# The summary also goes to .cache/check/summary.log, so a run's per-gate seconds stay readable
# next to the gates' own logs after the terminal is gone.
{
    printf '\n===== summary\n'
    printf '%-7s %-12s %6s  %s\n' gate result time detail
    for gate in "${gates[@]}"; do
        printf '%-7s %-12s %5ss  %s\n' "$gate" "${status[$gate]}" "${seconds[$gate]}" "${detail[$gate]}"
    done
    if [[ $overall -eq 0 ]]; then echo "ALL GATES PASSED"; else echo "SOME GATES FAILED (logs: .cache/check/)"; fi
    # Last line: pytest's counts in the plain "N passed, N failed" form CI reads.
    if [[ -f $LOGS/unit.log && " ${gates[*]} " == *" unit "* ]]; then
        counts=$(grep -E ' in [0-9.]+s' "$LOGS/unit.log" | tail -1)
        passed=$(awk '{for (i = 2; i <= NF; i++) if ($i ~ /^passed/) n += $(i-1)} END {print n + 0}' <<<"$counts")
        failed=$(awk '{for (i = 2; i <= NF; i++) if ($i ~ /^(failed|error)/) n += $(i-1)} END {print n + 0}' <<<"$counts")
        echo "tests: ${passed:-0} passed, ${failed:-0} failed"
    fi
} | tee "$LOGS/summary.log"
exit $overall
