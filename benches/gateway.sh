#!/usr/bin/env bash
# The gateway's overhead, in one run: server CPU per `echo` call made through mcp-actor's
# gateway to an upstream mcp-actor over Streamable HTTP, against the same calls made to that
# upstream directly.
#
#   benches/gateway.sh [REQUESTS]          (default 40000; needs LOADGEN, see below)
#
# LOADGEN is an MCP load generator that verifies every reply, such as the benchmark kit's
# mcp-loadgen (`LOADGEN=/path/to/mcp-loadgen benches/gateway.sh`). It runs 16 sessions x 4
# requests in flight. CPU is read from /proc/PID/stat (user + system) around each run, so the
# figures are per verified request. The gateway serves the upstream's tools without a prefix
# (`prefix = ""`), so the load generator calls the same `echo` both ways.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

requests="${1:-40000}"
loadgen="${LOADGEN:?set LOADGEN to an MCP load generator (mcp-loadgen)}"
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

# Runs the load against $1; prints "ok-requests" after checking every reply was verified.
load() {
    local url=$1 out
    out=$("$loadgen" load --url "$url" -s 16 -c 4 -n "$requests" | tail -n 1)
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["errors"]==0, d; print(d["ok"], d["rps"])' "$out"
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
