#!/usr/bin/env bash
# Start mcp-actor on 127.0.0.1:PORT/mcp for the benchmark kit (exec: the PID is the server's).
# The binary is $MCP_ACTOR_BIN if set, else target/release/mcp-actor of this repository.
# RUST_LOG defaults to warn (the kit's runs should not pay for info-level logging).
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
bin="${MCP_ACTOR_BIN:-$dir/../target/release/mcp-actor}"
RUST_LOG="${RUST_LOG:-warn}" exec "$bin" --listen "127.0.0.1:${1:?usage: run-mine.sh PORT [extra args]}" "${@:2}"
