#!/usr/bin/env bash
# Installs nginx and HAProxy from the Debian packages when either is missing: tests/cluster.rs
# runs the load-balancer recipes of config/lb/ with them, and fails when they are absent.
#
#   scripts/lb-tools.sh
#
# Needs root or password-less sudo (CI runs as root on Debian bookworm). Installs nothing
# when both are there; exits non-zero when it cannot install them.
set -euo pipefail

have() { command -v "$1" >/dev/null || [[ -x "/usr/sbin/$1" ]]; }

missing=()
have nginx || missing+=(nginx)
have haproxy || missing+=(haproxy)
((${#missing[@]} == 0)) && exit 0

sudo=()
if [[ $EUID -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "lb-tools: ${missing[*]} missing; install them as root: apt-get install -y ${missing[*]}" >&2; exit 1; }
    sudo=(sudo -n)
fi
echo "lb-tools: installing ${missing[*]} (apt-get)"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
