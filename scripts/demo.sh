#!/usr/bin/env bash
# The embedded demo fleet (make demo): build sandbox roots from the recorded snapshots, run
# playbooks/site.yml on inventories/demo, then playbooks/audit.yml when present, and print a
# short per-host summary. Nothing outside the sandbox (.demo/ by default) is written.
#
# Environment:
#   NPUOPS_DEMO_DIR   sandbox directory (default <repo>/.demo); make demo-clean removes .demo
#   DEMO_LIMIT        run on a subset of the hosts (ansible --limit syntax, e.g. a2-910b3x8,dgx-a100)
#   DEMO_FORKS        ansible forks (default 6)
#   DEMO_DRIFT        0 skips the drift loop (scripts/demo_drift.py: a stand-in vLLM on this
#                     machine, bound, perturbed, audited, reconciled); also skipped with DEMO_LIMIT
#   VENV              virtualenv with ansible-core (default <repo>/.venv)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
DEMO="${NPUOPS_DEMO_DIR:-$REPO/.demo}"
INV="$REPO/inventories/demo/hosts.yml"
LIMIT="${DEMO_LIMIT:-}"

if [[ ! -x "$VENV/bin/ansible-playbook" ]]; then
    echo "demo: $VENV/bin/ansible-playbook not found; run 'make venv-demo' (or make venv) first" >&2
    exit 2
fi
if [[ ! -e "$REPO/.cache/collections/ansible_collections/npuops/fleet" ]]; then
    mkdir -p "$REPO/.cache/collections/ansible_collections/npuops"
    ln -sfn ../../../.. "$REPO/.cache/collections/ansible_collections/npuops/fleet"
fi

mkdir -p "$DEMO"
DEMO="$(cd "$DEMO" && pwd)"
export NPUOPS_DEMO_DIR="$DEMO"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.cache/collections"
export ANSIBLE_CACHE_PLUGIN=ansible.builtin.jsonfile
export ANSIBLE_CACHE_PLUGIN_CONNECTION="$DEMO/facts"
export ANSIBLE_FORKS="${DEMO_FORKS:-6}"
export ANSIBLE_LOCALHOST_WARNING=False
export ANSIBLE_RETRY_FILES_ENABLED=False
export ANSIBLE_NOCOLOR="${ANSIBLE_NOCOLOR:-1}"
export PATH="$VENV/bin:$PATH"

sandbox_args=(--inventory "$INV" --demo "$DEMO")
limit_args=()
if [[ -n "$LIMIT" ]]; then
    sandbox_args+=(--hosts "$LIMIT")
    limit_args=(--limit "$LIMIT")
fi

echo "== sandbox roots ($DEMO)"
"$VENV/bin/python" "$REPO/scripts/demo_sandbox.py" "${sandbox_args[@]}"

echo "== site.yml"
rc=0
"$VENV/bin/ansible-playbook" -i "$INV" "${limit_args[@]}" "$REPO/playbooks/site.yml" \
    > "$DEMO/site.log" 2>&1 || rc=$?
sed -n '/PLAY RECAP/,$p' "$DEMO/site.log"
if [[ $rc -ne 0 ]]; then
    echo "demo: site.yml failed (rc=$rc); full log: $DEMO/site.log" >&2
    tail -n 40 "$DEMO/site.log" >&2
    exit "$rc"
fi

drift_args=()
if [[ "${DEMO_DRIFT:-1}" != 0 && -z "$LIMIT" ]]; then
    echo "== drift loop: install, start, bind and perturb a stand-in vLLM on this machine"
    trap '"$VENV/bin/python" "$REPO/scripts/demo_drift.py" stop --demo "$DEMO" >/dev/null 2>&1 || true' EXIT
    "$VENV/bin/python" "$REPO/scripts/demo_drift.py" start --demo "$DEMO" || rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "demo: the drift loop failed to start (rc=$rc)" >&2
        exit "$rc"
    fi
    if [[ -f "$DEMO/standin/state.json" ]]; then
        drift_args=(-i "$REPO/inventories/demo/standin.yml" -e "@$DEMO/standin/audit-vars.json")
    fi
fi

audit_log=""
if [[ -f "$REPO/playbooks/audit.yml" ]]; then
    echo "== audit.yml"
    audit_log="$DEMO/audit.log"
    "$VENV/bin/ansible-playbook" -i "$INV" "${drift_args[@]}" "${limit_args[@]}" \
        "$REPO/playbooks/audit.yml" \
        -e "npuops_audit_dest=$DEMO/report" -e npuops_facts_force_refresh=true \
        > "$audit_log" 2>&1 || rc=$?
    sed -n '/PLAY RECAP/,$p' "$audit_log"
    if [[ $rc -ne 0 ]]; then
        echo "demo: audit.yml failed (rc=$rc); full log: $audit_log" >&2
        tail -n 40 "$audit_log" >&2
        exit "$rc"
    fi
else
    echo "== audit.yml not in this tree yet: skipped"
fi

if [[ ${#drift_args[@]} -gt 0 ]]; then
    echo "== drift loop: the audit's drift, the reconciler, the audit after it"
    "$VENV/bin/python" "$REPO/scripts/demo_drift.py" finish --demo "$DEMO" || rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "demo: the drift loop did not close (rc=$rc)" >&2
        exit "$rc"
    fi
fi

echo "== summary"
"$VENV/bin/python" "$REPO/scripts/demo_summary.py" --demo "$DEMO" --inventory "$INV" \
    --site-log "$DEMO/site.log" ${audit_log:+--audit-log "$audit_log"} ${LIMIT:+--hosts "$LIMIT"}
