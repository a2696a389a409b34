#!/usr/bin/env bash
# mcp-actor as a gateway on 127.0.0.1:PORT/mcp (exec: the PID is the gateway's), the binary
# $MCP_ACTOR_BIN, one runtime thread as in benches/compare.toml.
#
#   run.sh PORT stdio-shared        one stdio child for every session (scope = "shared")
#   run.sh PORT stdio-session       one stdio child per client session (scope = "session",
#                                   started on the session's first call)
#   run.sh PORT http URL            a Streamable HTTP upstream, one upstream session per
#                                   client session (the default scope)
#
# The upstream is named `up` with `prefix = ""`: its `echo` is served as `echo`. The config is
# written to $TMPDIR (benches/gateway.sh gives each run a folder of its own).
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
bin="${MCP_ACTOR_BIN:?set MCP_ACTOR_BIN to the mcp-actor binary}"
port="${1:?usage: run.sh PORT stdio-shared|stdio-session|http URL}"
kind="${2:-stdio-shared}"
cfg="${TMPDIR:-/tmp}/mcp-actor-gateway-$port.toml"
cat >"$cfg" <<TOML
[server]
listen = "127.0.0.1:$port"
worker_threads = 1

[admin]
enabled = false

[[upstreams]]
name = "up"
prefix = ""
TOML
upstream_command="command = [\"${ECHO_PYTHON:-python3}\", \"$dir/../echo_stdio.py\"]"
case "$kind" in
    stdio-shared) printf '%s\nscope = "shared"\n' "$upstream_command" >>"$cfg" ;;
    stdio-session) printf '%s\nscope = "session"\n' "$upstream_command" >>"$cfg" ;;
    http) printf 'url = "%s"\n' "${3:?usage: run.sh PORT http URL}" >>"$cfg" ;;
    *) echo "mcp-actor: $kind is not a workload" >&2; exit 3 ;;
esac
exec "$bin" --config "$cfg"
