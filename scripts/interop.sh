#!/usr/bin/env bash
# Interop tests: drive the real mcp-actor binary with the official MCP client SDKs.
#
#   scripts/interop.sh [path/to/mcp-actor]        (default: target/debug/mcp-actor)
#
# Builds nothing: pass the binary you built. Installs the pinned SDKs into
# git-ignored folders (tests/interop/ts/node_modules, .tools/py-interop),
# reinstalling only when the pins change. Starts the server on a free port,
# runs the TypeScript client, then the Python client, and exits non-zero if
# either fails (or the server does not come up). The server is stopped on exit.
#
# Environment:
#   INTEROP_SERVER_LOG   where to write the server's stdout/stderr (default: a temp file)
#   INTEROP_STARTUP_SECS how long to wait for the port (default: 30)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Resolve the binary relative to the caller's cwd before changing directory.
bin="${1:-target/debug/mcp-actor}"
if [[ "$bin" != /* ]]; then
    if [[ -e "$bin" ]]; then
        bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
    else
        bin="$repo_root/$bin"
    fi
fi
if [[ ! -x "$bin" ]]; then
    echo "interop: server binary not found or not executable: $bin (build it first, e.g. cargo build)" >&2
    exit 2
fi

cd "$repo_root"

ts_dir="tests/interop/ts"
py_dir="tests/interop/python"
venv=".tools/py-interop"

log() { echo "interop: $*" >&2; }

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

# --- start the server -------------------------------------------------------
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
url="http://127.0.0.1:$port/mcp"
server_log="${INTEROP_SERVER_LOG:-$(mktemp -t mcp-actor-interop.XXXXXX.log)}"

server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        # give it a moment to exit cleanly, then insist
        for _ in $(seq 1 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "starting $bin --listen 127.0.0.1:$port (log: $server_log)"
"$bin" --listen "127.0.0.1:$port" >"$server_log" 2>&1 &
server_pid=$!

startup="${INTEROP_STARTUP_SECS:-30}"
deadline=$((SECONDS + startup))
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        wait "$server_pid" && rc=0 || rc=$?
        server_pid=""
        log "server exited (status $rc) before listening; its output:"
        tail -n 50 "$server_log" >&2 || true
        exit 1
    fi
    if ((SECONDS >= deadline)); then
        log "server did not listen on 127.0.0.1:$port within ${startup}s; its output:"
        tail -n 50 "$server_log" >&2 || true
        exit 1
    fi
    sleep 0.1
done

# --- run the clients --------------------------------------------------------
status=0

echo "=== TypeScript SDK ($(node -p 'require("./'"$ts_dir"'/node_modules/@modelcontextprotocol/sdk/package.json").version')) against $url"
if node "$ts_dir/client.mjs" "$url"; then ts_ok=1; else ts_ok=0; status=1; fi

echo "=== Python SDK (mcp $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')) against $url"
if "$venv/bin/python" "$py_dir/client.py" "$url"; then py_ok=1; else py_ok=0; status=1; fi

if ! kill -0 "$server_pid" 2>/dev/null; then
    log "the server died during the run"
    status=1
fi

echo "=== summary: typescript $([[ $ts_ok == 1 ]] && echo PASS || echo FAIL), python $([[ $py_ok == 1 ]] && echo PASS || echo FAIL)"
if ((status != 0)); then
    log "last lines of the server log ($server_log):"
    tail -n 40 "$server_log" >&2 || true
fi
exit "$status"
