#!/usr/bin/env bash
# Gateways side by side, in one run: mcp-actor's gateway and three peer gateways, each in front
# of the same upstreams, driven with the same client sessions, every reply verified.
#
#   benches/gateway.sh [REQUESTS]          (default 40000 verified calls per run)
#
# Gateways (benches/peers/gateways/<dir>/run.sh; README.md there says what each one is):
#   mcp-actor      ($MCP_ACTOR_BIN, else this repository's release build, built when missing)
#   mcp-proxy-rs   mcp-proxy 0.6.0 from crates.io (tower-mcp)       rust/
#   supergateway   supergateway 4.0.0 from npm                        ts/
#   mcp-proxy-py   mcp-proxy 0.13.0 from PyPI                         python/
# installed by `benches/setup.sh gateways` (run here when one is missing).
#
# Upstreams, one workload each, for the gateways that can serve it (the table says why not):
#   http           an mcp-actor on benches/compare.toml over Streamable HTTP
#   stdio-shared   benches/peers/gateways/echo_stdio.py, one child for every client session
#   stdio-session  the same program, one child per client session
#
# Each run: a fresh gateway process (in a process group of its own, so that it and every child
# it started end with the run), then `mcp-bench echo --era legacy -s SESSIONS -c CONCURRENCY
# -w WARMUP -n REQUESTS --tool <the gateway's name for echo> --pid <gateway> --tree
# --child-cmd echo_stdio.py`: the gateway's CPU per call is the process tree's user + system
# time over the window less the echo children's (counted apart, by the name echo_stdio.py
# gives itself), RSS is the sum of VmRSS over the tree (children included) with the sessions
# open. The HTTP upstream's CPU behind a gateway is read around the whole mcp-bench run and
# divided by every verified call (warm-up included). Direct calls to the HTTP upstream, in
# the same run, are the baseline of the http rows; the stdio rows have no direct call over
# HTTP, so their latency is absolute and "added" is against the fastest gateway of that table.
#
# Knobs (environment): SESSIONS=16 CONCURRENCY=4 WARMUP=3 (seconds; per-session
#   children start during it, and a Python child takes seconds to start on a busy machine),
#   GATEWAYS="mcp-actor mcp-proxy-rs supergateway mcp-proxy-py", KINDS="http stdio-shared
#   stdio-session", MCP_ACTOR_BIN, MCP_BENCH (else benches/loadgen/target/release/mcp-bench,
#   built when missing), OUT (default target/gateway/<date>-<time>).
# Writes OUT/<kind>__<gateway>.json (mcp-bench's figures), the logs, and OUT/report.md, which
# is printed at the end: first the direct-vs-mcp-actor table, then every gateway side by side.
set -euo pipefail
[[ -z "${MCP_BENCH:-}" ]] || MCP_BENCH="$(realpath "$MCP_BENCH")"
[[ -z "${MCP_ACTOR_BIN:-}" ]] || MCP_ACTOR_BIN="$(realpath "$MCP_ACTOR_BIN")"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
gwdir="$repo/benches/peers/gateways"

