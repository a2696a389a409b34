#!/usr/bin/env bash
# Installs the official MCP client SDKs the interop clients run on, pinned, into
# git-ignored folders; reinstalls only when the pins change:
#
#   @modelcontextprotocol/sdk  tests/interop/ts/node_modules  (npm ci, package-lock.json)
#   mcp (Python SDK)           .tools/py-interop              (pip, requirements.txt)
#
#   scripts/interop-sdks.sh
#
# scripts/interop.sh runs it first; scripts/test runs it before cargo test too, since
# tests/store.rs and tests/cluster/store.rs drive the same clients across restarts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { echo "interop: $*" >&2; }

# shellcheck source=scripts/lib.sh
source scripts/lib.sh

# --- toolchain checks -------------------------------------------------------
command -v node >/dev/null || { log "node is required"; exit 2; }
command -v npm >/dev/null || { log "npm is required"; exit 2; }
command -v python3 >/dev/null || { log "python3 is required"; exit 2; }
# client.mjs uses AbortSignal.any (Node >= 20.3).
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=3)?0:1)'; then
    log "Node >= 20.3 is required (found $(node --version))"
    exit 2
fi

npm_pinned tests/interop/ts "the TypeScript SDK"
pip_pinned .tools/py-interop tests/interop/python/requirements.txt "the Python SDK"
