#!/usr/bin/env bash
# Build, or reuse, the Debian rootfs the `systemd` test tier boots with systemd-nspawn -b: a real
# systemd as PID 1 of a container (this machine has none of its own), with what the tier drives in
# it: python3 (the modules and the binder), numactl (migratepages), irqbalance (its --oneshot
# --debug pass over the environment file the role wrote), openssh-server (Ansible runs the role
# over SSH into the container) and procps.
#
# Cached OUTSIDE the clone in $NPUOPS_CACHE/nspawn/<suite> and reused while its stamp matches.
# Exit status: 0 ready (prints the rootfs path last); 77 skipped (a "SKIPPED: ..." line says why:
# not root, no apt to install systemd-container/debootstrap, mirror unreachable); else an error.
#
# Environment (all optional):
#   NPUOPS_CACHE          cache root outside the clone (default /var/cache/npuops)
#   NPUOPS_NSPAWN_SUITE   Debian suite                 (default bookworm)
#   NPUOPS_NSPAWN_MIRROR  Debian mirror URL            (default: the one apt uses here)
set -euo pipefail

CACHE=${NPUOPS_CACHE:-/var/cache/npuops}
SUITE=${NPUOPS_NSPAWN_SUITE:-bookworm}
ROOTFS=$CACHE/nspawn/$SUITE
INCLUDE=systemd,systemd-sysv,dbus,python3,procps,numactl,irqbalance,openssh-server,iproute2
STAMP=$ROOTFS.stamp
WANT="$SUITE $INCLUDE v1"
SKIP=77

log() { printf 'nspawn-setup: %s\n' "$*" >&2; }

[[ $(id -u) -eq 0 ]] || { echo "SKIPPED: the systemd tier needs root (systemd-nspawn)"; exit $SKIP; }
if ! command -v systemd-nspawn >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || { echo "SKIPPED: no apt-get to install systemd-container and debootstrap"; exit $SKIP; }
    log "installing systemd-container debootstrap"
    apt-get -q -o DPkg::Lock::Timeout=600 update >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 install -y \
        --no-install-recommends systemd-container debootstrap </dev/null >/dev/null
fi

if [[ -f $STAMP && "$(cat "$STAMP")" == "$WANT" && -x $ROOTFS/lib/systemd/systemd ]]; then
    log "up to date ($ROOTFS)"
    echo "$ROOTFS"
    exit 0
fi

mirror=${NPUOPS_NSPAWN_MIRROR:-}
if [[ -z $mirror ]]; then
    mirror=$(grep -hoE '(https?://[^ ]+/debian)/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
        /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | sed -n 1p | tr -d ' ' || true)
fi
[[ -n $mirror ]] || { echo "SKIPPED: no Debian mirror known (set NPUOPS_NSPAWN_MIRROR)"; exit $SKIP; }

mkdir -p "$(dirname "$ROOTFS")"
rm -rf --one-file-system "$ROOTFS.partial" "$ROOTFS"
log "debootstrap $SUITE from $mirror (cold: about 4 minutes)"
if ! debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$ROOTFS.partial" "$mirror" \
        >"$ROOTFS.log" 2>&1; then
    tail -20 "$ROOTFS.log" >&2
    echo "SKIPPED: debootstrap failed (mirror unreachable?), see $ROOTFS.log"
    exit $SKIP
fi
rm -f "$ROOTFS.partial/etc/machine-id"
systemd-machine-id-setup --root="$ROOTFS.partial" >/dev/null
# irqbalance must not start at boot: the tier runs it by hand (--oneshot), on the role's config
rm -f "$ROOTFS.partial/etc/systemd/system/multi-user.target.wants/irqbalance.service"
echo npuops-ci >"$ROOTFS.partial/etc/hostname"
mv "$ROOTFS.partial" "$ROOTFS"
printf '%s\n' "$WANT" >"$STAMP"
log "ready: $ROOTFS"
echo "$ROOTFS"
