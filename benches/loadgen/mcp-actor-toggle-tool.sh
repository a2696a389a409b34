#!/bin/sh
# Trigger for `mcp-bench streams --trigger-cmd` against mcp-actor: adds a
# `[[tools]] builtin = "sleep" name = "extra"` entry to the configuration file, or removes
# it if present, then sends SIGHUP. The reload changes the tool list, so mcp-actor sends
# notifications/tools/list_changed to every session's GET stream and every listen stream.
#
#   mcp-bench streams ... --trigger-cmd "benches/loadgen/mcp-actor-toggle-tool.sh CONFIG PID"
set -eu
config=$1
pid=$2
marker='# mcp-bench extra tool'
if grep -q "^$marker" "$config"; then
    tmp=$(mktemp "$config.XXXXXX")
    # The marker line and the three lines after it are the entry.
    awk -v m="$marker" '$0 == m { skip = 4 } skip > 0 { skip--; next } { print }' "$config" > "$tmp"
    mv "$tmp" "$config"
else
    printf '%s\n[[tools]]\nbuiltin = "sleep"\nname = "extra"\n' "$marker" >> "$config"
fi
kill -HUP "$pid"
