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

dir="tests/upstreams"
venv=".tools/upstreams-py"
hash_of() { python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

command -v npm >/dev/null || { echo "upstreams: npm is required"; exit 2; }
command -v python3 >/dev/null || { echo "upstreams: python3 is required"; exit 2; }

stamp="$dir/node_modules/.upstreams-installed"
want="$(hash_of "$dir/package-lock.json")"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "upstreams: installing @modelcontextprotocol/server-everything (npm ci)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" >"$stamp"
fi

stamp="$venv/.upstreams-installed"
want="$(hash_of "$dir/requirements.txt")"
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "upstreams: installing mcp-server-time (pip)"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$dir/requirements.txt"
    echo "$want" >"$stamp"
fi
