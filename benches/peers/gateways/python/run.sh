#!/usr/bin/env bash
# mcp-proxy 0.13.0 (PyPI) on 127.0.0.1:PORT/mcp/ in front of the shipped stdio echo server
# (exec: the PID is the gateway's). Usage: run.sh PORT stdio-shared
#
# Only stdio-shared: it starts the command once, at startup, and every client session shares
# that one child (one ClientSession). Given a URL instead of a command it is a client that
# serves stdio, so it cannot front an HTTP upstream for HTTP clients. Its Streamable HTTP
# endpoint is a Starlette Mount: `/mcp` redirects to `/mcp/`, so clients use `/mcp/`.
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
port="${1:?usage: run.sh PORT stdio-shared}"
kind="${2:-stdio-shared}"
[[ "$kind" == stdio-shared ]] || { echo "mcp-proxy (PyPI): $kind is not a workload it can run" >&2; exit 3; }
py="${ECHO_PYTHON:-python3}"
exec "$dir/.venv/bin/mcp-proxy" --host 127.0.0.1 --port "$port" --log-level WARNING \
    "$py" "$dir/../echo_stdio.py"
