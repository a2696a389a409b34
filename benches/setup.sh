#!/usr/bin/env bash
# Install and build the benchmark's reference peers and the limit baseline, every
# dependency pinned by a committed lock file:
#
#   rust    benches/peers/rust   rmcp          cargo build --release --locked (Cargo.lock)
#   ts      benches/peers/ts     TS SDK v2     npm ci (package-lock.json)
#   python  benches/peers/python mcp (Python)  venv + pip install --require-hashes (requirements.txt)
#   limit   benches/limit        axum only     cargo build --release --locked (Cargo.lock)
#
# and the peer gateways of benches/gateway.sh (benches/peers/gateways/README.md):
#
#   mcp-proxy-rs  gateways/rust    mcp-proxy 0.6.0     cargo install --locked --version 0.6.0
#   supergateway  gateways/ts      supergateway 4.0.0  npm ci (package-lock.json)
#   mcp-proxy-py  gateways/python  mcp-proxy 0.13.0    venv + pip install --require-hashes
#   gateways      all three
#
# Usage: benches/setup.sh [rust|ts|python|limit|mcp-proxy-rs|supergateway|mcp-proxy-py|gateways ...]
#        (no argument: all of them)
#
# Idempotent: cargo rebuilds only what changed; npm ci and pip run again only when
# package-lock.json or requirements.txt changed since the last successful install
# (a stamp file in node_modules/ and .venv/ records it). Fails on the first error.
# Builds run under `nice -n 10` (the machine is shared); NICE= turns that off.
# Needs: cargo, node >= 20 with npm, python3.11 with venv (the hashes in
# requirements.txt are those of CPython 3.11 / Linux x86_64 wheels).
set -euo pipefail

BENCHES="$(cd "$(dirname "$0")" && pwd)"
NICE="${NICE-nice -n 10}"
parts=("$@")
[[ ${#parts[@]} -eq 0 ]] && parts=(rust ts python limit gateways)

say() { echo "setup.sh: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
run() {
    say "+ $*"
    # shellcheck disable=SC2086 # NICE is a command prefix, split on purpose
    $NICE "$@" || die "$* (exit $?)"
}
need() { command -v "$1" >/dev/null || die "$1 is not installed"; }
stamp_of() { sha256sum "$1" | cut -d' ' -f1; }

cargo_build() { # folder
    need cargo
    (cd "$1" && run env CARGO_INCREMENTAL=0 cargo build --release --locked)
}

setup_rust() {
    cargo_build "$BENCHES/peers/rust"
    say "rust peer: $("$BENCHES/peers/rust/version.sh")"
}

setup_limit() {
    cargo_build "$BENCHES/limit"
    say "limit: $BENCHES/limit/target/release/mcp-limit"
}

setup_ts() {
    local dir="$BENCHES/peers/ts"
    need node
    need npm
    local major
    major="$(node -p 'process.versions.node.split(".")[0]')"
    [[ "$major" -ge 20 ]] || die "the TypeScript peer needs node >= 20 (found $(node --version))"
    local want
    want="$(stamp_of "$dir/package-lock.json")"
    if [[ -f "$dir/node_modules/.bench-stamp" && "$(cat "$dir/node_modules/.bench-stamp")" == "$want" ]]; then
        say "ts peer: node_modules matches package-lock.json, npm ci skipped"
    else
        (cd "$dir" && run npm ci --no-audit --no-fund --loglevel=error)
        echo "$want" >"$dir/node_modules/.bench-stamp"
    fi
    say "ts peer: $("$dir/version.sh")"
}

setup_python() {
    local dir="$BENCHES/peers/python"
    local py="${PYTHON:-python3.11}"
    command -v "$py" >/dev/null || py=python3
    need "$py"
    local version
    version="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    [[ "$version" == 3.11 ]] || say "warning: $py is Python $version; requirements.txt hashes are for 3.11 wheels, pip will refuse the compiled ones"
    if [[ ! -x "$dir/.venv/bin/python" ]]; then
        run "$py" -m venv "$dir/.venv"
    fi
    local want
    want="$(stamp_of "$dir/requirements.txt")"
    if [[ -f "$dir/.venv/.bench-stamp" && "$(cat "$dir/.venv/.bench-stamp")" == "$want" ]]; then
        say "python peer: .venv matches requirements.txt, pip skipped"
    else
        # Every package with its exact version and wheel hash; nothing resolved, nothing built.
        run "$dir/.venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
            --require-hashes --only-binary :all: -r "$dir/requirements.txt"
        echo "$want" >"$dir/.venv/.bench-stamp"
    fi
    say "python peer: $("$dir/version.sh")"
}

# A crate's own binary, from crates.io with the lock file it was published with, into the
# folder's bin/ (cargo install skips it when that version is already there).
setup_mcp_proxy_rs() {
    local dir="$BENCHES/peers/gateways/rust"
    need cargo
    run env CARGO_INCREMENTAL=0 cargo install --locked --quiet --version 0.6.0 mcp-proxy \
        --root "$dir" --target-dir "$dir/target"
    say "mcp-proxy-rs: $("$dir/version.sh")"
}

npm_ci() { # folder
    local dir=$1 want
    need node
    need npm
    want="$(stamp_of "$dir/package-lock.json")"
    if [[ -f "$dir/node_modules/.bench-stamp" && "$(cat "$dir/node_modules/.bench-stamp")" == "$want" ]]; then
        say "$dir: node_modules matches package-lock.json, npm ci skipped"
    else
        (cd "$dir" && run npm ci --no-audit --no-fund --loglevel=error)
        echo "$want" >"$dir/node_modules/.bench-stamp"
    fi
}

setup_supergateway() {
    npm_ci "$BENCHES/peers/gateways/ts"
    say "supergateway: $("$BENCHES/peers/gateways/ts/version.sh")"
}

pip_venv() { # folder
    local dir=$1 py="${PYTHON:-python3.11}" want
    command -v "$py" >/dev/null || py=python3
    need "$py"
    [[ -x "$dir/.venv/bin/python" ]] || run "$py" -m venv "$dir/.venv"
    want="$(stamp_of "$dir/requirements.txt")"
    if [[ -f "$dir/.venv/.bench-stamp" && "$(cat "$dir/.venv/.bench-stamp")" == "$want" ]]; then
        say "$dir: .venv matches requirements.txt, pip skipped"
    else
        run "$dir/.venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
            --require-hashes --only-binary :all: -r "$dir/requirements.txt"
        echo "$want" >"$dir/.venv/.bench-stamp"
    fi
}

setup_mcp_proxy_py() {
    pip_venv "$BENCHES/peers/gateways/python"
    say "mcp-proxy-py: $("$BENCHES/peers/gateways/python/version.sh")"
}

start=$SECONDS
for part in "${parts[@]}"; do
    t=$SECONDS
    say "== $part"
    case "$part" in
        rust) setup_rust ;;
        ts) setup_ts ;;
        python) setup_python ;;
        limit) setup_limit ;;
        mcp-proxy-rs) setup_mcp_proxy_rs ;;
        supergateway) setup_supergateway ;;
        mcp-proxy-py) setup_mcp_proxy_py ;;
        gateways) setup_mcp_proxy_rs; setup_supergateway; setup_mcp_proxy_py ;;
        *) die "unknown part '$part' (rust, ts, python, limit, mcp-proxy-rs, supergateway, mcp-proxy-py, gateways)" ;;
    esac
    say "== $part done in $((SECONDS - t)) s"
done
say "all done in $((SECONDS - start)) s: ${parts[*]}"
