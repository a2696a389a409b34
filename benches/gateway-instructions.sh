#!/usr/bin/env bash
# Instructions per forwarded call through mcp-actor's gateway, under valgrind's callgrind, set
# beside a direct call to the same upstream: the counts are steady for a binary (within about
# 1%) while CPU time on a shared machine is not, so two builds of the gateway compare here.
#
#   benches/gateway-instructions.sh BIN [KINDS] [SESSIONS] [CONCURRENCY]
#
# BIN is the mcp-actor binary, for the gateway and for the HTTP upstream alike. KINDS (default
# "http stdio-shared") are the upstreams of benches/gateway.sh, and the gateway is started by
# the same benches/peers/gateways/mcp-actor/run.sh:
#   http          an mcp-actor on benches/compare.toml over Streamable HTTP
#   stdio-shared  benches/peers/gateways/echo_stdio.py, one child for every session
#   stdio-session the same program, one child per session
# SESSIONS x CONCURRENCY defaults to 16 x 4, as in benches/gateway.sh (legacy era).
#
# Every figure is the difference of two callgrind runs, one with `mcp-bench echo` sending for
# a 2 s window and one for a 6 s window (after 1 s of warm-up), divided by the difference of
# their verified calls: start-up, the sessions' `initialize` and the upstream connections
# they open, and shutdown cancel out. Runs:
#   direct   the HTTP upstream under callgrind, mcp-bench calling it straight;
#   http     the gateway and the HTTP upstream both under callgrind, mcp-bench calling the
#            gateway: instructions per forwarded call on each side, from the same calls;
#   stdio-*  the gateway under callgrind (the Python child is not counted).
# Prints one line per run and a table of the ratios to the direct call. KEEP=1 keeps the
# callgrind files in OUT (default target/gateway-instructions/<date>-<time>) for
# `callgrind_annotate --inclusive=yes OUT/<run>.<role>.6`; without it they are deleted.
# Needs valgrind; builds mcp-bench when it is missing (MCP_BENCH overrides).
set -euo pipefail
usage="usage: benches/gateway-instructions.sh BIN [\"http stdio-shared stdio-session\"] [SESSIONS] [CONCURRENCY]"
bin=$(realpath "${1:?$usage}")
read -r -a kinds <<<"${2:-http stdio-shared}"
s=${3:-16} c=${4:-4}
here=$(cd "$(dirname "$0")" && pwd)
bench=${MCP_BENCH:-$here/loadgen/target/release/mcp-bench}
if [[ ! -x $bench ]]; then
  (cd "$here/loadgen" && env -u CARGO_TARGET_DIR cargo build --release --locked)
