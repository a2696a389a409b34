#!/usr/bin/env bash
# Installs nginx, HAProxy and redis-server from the Debian packages when any is missing:
# tests/cluster.rs runs the load-balancer recipes of config/lb/ with them, tests/store.rs and
# tests/cluster/store.rs start their own redis-server, and they fail when these are absent.
#
#   scripts/lb-tools.sh
#
# Needs root or password-less sudo (CI runs as root on Debian bookworm). Installs nothing
# when all are there; exits non-zero when it cannot install them.
set -euo pipefail

have() { command -v "$1" >/dev/null || [[ -x "/usr/sbin/$1" ]]; }

missing=()
have nginx || missing+=(nginx)
have haproxy || missing+=(haproxy)
# redis-cli comes with it (redis-tools); the tests use both.
have redis-server || missing+=(redis-server)
((${#missing[@]} == 0)) && exit 0

sudo=()
if [[ $EUID -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "lb-tools: ${missing[*]} missing; install them as root: apt-get install -y ${missing[*]}" >&2; exit 1; }
    sudo=(sudo -n)
fi
echo "lb-tools: installing ${missing[*]} (apt-get)"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
