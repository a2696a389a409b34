#!/usr/bin/env bash
# The gateway's overhead, in one run: server CPU per `echo` call made through mcp-actor's
# gateway to an upstream mcp-actor over Streamable HTTP, against the same calls made to that
# upstream directly.
#
#   benches/gateway.sh [REQUESTS]          (default 40000)
#
# The load generator is mcp-bench (benches/loadgen), which verifies every reply: $MCP_BENCH
# if set, else benches/loadgen/target/release/mcp-bench, built (cargo build --release
# --locked) when missing. It runs `echo --era legacy -n REQUESTS -w 0` over 16 sessions x 4
# requests in flight. CPU is read from /proc/PID/stat (user + system) around each run, so the
# figures are per verified request. The gateway serves the upstream's tools without a prefix
# (`prefix = ""`), so the load generator calls the same `echo` both ways.
set -euo pipefail
[[ -z "${MCP_BENCH:-}" ]] || MCP_BENCH="$(realpath "$MCP_BENCH")"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

requests="${1:-40000}"
if [[ -n "${MCP_BENCH:-}" ]]; then
    bench="$MCP_BENCH"
    [[ -x "$bench" ]] || { echo "MCP_BENCH=$bench is not an executable" >&2; exit 1; }
else
    bench="$PWD/benches/loadgen/target/release/mcp-bench"
    if [[ ! -x "$bench" ]]; then
        (cd benches/loadgen && env -u CARGO_TARGET_DIR cargo build --release --locked --quiet)
    fi
fi
cargo build --release --quiet --bin mcp-actor
bin="$PWD/target/release/mcp-actor"
dir=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

up_port=$(free_port)
gw_port=$(free_port)
cat >"$dir/upstream.toml" <<TOML
[server]
listen = "127.0.0.1:$up_port"
worker_threads = 1
[admin]
enabled = false
[[tools]]
builtin = "echo"
TOML
cat >"$dir/gateway.toml" <<TOML
[server]
listen = "127.0.0.1:$gw_port"
worker_threads = 1
[admin]
enabled = false
[[upstreams]]
name = "up"
url = "http://127.0.0.1:$up_port/mcp"
prefix = ""
TOML
"$bin" --config "$dir/upstream.toml" >"$dir/upstream.log" 2>&1 &
up_pid=$!
pids+=("$up_pid")
sleep 1
"$bin" --config "$dir/gateway.toml" >"$dir/gateway.log" 2>&1 &
gw_pid=$!
pids+=("$gw_pid")
sleep 2

# Runs the load against $1; prints "ok-requests rate" after checking every reply was verified.
load() {
    local url=$1
    if ! timeout $((120 + requests / 100)) "$bench" echo --era legacy --url "$url" -s 16 -c 4 \
        -n "$requests" -w 0 --json "$dir/load.json" >"$dir/load.txt" 2>&1; then
        echo "mcp-bench against $url failed:" >&2
        cat "$dir/load.txt" >&2
        exit 1
    fi
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["failed"]+d["mismatched"]==0, d; print(d["ok"], d["rate_per_s"])' "$dir/load.json"
}

load "http://127.0.0.1:$gw_port/mcp" >/dev/null   # warm-up, both servers
up0=$(ticks "$up_pid")
read -r direct_ok direct_rps < <(load "http://127.0.0.1:$up_port/mcp")
up1=$(ticks "$up_pid")
gw1=$(ticks "$gw_pid")
read -r proxied_ok proxied_rps < <(load "http://127.0.0.1:$gw_port/mcp")
up2=$(ticks "$up_pid")
gw2=$(ticks "$gw_pid")

python3 - "$hz" "$direct_ok" "$direct_rps" "$proxied_ok" "$proxied_rps" "$up0" "$up1" "$up2" "$gw1" "$gw2" <<'PY'
import sys
hz, d_ok, d_rps, p_ok, p_rps, up0, up1, up2, gw1, gw2 = map(float, sys.argv[1:])
us = lambda ticks, n: ticks / hz * 1e6 / n
direct = us(up1 - up0, d_ok)
gateway = us(gw2 - gw1, p_ok)
upstream = us(up2 - up1, p_ok)
print(f"| path | requests | rps | server CPU per request |")
print(f"|---|---:|---:|---:|")
print(f"| direct to the upstream | {d_ok:.0f} | {d_rps:.0f} | {direct:.1f} us |")
print(f"| through the gateway: gateway | {p_ok:.0f} | {p_rps:.0f} | {gateway:.1f} us ({gateway / direct:.2f}x direct) |")
print(f"| through the gateway: upstream | | | {upstream:.1f} us |")
print(f"| through the gateway: both | | | {gateway + upstream:.1f} us ({(gateway + upstream) / direct:.2f}x direct) |")
PY
