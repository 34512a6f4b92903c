#!/usr/bin/env bash
# Lint the changelog fragments and regenerate CHANGELOG.rst as a preview of the upcoming
# release (galaxy.yml's version), without consuming the fragments: the release is made in a
# scratch copy and only CHANGELOG.rst is brought back. The real release (which folds the
# fragments into changelogs/changelog.yaml) is `antsibull-changelog release` at tag time.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
cd "$REPO"
"$VENV/bin/antsibull-changelog" lint
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The release step asks ansible-doc for the plugin list (to name new modules), so the scratch
# copy must look like an installed collection.
copy=$scratch/ansible_collections/npuops/fleet
mkdir -p "$copy"
cp -r galaxy.yml changelogs plugins meta "$copy/"
[[ -d roles ]] && cp -r roles "$copy/"
(cd "$copy" && PATH="$VENV/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$scratch" \
    "$VENV/bin/antsibull-changelog" release --date "${CHANGELOG_DATE:-$(date +%F)}")
if ! cmp -s "$copy/CHANGELOG.rst" CHANGELOG.rst; then
    cp "$copy/CHANGELOG.rst" CHANGELOG.rst
    echo "changelog: CHANGELOG.rst regenerated"
else
    echo "changelog: CHANGELOG.rst up to date"
fi
