#!/usr/bin/env bash
# Print the SDK packages this peer runs on and their versions (as installed in node_modules).
cd "$(dirname "$0")" && exec node -e '
const v = (p) => require(`./node_modules/${p}/package.json`).version;
console.log(`@modelcontextprotocol/server ${v("@modelcontextprotocol/server")} (TypeScript SDK v2; @modelcontextprotocol/node ${v("@modelcontextprotocol/node")}, @modelcontextprotocol/core ${v("@modelcontextprotocol/core")}, node ${process.versions.node})`);
'
