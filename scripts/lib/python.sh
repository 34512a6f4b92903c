# shellcheck shell=bash
# Sourced by scripts/ensure-venv.sh and scripts/real-vllm-setup.sh: the one rule that picks the
# Python a venv is made with.

# pick_python MIN MAX: print the path of the first Python whose version is MIN..MAX (3.N each,
# both included) and that has the venv module, trying $PYTHON, then python3.<N> from MIN's minor
# up to MAX's, then python3. Status 1 when none fits.
pick_python() {
    local low=${1#3.} high=${2#3.} minor candidate
    local candidates=("${PYTHON:-}")
    for ((minor = low; minor <= high; minor++)); do
        candidates+=("python3.$minor")
    done
    candidates+=(python3)
    for candidate in "${candidates[@]}"; do
        [[ -n $candidate ]] || continue
        if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c \
            "import sys, venv; sys.exit(not ((3, $low) <= sys.version_info[:2] <= (3, $high)))" \
            2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}
