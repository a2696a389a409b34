#!/usr/bin/env bash
# The supergateway version installed in node_modules.
cd "$(dirname "$0")" && exec node -e 'console.log(`supergateway ${require("./node_modules/supergateway/package.json").version} (node ${process.versions.node})`)'