requests="${1:-40000}"
sessions="${SESSIONS:-16}"
concurrency="${CONCURRENCY:-4}"
warmup="${WARMUP:-3}"
read -r -a gateways <<<"${GATEWAYS:-mcp-actor mcp-proxy-rs supergateway mcp-proxy-py}"
read -r -a kinds <<<"${KINDS:-http stdio-shared stdio-session}"
out="${OUT:-$repo/target/gateway/$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$out/logs"
say() { echo "gateway.sh: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

if [[ -n "${MCP_BENCH:-}" ]]; then
    bench="$MCP_BENCH"
    [[ -x "$bench" ]] || die "MCP_BENCH=$bench is not an executable"
else
    bench="$repo/benches/loadgen/target/release/mcp-bench"
    if [[ ! -x "$bench" ]]; then
        (cd benches/loadgen && env -u CARGO_TARGET_DIR cargo build --release --locked --quiet)
    fi
fi
if [[ -z "${MCP_ACTOR_BIN:-}" ]]; then
    cargo build --release --quiet --bin mcp-actor
    MCP_ACTOR_BIN="${CARGO_TARGET_DIR:-$repo/target}/release/mcp-actor"
    [[ "$MCP_ACTOR_BIN" == /* ]] || MCP_ACTOR_BIN="$repo/$MCP_ACTOR_BIN"
fi
[[ -x "$MCP_ACTOR_BIN" ]] || die "MCP_ACTOR_BIN=$MCP_ACTOR_BIN is not an executable"
export MCP_ACTOR_BIN
# The interpreter itself, not a version manager's shim script in front of it: every gateway
# starts the very same program, and nothing but the child is between them.
ECHO_PYTHON="$(python3 -c 'import sys; print(sys.executable)')"
export ECHO_PYTHON

# What each gateway is called here, where its code is, its endpoint's path, its name for the
# upstream's echo, and why it cannot run a workload (empty: it can).
folder() { case "$1" in mcp-actor) echo mcp-actor ;; mcp-proxy-rs) echo rust ;; supergateway) echo ts ;; mcp-proxy-py) echo python ;; *) die "unknown gateway '$1'" ;; esac; }
endpoint() { case "$1" in mcp-proxy-rs) echo / ;; mcp-proxy-py) echo /mcp/ ;; *) echo /mcp ;; esac; }
tool() { case "$1" in mcp-proxy-rs) echo up/echo ;; *) echo echo ;; esac; }
why_not() {
    case "$1/$2" in
        supergateway/http) echo "its Streamable HTTP input (--streamableHttp URL) serves stdio only: no HTTP upstream behind HTTP clients" ;;
        supergateway/stdio-shared) echo "no shared child: --stateful starts one child per session, stateless mode one per POST" ;;
        mcp-proxy-py/http) echo "given a URL it is a client that serves stdio: no HTTP upstream behind HTTP clients" ;;
        mcp-proxy-py/stdio-session) echo "no child per session: it starts the command once and every session shares it" ;;
        mcp-proxy-rs/stdio-session) echo "no child per session: a stdio backend is one process, started at startup, shared by every session" ;;
        *) ;;
    esac
}

missing=()
for gw in "${gateways[@]}"; do
    case "$gw" in
        mcp-proxy-rs) [[ -x "$gwdir/rust/bin/mcp-proxy" ]] || missing+=(mcp-proxy-rs) ;;
        supergateway) [[ -d "$gwdir/ts/node_modules/supergateway" ]] || missing+=(supergateway) ;;
        mcp-proxy-py) [[ -x "$gwdir/python/.venv/bin/mcp-proxy" ]] || missing+=(mcp-proxy-py) ;;
        mcp-actor) ;;
        *) die "unknown gateway '$gw' (mcp-actor, mcp-proxy-rs, supergateway, mcp-proxy-py)" ;;
    esac
done
if [[ ${#missing[@]} -gt 0 ]]; then
    say "installing ${missing[*]} (benches/setup.sh)"
    env -u CARGO_TARGET_DIR benches/setup.sh "${missing[@]}" || die "benches/setup.sh ${missing[*]}"
fi

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# Starts "$@" in a process group of its own (setsid execs it: the PID is the server's), waits
# until PORT accepts connections (60 s at most); sets $started.
start() {
    local name=$1 port=$2
    shift 2
    setsid "$@" >"$out/logs/$name.log" 2>&1 &
    started=$!
    pids+=("$started")
    local t
    for ((t = 0; t < 600; t++)); do
        if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        kill -0 "$started" 2>/dev/null || die "$name exited before it listened: $(tail -5 "$out/logs/$name.log")"
        sleep 0.1
    done
    die "$name did not listen on 127.0.0.1:$port within 60 s"
}

# Ends a server started with start, and every process of its group.
stop() {
    local pid=$1 t
    kill -TERM -- "-$pid" 2>/dev/null || true
    for ((t = 0; t < 100; t++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# One measured run: NAME URL TOOL PID; fails unless every reply was verified.
load() {
    local name=$1 url=$2 tool=$3 pid=$4
    if ! timeout $((120 + requests / 50)) "$bench" --tree --child-cmd echo_stdio.py echo \
        --era legacy --url "$url" -s "$sessions" -c "$concurrency" -w "$warmup" -n "$requests" \
        --tool "$tool" --pid "$pid" --json "$out/$name.json" >"$out/logs/$name.bench.txt" 2>&1; then
        cat "$out/logs/$name.bench.txt" >&2
        die "mcp-bench against $name ($url) failed"
    fi
    say "$name: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%s ok, %s/s, gateway %s us/call, p50 %s ms" % (d["ok"], d["rate_per_s"], d["server_cpu_us_per_op"], d["latency_p50_ms"]))' "$out/$name.json")"
}

up_pid=""
if [[ " ${kinds[*]} " == *" http "* ]]; then
    up_port=$(free_port)
    cp benches/compare.toml "$out/upstream.toml"
    start upstream "$up_port" "$MCP_ACTOR_BIN" --config "$out/upstream.toml" --listen "127.0.0.1:$up_port"
    up_pid=$started
    up_url="http://127.0.0.1:$up_port/mcp"
    load http__direct "$up_url" echo "$up_pid"
fi

for kind in "${kinds[@]}"; do
    for gw in "${gateways[@]}"; do
        reason=$(why_not "$gw" "$kind")
        if [[ -n "$reason" ]]; then
            printf '%s\n' "$reason" >"$out/${kind}__$gw.unsupported"
            continue
        fi
        port=$(free_port)
        mkdir -p "$out/tmp/$kind-$gw"
        args=("$port" "$kind")
        [[ "$kind" == http ]] && args+=("$up_url")
        TMPDIR="$out/tmp/$kind-$gw" start "$kind-$gw" "$port" "$gwdir/$(folder "$gw")/run.sh" "${args[@]}"
        gw_pid=$started
        [[ -z "$up_pid" ]] || u0=$(ticks "$up_pid")
        load "${kind}__$gw" "http://127.0.0.1:$port$(endpoint "$gw")" "$(tool "$gw")" "$gw_pid"
        if [[ -n "$up_pid" && "$kind" == http ]]; then
            echo "$(($(ticks "$up_pid") - u0)) $hz" >"$out/${kind}__$gw.upstream_ticks"
        fi
        stop "$gw_pid"
    done
done
[[ -z "$up_pid" ]] || stop "$up_pid"

versions="$out/versions.txt"
{
    echo "mcp-actor: $MCP_ACTOR_BIN ($("$MCP_ACTOR_BIN" --version 2>/dev/null || echo '?'))"
    for gw in "${gateways[@]}"; do
        [[ "$gw" == mcp-actor ]] || echo "$gw: $("$gwdir/$(folder "$gw")/version.sh")"
    done
    echo "echo child: $ECHO_PYTHON $gwdir/echo_stdio.py ($("$ECHO_PYTHON" --version))"
} >"$versions"
python3 "$gwdir/report.py" "$out" "$sessions" "$concurrency" "${gateways[*]}" "${kinds[*]}" >"$out/report.md"
cat "$out/report.md"
say "figures and logs: $out"
