#!/usr/bin/env bash
# supergateway 4.0.0 on 127.0.0.1:PORT/mcp in front of the shipped stdio echo server
# (exec: the PID is the gateway's). Usage: run.sh PORT stdio-session
#
# Only stdio-session: supergateway's Streamable HTTP output is stdio-only on its input side.
# `--stateful` runs one child per client session (created at initialize); without it, every
# POST gets a child of its own (spawned, initialized and killed per request). A Streamable HTTP
# input (`--streamableHttp URL`) only serves stdio, so it cannot front an HTTP upstream for
# HTTP clients.
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
port="${1:?usage: run.sh PORT stdio-session}"
kind="${2:-stdio-session}"
[[ "$kind" == stdio-session ]] || { echo "supergateway: $kind is not a workload it can run" >&2; exit 3; }
py="${ECHO_PYTHON:-python3}"
exec node --import "$dir/loopback.mjs" "$dir/node_modules/supergateway/dist/index.js" \
    --stdio "$py $dir/../echo_stdio.py" --outputTransport streamableHttp --stateful \
    --port "$port" --logLevel none