fi
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
out=${OUT:-$here/../target/gateway-instructions/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(realpath "$out")
ECHO_PYTHON="$(python3 -c 'import sys; print(sys.executable)')"
export ECHO_PYTHON

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  [[ -n ${KEEP:-} ]] || rm -f "$out"/*.cg.*
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits until 127.0.0.1:PORT accepts connections (120 s at most: valgrind starts slowly).
wait_port() {
  for _ in $(seq 1 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.2
  done
  echo "nothing listens on 127.0.0.1:$1 after 120 s" >&2
  exit 1
}

# A stand-in for BIN that runs it under callgrind, writing FILE: run.sh execs
# $MCP_ACTOR_BIN, so the gateway starts with exactly benches/gateway.sh's config. The
# supervisor the gateway starts for a stdio child is not traced (no --trace-children).
traced() {
  local wrapper="$out/traced.$(basename "$1").sh"
  printf '#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=%q %q "$@"\n' "$1" "$bin" >"$wrapper"
  chmod +x "$wrapper"
  echo "$wrapper"
}

# Starts the upstream on compare.toml, under callgrind writing FILE when one is given; sets
# $up_pid and $up_url.
start_upstream() {
  local port cmd=("$bin")
  port=$(free_port)
  cp "$here/compare.toml" "$out/upstream.toml"
  [[ -z ${1:-} ]] || cmd=(valgrind --tool=callgrind --callgrind-out-file="$1" "$bin")
  RUST_LOG=warn "${cmd[@]}" --config "$out/upstream.toml" --listen "127.0.0.1:$port" \
    >>"$out/upstream.log" 2>&1 &
  up_pid=$!
  pids+=("$up_pid")
  up_url="http://127.0.0.1:$port/mcp"
  wait_port "$port"
}

# Starts the gateway for KIND (in front of $up_url for http), BIN_FOR_IT its binary; sets
# $gw_pid and $gw_url.
start_gateway() {
  local kind=$1 binary=$2 port args
  port=$(free_port)
  args=("$port" "$kind")
  [[ $kind != http ]] || args+=("$up_url")
  mkdir -p "$out/tmp"
  TMPDIR="$out/tmp" MCP_ACTOR_BIN="$binary" RUST_LOG=warn \
    "$here/peers/gateways/mcp-actor/run.sh" "${args[@]}" >>"$out/gateway.log" 2>&1 &
  gw_pid=$!
  pids+=("$gw_pid")
  gw_url="http://127.0.0.1:$port/mcp"
  wait_port "$port"
}

stop() {
  kill -INT "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# mcp-bench for D seconds against URL: the verified calls.
calls() {
  timeout 300 "$bench" echo --era legacy --url "$1" -s "$s" -c "$c" -d "$2" -w 1 \
    --timeout 120 2>&1 | awk '/^ok /{print $2}'
}

total() { grep -E "^(summary|totals):" "$1" | head -1 | awk '{print $2}'; }

declare -A PER
# per RUN ROLE OK2 OK6: prints and records the instructions per call of ROLE in RUN.
per() {
  local run=$1 role=$2 ir2 ir6
  ir2=$(total "$out/$run.cg.$role.2") ir6=$(total "$out/$run.cg.$role.6")
  if [[ -z $3 || -z $4 || -z $ir2 || -z $ir6 || $4 -le $3 ]]; then
    echo "$run: the runs gave no result (calls '$3' '$4'); logs in $out" >&2
    exit 1
  fi
  PER[$run.$role]=$(((ir6 - ir2) / ($4 - $3)))
  echo "$run $role ${s}x$c: calls $3 $4, instructions $ir2 $ir6, per call ${PER[$run.$role]}"
}

declare -A OK
for d in 2 6; do
  start_upstream "$out/direct.cg.upstream.$d"
  OK[$d]=$(calls "$up_url" "$d")
  stop "$up_pid"
done
per direct upstream "${OK[2]}" "${OK[6]}"

for kind in "${kinds[@]}"; do
  for d in 2 6; do
    if [[ $kind == http ]]; then
      start_upstream "$out/http.cg.upstream.$d"
    fi
    start_gateway "$kind" "$(traced "$out/$kind.cg.gateway.$d")"
    OK[$d]=$(calls "$gw_url" "$d")
    stop "$gw_pid"
    [[ $kind != http ]] || stop "$up_pid"
  done
  per "$kind" gateway "${OK[2]}" "${OK[6]}"
  [[ $kind != http ]] || per "$kind" upstream "${OK[2]}" "${OK[6]}"
done

direct=${PER[direct.upstream]}
ratio() { python3 -c "print(f'{$1 / $2:.2f}x')"; }
echo
echo "| path | instructions per call | / direct call |"
echo "|---|---:|---:|"
echo "| direct to the upstream | $direct | 1.00x |"
for kind in "${kinds[@]}"; do
  echo "| $kind: the gateway | ${PER[$kind.gateway]} | $(ratio "${PER[$kind.gateway]}" "$direct") |"
  if [[ $kind == http ]]; then
    echo "| $kind: the upstream behind it | ${PER[$kind.upstream]} | $(ratio "${PER[$kind.upstream]}" "$direct") |"
  fi
done
