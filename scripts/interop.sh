#!/usr/bin/env bash
# Interop tests: drive the real mcp-actor binary with the official MCP client SDKs.
#
#   scripts/interop.sh [path/to/mcp-actor]        (default: target/debug/mcp-actor)
#
# Builds nothing: pass the binary you built. Installs the pinned SDKs into
# git-ignored folders (tests/interop/ts/node_modules, .tools/py-interop),
# reinstalling only when the pins change. Starts the server on a free port,
# runs the TypeScript client, then the Python client (legacy mode, sessions).
# Then starts a second server with a temporary config file ([reload] watch =
# true, the builtin tools) and runs the Python client in its default modern
# mode (stateless 2026-07-28: discover, input_required, progress,
# subscriptions/listen + hot reload), which appends a tool to that file.
# Finally starts a third server with [auth] (one static bearer token, random
# per run) and runs all three flows again, each given the token through
# MCP_INTEROP_TOKEN; each also checks that it is refused with 401 without it.
# Exits non-zero if any client fails (or a server does not come up). The
# servers are stopped and the temporary folder removed on exit.
#
# Environment:
#   INTEROP_SERVER_LOG        where to write the server's stdout/stderr (default: a temp file)
#   INTEROP_MODERN_SERVER_LOG the same for the modern client's server (default: a temp file)
#   INTEROP_AUTH_SERVER_LOG   the same for the server with [auth] (default: a temp file)
#   INTEROP_STARTUP_SECS      how long to wait for a port (default: 30)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "interop: $*" >&2; }
# shellcheck source=scripts/lib.sh
source "$repo_root/scripts/lib.sh"

# Resolve the binary relative to the caller's cwd before changing directory.
bin="$(resolve_bin "${1:-target/debug/mcp-actor}" "$repo_root")"

cd "$repo_root"

ts_dir="tests/interop/ts"
py_dir="tests/interop/python"
venv=".tools/py-interop"

"$repo_root/scripts/interop-sdks.sh"

