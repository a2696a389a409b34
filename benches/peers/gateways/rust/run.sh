#!/usr/bin/env bash
# mcp-proxy 0.6.0 (crates.io, tower-mcp) on 127.0.0.1:PORT/ in front of the shipped stdio
# echo server or of a Streamable HTTP upstream (exec: the PID is the gateway's).
#
#   run.sh PORT stdio-shared        one child, started at startup, shared by every session
#   run.sh PORT http URL            a Streamable HTTP backend
#
# The backend is named `up`: its tools are served as `up/echo` (the default separator).
# Everything else is the crate's defaults, less the log level (warn). The config is written
# to $TMPDIR (benches/gateway.sh gives each run a folder of its own).
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
port="${1:?usage: run.sh PORT stdio-shared|http URL}"
kind="${2:-stdio-shared}"
cfg="${TMPDIR:-/tmp}/mcp-proxy-rs-$port.toml"
cat >"$cfg" <<TOML
[proxy]
name = "bench"

[proxy.listen]
host = "127.0.0.1"
port = $port

[observability]
log_level = "warn"

[[backends]]
name = "up"
TOML
case "$kind" in
    stdio-shared)
        printf 'transport = "stdio"\ncommand = "%s"\nargs = ["%s"]\n' \
            "${ECHO_PYTHON:-python3}" "$dir/../echo_stdio.py" >>"$cfg" ;;
    http)
        printf 'transport = "http"\nurl = "%s"\n' "${3:?usage: run.sh PORT http URL}" >>"$cfg" ;;
    *) echo "mcp-proxy (crates.io): $kind is not a workload it can run" >&2; exit 3 ;;
esac
exec "$dir/bin/mcp-proxy" --config "$cfg"
