#!/usr/bin/env bash
# Install the system packages the tests, the demo and the linters need (Debian/Ubuntu).
# Idempotent: asks dpkg what is missing first, runs `apt-get update` at most once and only
# when something has to be installed. Skips with a message when not root or without apt.
set -euo pipefail

PACKAGES=(shellcheck openssh-server openssh-client chromium numactl debootstrap rsync procps prometheus)

log() { printf 'deps: %s\n' "$*"; }

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
    log "no apt-get/dpkg here: skipping system packages (${PACKAGES[*]}); install them by hand"
    exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [[ "$status" != *"install ok installed"* ]]; then
        missing+=("$pkg")
    fi
done

# Debian/Ubuntu's system Python ships venv's pip bootstrap separately (make venv needs it).
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip' >/dev/null 2>&1 \
    && [[ "$(command -v python3)" == /usr/bin/* ]]; then
    missing+=(python3-venv)
fi

if [[ ${#missing[@]} -eq 0 ]]; then
    log "all system packages present (${PACKAGES[*]})"
    exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
    log "not root: cannot install missing packages: ${missing[*]}"
    log "run: sudo apt-get install -y ${missing[*]}"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# Other engineers/CI jobs may hold the dpkg lock: wait for it rather than failing.
APT=(apt-get -q -o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)
log "installing: ${missing[*]}"
"${APT[@]}" update
"${APT[@]}" install -y --no-install-recommends "${missing[@]}" </dev/null
log "installed: ${missing[*]}"
