#!/usr/bin/env bash
# Instructions a server executes per echo call, under valgrind's callgrind: deterministic
# for a given binary and scenario (within about 1%), so two builds, or mcp-actor and the
# limit, compare without the noise of timings on a shared machine.
#
#   benches/instructions.sh BIN ERA SESSIONS CONCURRENCY
#
# BIN is an mcp-actor binary (run on benches/bench.toml: the defaults with one runtime
# thread, or on the file CONFIG names: CONFIG=config/default.toml for the default config)
# or benches/limit's mcp-limit (recognised by its name). ERA is legacy or modern. The admin
# listener, when the config has one, binds a free port.
# The server runs under callgrind twice, with `mcp-bench echo` sending for a 2 s and then a
# 6 s window; the difference of the two instruction totals divided by the difference of the
# verified calls is the cost of one call: start-up, `initialize` and shutdown cancel out.
# CALLS=N sends N and then 4N calls with no warm-up instead (mcp-bench echo -n): the same
# work in both runs whatever else the machine is doing, so the counts stay steady on a busy
# machine, where two timed windows' warm-ups differ.
# OP=input-required counts 2026-07-28 `input_required` round trips (`mcp-bench input-required`:
# a call of `ask`, then its retry with the answer and the sealed requestState) instead of
# echo calls; ERA must then be modern.
# Prints one line: BIN ERA SxC, the calls and totals of both runs, and instructions per call.
# Needs valgrind (apt-get install valgrind); builds mcp-bench when it is missing.
set -euo pipefail
usage="usage: benches/instructions.sh BIN legacy|modern SESSIONS CONCURRENCY"
bin=$(realpath "${1:?$usage}") era=${2:?$usage} s=${3:?$usage} c=${4:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
config=$(realpath "${CONFIG:-$here/bench.toml}")
bench=${MCP_BENCH:-$here/loadgen/target/release/mcp-bench}
if [[ ! -x $bench ]]; then
  (cd "$here/loadgen" && cargo build --release --locked)
fi
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
calls=${CALLS:-}
op=${OP:-echo}
case $op in
  echo) op_args=(echo --era "$era") ;;
  input-required)
    [[ $era == modern ]] || { echo "OP=input-required is a 2026-07-28 workload: ERA must be modern" >&2; exit 2; }
    op_args=(input-required) ;;
  *) echo "OP must be echo or input-required" >&2; exit 2 ;;
esac
declare -A IR OK
for d in 2 6; do
  if [[ -n $calls ]]; then
    window=(-n $((calls * (d == 2 ? 1 : 4))) -w 0)
  else
    window=(-d "$d" -w 1)
  fi
  port=$((18700 + RANDOM % 200))
  if [[ $(basename "$bin") == *limit* ]]; then
    args=(--port "$port")
  else
    args=(--listen "127.0.0.1:$port" --admin-listen 127.0.0.1:0 --config "$config")
  fi
  RUST_LOG=warn timeout 300 valgrind --tool=callgrind --callgrind-out-file="$work/cg.$d" \
    "$bin" "${args[@]}" >"$work/server.$d.log" 2>&1 &
  vpid=$!
  for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
  OK[$d]=$(timeout 200 "$bench" "${op_args[@]}" --url "http://127.0.0.1:$port/mcp" \
    -s "$s" -c "$c" "${window[@]}" --timeout 120 2>&1 | awk '/^ok /{print $2}')
  kill -INT "$vpid"
  wait "$vpid" 2>/dev/null || true
  IR[$d]=$(grep -E "^(summary|totals):" "$work/cg.$d" | head -1 | awk '{print $2}')
  if [[ -z ${OK[$d]} || -z ${IR[$d]} ]]; then
    echo "the ${d} s run gave no result; server log:" >&2
    cat "$work/server.$d.log" >&2
    exit 1
  fi
done
echo "$(basename "$bin") $op $era ${s}x$c: calls ${OK[2]} ${OK[6]}, instructions ${IR[2]} ${IR[6]}," \
  "per call $(((IR[6] - IR[2]) / (OK[6] - OK[2])))"
