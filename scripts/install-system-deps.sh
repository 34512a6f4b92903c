#!/usr/bin/env bash
# Install the system packages a make target needs (Debian/Ubuntu), and only those.
# Usage: scripts/install-system-deps.sh [GROUP...]     (default: test)
#   venv      python3-venv, only where the system Python lacks venv's pip bootstrap (ensurepip);
#             the demo needs nothing else: Python and pip (`make demo`, `make venv`)
#   molecule  debootstrap (the Debian chroot scenario), procps
#   sanity    rsync (scripts/sanity.sh copies the tree)
#   systemd   systemd-container (systemd-nspawn), debootstrap, util-linux (nsenter): the systemd tier
#   bench     rt-tests (cyclictest) and stress-ng: bench/bench_partition.py's latency run
#   test      everything `make test` uses: the groups above plus shellcheck, openssh-server and
#             -client (the SSH test), chromium (the report in a browser), numactl, prometheus
#             (promtool checks the reconciler metrics and the sample alert rules)
# Idempotent: asks dpkg what is missing first, runs `apt-get update` at most once and only
# when something has to be installed. Skips with a message when not root or without apt.
set -euo pipefail

log() { printf 'deps: %s\n' "$*"; }

groups=("$@")
[[ ${#groups[@]} -eq 0 ]] && groups=(test)
PACKAGES=()
for group in "${groups[@]}"; do
    case "$group" in
        venv) ;;
        molecule) PACKAGES+=(debootstrap procps) ;;
        sanity) PACKAGES+=(rsync) ;;
        systemd) PACKAGES+=(systemd-container debootstrap util-linux openssh-client) ;;
        bench) PACKAGES+=(rt-tests stress-ng) ;;
        test) PACKAGES+=(shellcheck openssh-server openssh-client chromium numactl debootstrap rsync procps prometheus systemd-container util-linux) ;;
        *) log "unknown group '$group' (venv, molecule, sanity, systemd, bench, test)"; exit 2 ;;
    esac
done

missing=()
# Debian/Ubuntu's system Python ships venv's pip bootstrap separately (make venv needs it).
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip' >/dev/null 2>&1 \
    && [[ "$(command -v python3)" == /usr/bin/* ]]; then
    missing+=(python3-venv)
fi

if [[ ${#PACKAGES[@]} -gt 0 ]] && { ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; }; then
    log "no apt-get/dpkg here: skipping system packages (${PACKAGES[*]}); install them by hand"
    exit 0
fi

for pkg in ${PACKAGES[@]+"${PACKAGES[@]}"}; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [[ "$status" != *"install ok installed"* && " ${missing[*]} " != *" $pkg "* ]]; then
        missing+=("$pkg")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    log "nothing to install for ${groups[*]}${PACKAGES[*]:+ (${PACKAGES[*]} present)}"
    exit 0
fi

if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    log "cannot install missing packages here: ${missing[*]}"
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
