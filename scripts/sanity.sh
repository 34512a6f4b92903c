#!/usr/bin/env bash
# Run `ansible-test sanity` offline on a copy of the working tree.
#
# ansible-test needs its cwd physically inside .../ansible_collections/<ns>/<name>/ (a symlink
# is refused) and lists files through git, so the tree is rsynced into a persistent copy under
# .cache/sanity (tests/output there keeps ansible-test's per-test venvs between runs) and a
# throwaway git repo is initialised in it. pip bootstrap: see scripts/ansible_test_get_pip.py.
# tests/snapshots is included: its mirror of sysfs escapes the ':' of PCI addresses on disk
# (fs/sys/bus/pci/devices/0000%3Ac1%3A00.0/). ansible-test 2.19's no-illegal-filenames test
# crashes on a ':' in a path (its output parser splits on ':'), so a name with a ':' is caught
# here first, with the fix (scripts/escape_snapshot_paths.py).
# Extra arguments go to ansible-test (e.g. --test pep8).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
SANITY_PYTHON=${SANITY_PYTHON:-3.11}
COPY_ROOT=${SANITY_ROOT:-$REPO/.cache/sanity}
COPY=$COPY_ROOT/ansible_collections/npuops/fleet
CACHE=$HOME/.ansible/test/cache

[[ -x "$VENV/bin/ansible-test" ]] || { echo "sanity: $VENV/bin/ansible-test missing; run 'make venv'" >&2; exit 2; }
"$VENV/bin/python" "$REPO/scripts/escape_snapshot_paths.py" --check >/dev/null || {
    echo "sanity: a path under tests/snapshots holds ':'; run scripts/escape_snapshot_paths.py" >&2
    exit 2
}
command -v rsync >/dev/null || { echo "sanity: rsync missing; run 'make deps'" >&2; exit 2; }

# Seed the pip bootstrap stand-in for every pip version this ansible-test may ask for.
mkdir -p "$CACHE"
for ver in $("$VENV/bin/python" - <<'PY'
import glob, os, re
import ansible_test
base = os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements")
versions = set()
for path in glob.glob(os.path.join(base, "*.txt")):
    with open(path) as handle:
        versions.update(re.findall(r"^pip\s*==\s*([0-9.]+)", handle.read(), re.M))
print(" ".join(sorted(versions)) or "24.2")
PY
); do
    target=$CACHE/get_pip_${ver//./_}.py
    if ! cmp -s "$REPO/scripts/ansible_test_get_pip.py" "$target" 2>/dev/null; then
        cp "$REPO/scripts/ansible_test_get_pip.py" "$target"
    fi
done

mkdir -p "$COPY"
# Excluded paths are also protected from --delete, so the copy's tests/output survives.
rsync -a --delete \
    --exclude=/.git --exclude=/.venv --exclude=/.cache --exclude=/.demo --exclude=/.ansible \
    --exclude=/collections --exclude=/tests/output --exclude=/bench/results \
    --exclude=.hypothesis --exclude=.pytest_cache --exclude=__pycache__ --exclude='*.pyc' \
    --exclude='*.tar.gz' \
    "$REPO/" "$COPY/"

cd "$COPY"
if [[ ! -d .git ]]; then
    git init -q .
fi
# ansible-test lists tracked files plus untracked, not-ignored ones: tracking is not needed,
# only the .gitignore rules (tests/output must be ignored or its venvs get scanned).
grep -qxF 'output/' tests/.gitignore 2>/dev/null || grep -qx '/tests/output/' .gitignore \
    || { echo "sanity: tests/output is not git-ignored" >&2; exit 2; }

export PATH="$VENV/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$COPY_ROOT"
set +e
ansible-test sanity --venv --python "$SANITY_PYTHON" --color no "$@" </dev/null
rc=$?
set -e
exit $rc