# --- servers ----------------------------------------------------------------
server_pid=""
modern_pid=""
auth_pid=""
tmp_dir=""
cleanup() {
    stop_server "$server_pid"
    stop_server "$modern_pid"
    stop_server "$auth_pid"
    if [[ -n "$tmp_dir" ]]; then
        rm -rf "$tmp_dir"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM


# The server for the TypeScript and legacy Python clients: the embedded default config.
port="$(free_port)"
url="http://127.0.0.1:$port/mcp"
server_log="${INTEROP_SERVER_LOG:-$(mktemp -t mcp-actor-interop.XXXXXX.log)}"

log "starting $bin --listen 127.0.0.1:$port (log: $server_log)"
"$bin" --listen "127.0.0.1:$port" --admin-listen 127.0.0.1:0 >"$server_log" 2>&1 &
server_pid=$!
wait_listening "$server_pid" "$port" "$server_log" "${INTEROP_STARTUP_SECS:-30}"

# The server for the modern Python client: its own config file, watched, which the
# client edits (so it must not be shared with the other clients).
tmp_dir="$(mktemp -d -t mcp-actor-interop.XXXXXX)"
modern_config="$tmp_dir/config.toml"
# What both watched configurations serve: the builtin tools, reloaded when the file changes.
watched_tools='[reload]
watch = true

[[tools]]
builtin = "echo"

[[tools]]
builtin = "sleep"

[[tools]]
builtin = "ask"

[[tools]]
builtin = "sample"'
cat >"$modern_config" <<TOML
# Written by scripts/interop.sh for tests/interop/python/client_modern.py, which
# appends a [[tools]] entry to this file to trigger a hot reload.
$watched_tools
TOML
modern_port="$(free_port)"
modern_url="http://127.0.0.1:$modern_port/mcp"
modern_log="${INTEROP_MODERN_SERVER_LOG:-$(mktemp -t mcp-actor-interop-modern.XXXXXX.log)}"

log "starting $bin --config $modern_config --listen 127.0.0.1:$modern_port (log: $modern_log)"
"$bin" --config "$modern_config" --listen "127.0.0.1:$modern_port" --admin-listen 127.0.0.1:0 >"$modern_log" 2>&1 &
modern_pid=$!
wait_listening "$modern_pid" "$modern_port" "$modern_log" "${INTEROP_STARTUP_SECS:-30}"

# The server for the authenticated runs of all three flows: [auth] with one static token,
# plus what the flows need (the builtin tools, and the watched file the modern flow edits;
# it runs last, so the tool it appends cannot disturb the others). The token is fresh each
# run and reaches the server and the clients only through MCP_INTEROP_TOKEN in their
# environment, never on a command line.
auth_token="$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
auth_config="$tmp_dir/auth.toml"
auth_port="$(free_port)"
auth_url="http://127.0.0.1:$auth_port/mcp"
cat >"$auth_config" <<TOML
# Written by scripts/interop.sh for the authenticated runs of the interop clients;
# tests/interop/python/client_modern.py appends a [[tools]] entry to this file.
[auth]
resource = "$auth_url"
scopes_supported = ["mcp:tools"]

[[auth.tokens]]
principal = "interop"
token_env = "MCP_INTEROP_TOKEN"
scopes = ["mcp:tools"]

$watched_tools
TOML
auth_log="${INTEROP_AUTH_SERVER_LOG:-$(mktemp -t mcp-actor-interop-auth.XXXXXX.log)}"

log "starting $bin --config $auth_config --listen 127.0.0.1:$auth_port (log: $auth_log)"
MCP_INTEROP_TOKEN="$auth_token" "$bin" --config "$auth_config" --listen "127.0.0.1:$auth_port" --admin-listen 127.0.0.1:0 >"$auth_log" 2>&1 &
auth_pid=$!
wait_listening "$auth_pid" "$auth_port" "$auth_log" "${INTEROP_STARTUP_SECS:-30}"

# --- run the clients --------------------------------------------------------
status=0

ts_version="$(node -p 'require("./'"$ts_dir"'/node_modules/@modelcontextprotocol/sdk/package.json").version')"
echo "=== TypeScript SDK ($ts_version) against $url"
if node "$ts_dir/client.mjs" "$url"; then ts_ok=1; else ts_ok=0; status=1; fi

py_version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
echo "=== Python SDK (mcp $py_version, legacy mode) against $url"
if "$venv/bin/python" "$py_dir/client.py" "$url"; then py_ok=1; else py_ok=0; status=1; fi

echo "=== Python SDK (mcp $py_version, default modern mode) against $modern_url (config $modern_config)"
if "$venv/bin/python" "$py_dir/client_modern.py" "$modern_url" "$modern_config"; then pym_ok=1; else pym_ok=0; status=1; fi

echo "=== TypeScript SDK ($ts_version) with a bearer token against $auth_url ([auth])"
if MCP_INTEROP_TOKEN="$auth_token" node "$ts_dir/client.mjs" "$auth_url"; then tsa_ok=1; else tsa_ok=0; status=1; fi

echo "=== Python SDK (mcp $py_version, legacy mode) with a bearer token against $auth_url ([auth])"
if MCP_INTEROP_TOKEN="$auth_token" "$venv/bin/python" "$py_dir/client.py" "$auth_url"; then pya_ok=1; else pya_ok=0; status=1; fi

echo "=== Python SDK (mcp $py_version, default modern mode) with a bearer token against $auth_url (config $auth_config)"
if MCP_INTEROP_TOKEN="$auth_token" "$venv/bin/python" "$py_dir/client_modern.py" "$auth_url" "$auth_config"; then pyma_ok=1; else pyma_ok=0; status=1; fi

if ! kill -0 "$server_pid" 2>/dev/null; then
    log "the server died during the run"
    status=1
fi
if ! kill -0 "$modern_pid" 2>/dev/null; then
    log "the modern client's server died during the run"
    status=1
fi
if ! kill -0 "$auth_pid" 2>/dev/null; then
    log "the server with [auth] died during the run"
    status=1
fi

verdict() { [[ $1 == 1 ]] && echo PASS || echo FAIL; }
echo "=== summary: typescript $(verdict "$ts_ok"), python $(verdict "$py_ok"), python-modern $(verdict "$pym_ok")," \
    "with a bearer token: typescript $(verdict "$tsa_ok"), python $(verdict "$pya_ok"), python-modern $(verdict "$pyma_ok")"
if ((status != 0)); then
    log "last lines of the server log ($server_log):"
    tail -n 40 "$server_log" >&2 || true
    if [[ $pym_ok != 1 ]]; then
        log "last lines of the modern client's server log ($modern_log):"
        tail -n 40 "$modern_log" >&2 || true
    fi
    if [[ $tsa_ok != 1 || $pya_ok != 1 || $pyma_ok != 1 ]]; then
        log "last lines of the log of the server with [auth] ($auth_log):"
        tail -n 40 "$auth_log" >&2 || true
    fi
fi
exit "$status"
