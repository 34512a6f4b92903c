#!/usr/bin/env bash
# Build, or reuse, what the `chroot` molecule scenario needs (extensions/molecule/run.sh chroot):
#
#   1. a Debian chroot: debootstrap --variant=minbase --include=python3 <suite> <dir> <mirror>,
#      cached in .cache/chroot/<suite> and reused while its stamp file
#      (.cache/chroot/<suite>.stamp) is there;
#   2. the community.general collection, for its `community.general.chroot` connection plugin:
#      Galaxy is not reachable, so the `ansible` package from PyPI (which bundles the
#      collections; 12.x pairs with ansible-core 2.19) is installed with --no-deps --target
#      into .cache/ansible-pkg, never into the venv. Only ansible_collections/community/general
#      is kept. Reused while .cache/ansible-pkg/.npuops-stamp is there.
#
# Exit status: 0 ready; 77 skipped (a "SKIPPED: ..." line says why: not root, no debootstrap,
# mirror or PyPI unreachable); anything else is an error. It mounts nothing: run.sh
# bind-mounts /proc into the chroot for the run and unmounts it afterwards.
#
# Environment (all optional):
#   NPUOPS_CHROOT         chroot directory           (default .cache/chroot/$NPUOPS_CHROOT_SUITE)
#   NPUOPS_CHROOT_SUITE   Debian suite               (default bookworm)
#   NPUOPS_CHROOT_MIRROR  Debian mirror URL          (default: the one apt uses here, from
#                         /etc/apt/sources.list and /etc/apt/sources.list.d/*.{list,sources})
#   NPUOPS_ANSIBLE_PKG    --target of the pip install (default .cache/ansible-pkg)
#   NPUOPS_ANSIBLE_SPEC   pip requirement            (default "ansible>=12,<13")
#   VENV                  venv whose python runs pip (default .venv)
# Rebuild from scratch: rm -rf --one-file-system .cache/chroot .cache/ansible-pkg (never while
# a run is going on: /proc is mounted inside the chroot during a run).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
SUITE=${NPUOPS_CHROOT_SUITE:-bookworm}
CHROOT=${NPUOPS_CHROOT:-$REPO/.cache/chroot/$SUITE}
STAMP=$CHROOT.stamp
PKG=${NPUOPS_ANSIBLE_PKG:-$REPO/.cache/ansible-pkg}
SPEC=${NPUOPS_ANSIBLE_SPEC:-ansible>=12,<13}
VARIANT=minbase
INCLUDE=python3
SKIP=77

log() { printf 'chroot-setup: %s\n' "$*" >&2; }
skip() { printf 'SKIPPED: chroot scenario: %s\n' "$*"; exit "$SKIP"; }
die() { log "ERROR: $*"; exit 1; }

