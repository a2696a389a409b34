#!/usr/bin/env bash
# Installs the upstream MCP servers the gateway tests (tests/gateway.rs) run over stdio,
# pinned, into git-ignored folders; does nothing when they are already in place:
#
#   @modelcontextprotocol/server-everything  tests/upstreams/node_modules  (npm ci, package-lock.json)
#   mcp-server-time                          .tools/upstreams-py           (pip, requirements.txt)
#
#   scripts/upstreams.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { echo "upstreams: $*" >&2; }
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

command -v npm >/dev/null || { log "npm is required"; exit 2; }
command -v python3 >/dev/null || { log "python3 is required"; exit 2; }

npm_pinned tests/upstreams "@modelcontextprotocol/server-everything"
pip_pinned .tools/upstreams-py tests/upstreams/requirements.txt "mcp-server-time"
