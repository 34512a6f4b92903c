#!/usr/bin/env bash
# Run a molecule scenario of this collection from the repo root, against the collection as
# linked in .cache/collections (molecule's prerun, which would install a copy into
# ~/.ansible/collections, is off). Usage: extensions/molecule/run.sh [default|chroot] [action]
#
# test, converge and prepare first reset the scenario's molecule state (`molecule reset`): the
# scenarios have no create/destroy, so a `prepared: true` left by an earlier run (whose cleanup
# removed the sandbox) would otherwise make molecule skip prepare.
#
# chroot: scripts/chroot-setup.sh builds or reuses the Debian chroot (.cache/chroot/bookworm)
# and community.general (.cache/ansible-pkg, after .cache/collections on the collections path,
# so this collection always wins). /proc is bind-mounted into the chroot for the run and
# unmounted on exit, whatever happened. Prints "SKIPPED: ..." and exits 0 when not root,
# without debootstrap, or when the Debian mirror (or PyPI, on a cold cache) is unreachable.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
SCENARIO="${1:-default}"
ACTION="${2:-test}"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.cache/collections"
export PATH="$VENV/bin:$PATH"
cd "$REPO"

run_molecule() {
    if [[ "$ACTION" == test || "$ACTION" == converge || "$ACTION" == prepare ]]; then
        "$VENV/bin/molecule" reset -s "$SCENARIO" >/dev/null 2>&1 || true
    fi
    "$VENV/bin/molecule" "$ACTION" -s "$SCENARIO"
}

if [[ "$SCENARIO" != chroot ]]; then
    run_molecule
    exit
fi

export NPUOPS_CHROOT_SUITE="${NPUOPS_CHROOT_SUITE:-bookworm}"
export NPUOPS_CHROOT="${NPUOPS_CHROOT:-$REPO/.cache/chroot/$NPUOPS_CHROOT_SUITE}"
export NPUOPS_ANSIBLE_PKG="${NPUOPS_ANSIBLE_PKG:-$REPO/.cache/ansible-pkg}"
rc=0
scripts/chroot-setup.sh || rc=$?
if [[ $rc -eq 77 ]]; then
    exit 0  # chroot-setup.sh printed the SKIPPED line
elif [[ $rc -ne 0 ]]; then
    exit "$rc"
fi
export ANSIBLE_COLLECTIONS_PATH="$REPO/.cache/collections:$NPUOPS_ANSIBLE_PKG"

# One run at a time per chroot: the /proc mount and the sandbox inside it are shared.
exec 9>"$NPUOPS_CHROOT.lock"
flock -w 900 9 || { echo "run.sh: timed out waiting for $NPUOPS_CHROOT.lock" >&2; exit 1; }

PROC="$NPUOPS_CHROOT/proc"
unmount_proc() {
    local _try
    for _try in 1 2 3; do
        mountpoint -q "$PROC" || return 0
        umount "$PROC" 2>/dev/null || sleep 1
    done
    if mountpoint -q "$PROC"; then
        umount -l "$PROC" || { echo "run.sh: could not unmount $PROC" >&2; return 1; }
    fi
}
on_exit() {
    local status=$?
    unmount_proc || status=1
    exit "$status"
}
unmount_proc  # a run killed with SIGKILL left it mounted
trap on_exit EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
mount --bind /proc "$PROC"
run_molecule
