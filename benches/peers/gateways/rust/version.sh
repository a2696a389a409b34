#!/usr/bin/env bash
# The mcp-proxy (crates.io) version installed in bin/.
cd "$(dirname "$0")" && printf 'mcp-proxy %s (crates.io, tower-mcp)\n' "$(grep -o '"mcp-proxy [0-9.]*' .crates.toml | cut -d' ' -f2)"
