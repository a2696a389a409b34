#!/usr/bin/env bash
# Start the limit server on 127.0.0.1:PORT/mcp (exec: the PID is the server's).
# Build it first: cargo build --release --manifest-path benches/limit/Cargo.toml
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
exec "$dir/target/release/mcp-limit" --port "${1:?usage: run.sh PORT}"