# First "deb" URI whose suites include $SUITE (one-line and deb822 formats).
apt_mirror() {
    local file
    for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f "$file" ]] || continue
        awk -v suite="$SUITE" '
            $1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == suite) { print $i; exit }
            }' "$file"
    done
    for file in /etc/apt/sources.list.d/*.sources; do
        [[ -f "$file" ]] || continue
        awk -v suite="$SUITE" '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") \
                    && enabled != "no" && uris != "") { split(uris, u, " "); print u[1]; found = 1 }
                types = ""; suites = ""; uris = ""; enabled = ""
            }
            /^[ \t]*$/ { flush(); if (found) exit; next }
            /^#/ { next }
            tolower($1) == "types:"   { $1 = ""; types = substr($0, 2) }
            tolower($1) == "suites:"  { $1 = ""; suites = substr($0, 2) }
            tolower($1) == "uris:"    { $1 = ""; uris = substr($0, 2) }
            tolower($1) == "enabled:" { enabled = tolower($2) }
            END { if (!found) flush() }' "$file"
    done
}

reachable() {  # URL -> 0 when it answers within 20 s
    if command -v curl >/dev/null 2>&1; then
        curl -fsS --max-time 20 -o /dev/null "$1"
    else
        python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=20).read(1)' "$1"
    fi
}

# Unmount anything left mounted below $1 (a killed debootstrap or run), deepest first.
umount_below() {
    local dir mnt
    dir=$(realpath -m "$1")
    findmnt -rn -o TARGET 2>/dev/null | awk -v d="$dir/" 'index($0 "/", d) == 1' | sort -r |
        while read -r mnt; do umount "$mnt" 2>/dev/null || umount -l "$mnt"; done
}

remove_tree() {
    [[ -e "$1" ]] || return 0
    umount_below "$1"
    rm -rf --one-file-system "$1"
}

size_of() { du -sh "$1" 2>/dev/null | cut -f1; }

# ---- gate -----------------------------------------------------------------------------------
[[ "$(id -u)" -eq 0 ]] || skip "needs root (debootstrap, chroot(2), mount --bind); running as uid $(id -u)"

# ---- the chroot -----------------------------------------------------------------------------
want_stamp="suite=$SUITE variant=$VARIANT include=$INCLUDE"
chroot_ready() {
    [[ -f "$STAMP" ]] && [[ "$(head -1 "$STAMP")" == "$want_stamp" ]] \
        && [[ -x "$CHROOT/usr/bin/python3" ]] && [[ -e "$CHROOT/bin/sh" ]]
}

mkdir -p "$(dirname "$CHROOT")"
exec 9>"$CHROOT.lock"
flock -w 900 9 || die "timed out waiting for $CHROOT.lock"

if chroot_ready; then
    log "reusing $CHROOT ($(sed -n 2p "$STAMP"))"
else
    command -v debootstrap >/dev/null 2>&1 \
        || skip "debootstrap is not installed (apt-get install debootstrap, or make deps)"
    MIRROR=${NPUOPS_CHROOT_MIRROR:-$(apt_mirror | sed -n 1p)}
    [[ -n "$MIRROR" ]] || skip "no Debian mirror for '$SUITE' in /etc/apt/sources.list* (set NPUOPS_CHROOT_MIRROR)"
    MIRROR=${MIRROR%/}
    reachable "$MIRROR/dists/$SUITE/Release" 2>/dev/null \
        || skip "Debian mirror unreachable: $MIRROR/dists/$SUITE/Release"
    partial=$CHROOT.partial
    remove_tree "$partial"
    remove_tree "$CHROOT"
    rm -f "$STAMP"
    log "debootstrap --variant=$VARIANT --include=$INCLUDE $SUITE $CHROOT $MIRROR (log: $CHROOT.debootstrap.log)"
    start=$(date +%s)
    if ! debootstrap --variant="$VARIANT" --include="$INCLUDE" "$SUITE" "$partial" "$MIRROR" \
            >"$CHROOT.debootstrap.log" 2>&1; then
        tail -20 "$CHROOT.debootstrap.log" >&2
        remove_tree "$partial"
        die "debootstrap failed (full log: $CHROOT.debootstrap.log)"
    fi
    umount_below "$partial"
    mv "$partial" "$CHROOT"
    seconds=$(( $(date +%s) - start ))
    python=$(chroot "$CHROOT" /usr/bin/python3 -c 'import platform; print(platform.python_version())')
    printf '%s\nbuilt %s in %ss from %s: %s, python %s\n' "$want_stamp" "$(date -u +%FT%TZ)" \
        "$seconds" "$MIRROR" "$(size_of "$CHROOT")" "$python" >"$STAMP"
    log "built $CHROOT in ${seconds}s ($(size_of "$CHROOT"), python $python)"
fi

# ---- community.general from the ansible package on PyPI -------------------------------------
PKG_STAMP=$PKG/.npuops-stamp
CONNECTION=$PKG/ansible_collections/community/general/plugins/connection/chroot.py
if [[ -f "$PKG_STAMP" ]] && [[ "$(head -1 "$PKG_STAMP")" == "$SPEC" ]] && [[ -f "$CONNECTION" ]]; then
    log "reusing $PKG ($(sed -n 2p "$PKG_STAMP"))"
else
    [[ -x "$VENV/bin/python" ]] || die "$VENV/bin/python missing; run 'make venv'"
    rm -rf "$PKG" "$PKG.partial" "$PKG.download"
    mkdir -p "$PKG.download"
    log "pip download --no-deps '$SPEC'"
    start=$(date +%s)
    if ! "$VENV/bin/python" -m pip download --quiet --no-deps --only-binary=:all: \
            --dest "$PKG.download" "$SPEC" >"$PKG.download/pip.log" 2>&1; then
        reason=$(grep -E 'ERROR|Error' "$PKG.download/pip.log" | tail -1)
        rm -rf "$PKG.download"
        skip "cannot download '$SPEC' from PyPI for community.general.chroot: ${reason:-see pip}"
    fi
    wheel=$(ls "$PKG.download"/ansible-*.whl)
    download_s=$(( $(date +%s) - start ))
    download_size=$(size_of "$wheel")
    log "downloaded $(basename "$wheel") ($download_size) in ${download_s}s"
    start=$(date +%s)
    "$VENV/bin/python" -m pip install --quiet --no-deps --no-compile --target "$PKG.partial" "$wheel" \
        || die "pip install --no-deps --target $PKG.partial $wheel failed"
    installed_size=$(size_of "$PKG.partial")
    # Keep community.general only: the scenario needs its chroot connection and nothing else.
    find "$PKG.partial/ansible_collections" -mindepth 1 -maxdepth 1 ! -name community -exec rm -rf {} +
    find "$PKG.partial/ansible_collections/community" -mindepth 1 -maxdepth 1 ! -name general -exec rm -rf {} +
    [[ -f "$PKG.partial/ansible_collections/community/general/plugins/connection/chroot.py" ]] \
        || die "$(basename "$wheel") has no community/general/plugins/connection/chroot.py"
    general=$("$VENV/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' \
        "$PKG.partial/ansible_collections/community/general/MANIFEST.json")
    install_s=$(( $(date +%s) - start ))
    printf '%s\n%s: community.general %s; wheel %s downloaded in %ss, %s installed, %s kept, in %ss\n' \
        "$SPEC" "$(basename "$wheel")" "$general" "$download_size" "$download_s" "$installed_size" \
        "$(size_of "$PKG.partial")" "$install_s" >"$PKG.partial/.npuops-stamp"
    rm -rf "$PKG.download"
    mv "$PKG.partial" "$PKG"
    log "$(sed -n 2p "$PKG_STAMP")"
fi
