#!/usr/bin/env bash
# Build context of the execution environment (execution-environment.yml) without building an
# image: builds the collection artifact, stages it with the EE definition and its requirement
# files in .cache/ee/, and runs `ansible-builder create` into .cache/ee/context. No container
# engine is needed; `ansible-builder build` (podman/docker) on the same files makes the image.
#
# Usage: scripts/ee-create.sh [stage dir]      (default .cache/ee)
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
STAGE=${1:-$REPO/.cache/ee}

rm -rf "$STAGE"
mkdir -p "$STAGE/dist"
"$VENV/bin/ansible-galaxy" collection build --force --output-path "$STAGE/dist" "$REPO" >/dev/null
artifact=$(ls "$STAGE"/dist/npuops-fleet-*.tar.gz)
cp "$artifact" "$STAGE/npuops-fleet.tar.gz"
cp "$REPO/execution-environment.yml" "$REPO/requirements.txt" "$REPO/bindep.txt" "$STAGE/"
"$VENV/bin/ansible-builder" create --file "$STAGE/execution-environment.yml" \
    --context "$STAGE/context" --output-filename Containerfile
echo "ee: build context in $STAGE/context (artifact $(basename "$artifact"))"
