#!/usr/bin/env bash
# Host-side code (modules, module_utils, doc_fragments) must stay importable on Python 3.7
# (Kylin V10, openEuler 20.03). ansible-core 2.19's own compile test starts at 3.8, so this
# checks 3.7 separately. Skips with a message when no Python 3.7 exists on the machine.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY37=${PY37:-}
if [[ -z "$PY37" ]]; then
    for candidate in /root/.pyenv/versions/3.7.*/bin/python3.7 python3.7; do
        if command -v "$candidate" >/dev/null 2>&1; then PY37=$(command -v "$candidate"); break; fi
    done
fi
if [[ -z "$PY37" ]]; then
    echo "py37: SKIPPED - no Python 3.7 found (set PY37=/path/to/python3.7 to enable)"
    exit 0
fi

cd "$REPO"
mapfile -t files < <(find plugins/modules plugins/module_utils plugins/doc_fragments \
    -name '*.py' -type f 2>/dev/null | sort)
if [[ ${#files[@]} -eq 0 ]]; then
    echo "py37: no host-side files found" >&2
    exit 1
fi
# Compile in memory (no __pycache__ left behind in the tree).
"$PY37" - "${files[@]}" <<'PY'
import sys
failed = 0
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        source = handle.read()
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as err:
        failed += 1
        sys.stderr.write("py37: %s:%s: %s\n" % (path, err.lineno, err.msg))
sys.stdout.write("py37: %d file(s) compiled with Python %s, %d failed\n"
                 % (len(sys.argv) - 1, sys.version.split()[0], failed))
sys.exit(1 if failed else 0)
PY
