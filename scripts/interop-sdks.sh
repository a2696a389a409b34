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

ts_dir="tests/interop/ts"
py_dir="tests/interop/python"
venv=".tools/py-interop"

hash_of() { python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

# --- toolchain checks -------------------------------------------------------
command -v node >/dev/null || { log "node is required"; exit 2; }
command -v npm >/dev/null || { log "npm is required"; exit 2; }
command -v python3 >/dev/null || { log "python3 is required"; exit 2; }
# client.mjs uses AbortSignal.any (Node >= 20.3).
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=3)?0:1)'; then
    log "Node >= 20.3 is required (found $(node --version))"
    exit 2
fi

# --- TypeScript SDK ---------------------------------------------------------
ts_stamp="$ts_dir/node_modules/.interop-installed"
if [[ -f "$ts_dir/package-lock.json" ]]; then
    ts_want="$(hash_of "$ts_dir/package-lock.json")"
    if [[ ! -f "$ts_stamp" || "$(cat "$ts_stamp")" != "$ts_want" ]]; then
        log "installing TypeScript SDK (npm ci)"
        (cd "$ts_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        echo "$ts_want" >"$ts_stamp"
    fi
else
    ts_want="$(hash_of "$ts_dir/package.json")"
    if [[ ! -f "$ts_stamp" || "$(cat "$ts_stamp")" != "$ts_want" ]]; then
        log "installing TypeScript SDK (npm install, no lock file yet)"
        (cd "$ts_dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
        echo "$ts_want" >"$ts_stamp"
    fi
fi

# --- Python SDK -------------------------------------------------------------
py_stamp="$venv/.interop-installed"
py_want="$(hash_of "$py_dir/requirements.txt")"
if [[ ! -x "$venv/bin/python" ]]; then
    log "creating venv $venv"
    python3 -m venv "$venv"
fi
if [[ ! -f "$py_stamp" || "$(cat "$py_stamp")" != "$py_want" ]]; then
    log "installing Python SDK (pip)"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$py_dir/requirements.txt"
    echo "$py_want" >"$py_stamp"
fi
