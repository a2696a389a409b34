#!/usr/bin/env bash
# Scale runs for mcp-actor: idle sessions at large counts, create/delete cycles, GET streams.
#
#   benches/scale.sh BIN [OUT_DIR]
#
# BIN is the mcp-actor release binary. The load generator is mcp-bench (benches/loadgen):
# `sessions` opens the idle sessions and DELETEs them, `echo -n 2000` times one active
# session. It is $MCP_BENCH if set, else benches/loadgen/target/release/mcp-bench, built
# (cargo build --release --locked) when missing. Everything binds 127.0.0.1 only; every
# step runs under `timeout`. Environment knobs (defaults in brackets):
#   IDLE_COUNTS ["100000 1000000"]  idle-session counts, a fresh server each ("" skips a part)
#   CYCLES [10]  CYCLE_SESSIONS [10000]  create/delete cycles against one server
#   STREAM_COUNTS ["1000 5000"]     sessions each holding one GET SSE stream, a fresh server each;
#                                    for each count also the control: sessions each holding one idle
#                                    keep-alive connection (after one ping) and no stream
#   PORT [18950]  MIN_FREE_GIB [8]  (an idle count is skipped when less memory than
#                                    MIN_FREE_GIB + 8 KiB x count is available)
# Results: OUT_DIR/*.json (mcp-bench's and streams.py's summaries) and OUT_DIR/summary.md.
set -euo pipefail
BIN="$(realpath "${1:?usage: scale.sh BIN [OUT_DIR]}")"
OUT="${2:-scale-results/$(date +%Y%m%d-%H%M%S)}"
HERE="$(cd "$(dirname "$0")" && pwd)"
if [[ -n "${MCP_BENCH:-}" ]]; then
  L="$(realpath "$MCP_BENCH")"
  [[ -x "$L" ]] || { echo "MCP_BENCH=$MCP_BENCH is not an executable" >&2; exit 1; }
else
  L="$HERE/loadgen/target/release/mcp-bench"
  if [[ ! -x "$L" ]]; then
    echo "building mcp-bench" >&2
    (cd "$HERE/loadgen" && nice -n 10 env -u CARGO_TARGET_DIR cargo build --release --locked) ||
      { echo "cargo build of mcp-bench failed" >&2; exit 1; }
  fi
fi
IDLE_COUNTS="${IDLE_COUNTS-100000 1000000}"
CYCLES="${CYCLES:-10}"
CYCLE_SESSIONS="${CYCLE_SESSIONS:-10000}"
STREAM_COUNTS="${STREAM_COUNTS-1000 5000}"
PORT="${PORT:-18950}"
MIN_FREE_GIB="${MIN_FREE_GIB:-8}"
mkdir -p "$OUT"
OUT="$(realpath "$OUT")"

# Sessions cost no file descriptor when idle, but streams do (one per connection, both ends).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "open files limit: $(ulimit -n); output: $OUT" >&2

# Every session and stream comes from 127.0.0.1: the per-address limits must allow them all
# (the initialize rate would refuse most of a fast run with 429), and the connection limits
# the largest stream count plus the load generator's own connections. No admin listener:
# its default address (127.0.0.1:9090) is fixed and another process may hold it.
max_stream=0
for k in $STREAM_COUNTS; do if (( k > max_stream )); then max_stream=$k; fi; done
MAX_CONNS=$(( max_stream + 1000 > 10000 ? max_stream + 1000 : 10000 ))
CFG="$OUT/scale.toml"
cat >"$CFG" <<TOML
[admin]
enabled = false

[http]
initialize_rate_per_ip = 0
max_connections = $MAX_CONNS
max_connections_per_ip = $MAX_CONNS

[sessions]
max_sessions = 2000000
idle_ttl = "2h"

[[tools]]
builtin = "echo"
TOML

SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

start_server() { # log file
  RUST_LOG="${RUST_LOG:-warn}" "$BIN" --config "$CFG" --listen "127.0.0.1:$PORT" >"$1" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && { sleep 0.3; return 0; }
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start (log: $1)" >&2
  exit 1
}
rss_kib() { awk '/^VmRSS:/{print $2}' "/proc/$1/status"; }
URL="http://127.0.0.1:$PORT/mcp"
# Runs mcp-bench under `timeout SECS`. Exit 1 (some operation failed or was mismatched) goes
# on: its JSON has the counts, and the summary shows them. Anything else stops the script.
bench() { # secs args...
  local secs=$1 rc=0
  shift
  timeout "$secs" "$L" "$@" || rc=$?
  if [[ $rc == 1 ]]; then
    echo "  mcp-bench $1: some operations failed (counted in its JSON)" >&2
  elif [[ $rc != 0 ]]; then
    echo "mcp-bench $* exited $rc" >&2
    exit 1
  fi
}
# One active session: 2000 verified echo calls one after another (no warm-up).
one_session() { # json-out
  bench 120 echo --era legacy --url "$URL" -s 1 -c 1 -n 2000 -w 0 --pid "$SERVER_PID" --json "$1" >/dev/null
}

# ---- a. idle sessions at scale, and latency of one active session among them ----------
for k in $IDLE_COUNTS; do
  avail_kib=$(awk '/^MemAvailable:/{print $2}' /proc/meminfo)
  need_kib=$(( MIN_FREE_GIB * 1024 * 1024 + k * 8 ))
  if (( avail_kib < need_kib )); then
    echo "idle:$k skipped: MemAvailable ${avail_kib} KiB < ${need_kib} KiB" >&2
    echo "{\"mode\":\"sessions\",\"skipped\":true,\"sessions_requested\":$k}" >"$OUT/idle-$k.json"
    continue
  fi
  start_server "$OUT/idle-$k.server.log"
  echo "idle:$k  server pid $SERVER_PID" >&2
  # warm-up + baseline latency with no other session
  one_session "$OUT/idle-$k.ping-empty.json"
  bench $(( 60 + k / 2000 )) sessions --url "$URL" -k "$k" --pid "$SERVER_PID" \
    --no-delete --json "$OUT/idle-$k.json" >"$OUT/idle-$k.txt"
  one_session "$OUT/idle-$k.ping.json"
  echo "  rss now $(rss_kib "$SERVER_PID") KiB" >&2
  stop_server
done

# ---- b. create/delete cycles against one server ---------------------------------------
start_server "$OUT/cycles.server.log"
echo "cycles: ${CYCLES} x ${CYCLE_SESSIONS}  server pid $SERVER_PID" >&2
: >"$OUT/cycles.tsv"
printf 'cycle\trss_idle_kib\trss_after_delete_kib\trss_proc_kib\n' >>"$OUT/cycles.tsv"
for c in $(seq "$CYCLES"); do
  bench $(( 60 + CYCLE_SESSIONS / 500 )) sessions --url "$URL" -k "$CYCLE_SESSIONS" --pid "$SERVER_PID" \
    --settle 1 --json "$OUT/cycle-$c.json" >/dev/null
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d["server_rss_idle_kib"], d["server_rss_after_delete_kib"], sys.argv[3], sep="\t")' \
    "$OUT/cycle-$c.json" "$c" "$(rss_kib "$SERVER_PID")" >>"$OUT/cycles.tsv"
  tail -1 "$OUT/cycles.tsv" >&2
done
stop_server

# ---- c. sessions holding a GET SSE stream ---------------------------------------------
for k in $STREAM_COUNTS; do
  start_server "$OUT/streams-$k.server.log"
  echo "streams:$k  server pid $SERVER_PID" >&2
  timeout 300 python3 "$HERE/scale/streams.py" --port "$PORT" --pid "$SERVER_PID" -k "$k" \
    >"$OUT/streams-$k.txt"
  tail -1 "$OUT/streams-$k.txt" >"$OUT/streams-$k.json"
  stop_server
  start_server "$OUT/conns-$k.server.log"
  echo "connections (control):$k  server pid $SERVER_PID" >&2
  timeout 300 python3 "$HERE/scale/streams.py" --port "$PORT" --pid "$SERVER_PID" -k "$k" --mode conn \
    >"$OUT/conns-$k.txt"
  tail -1 "$OUT/conns-$k.txt" >"$OUT/conns-$k.json"
  stop_server
done

# ---- summary --------------------------------------------------------------------------
python3 - "$OUT" >"$OUT/summary.md" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(n):
    p = os.path.join(out, n)
    return json.load(open(p)) if os.path.exists(p) else None
errors = lambda d: d["failed"] + d["mismatched"]  # mcp-bench counts failed and mismatched apart
print("## Idle sessions at scale\n")
print("| sessions | opened | open errors | opens/s | RSS before (MiB) | RSS idle (MiB) | RSS per session (bytes) | alive (verified) | ping p50 / p99 (ms), 0 others | ping p50 / p99 (ms), with the rest idle | ping errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
rows = []
for f in sorted(os.listdir(out)):
    if f.startswith("idle-") and f.endswith(".json") and f.count(".") == 1:
        d = load(f)
        k = d["sessions_requested"]
        if d.get("skipped"):
            print(f"| {k:,} | skipped (memory) |||||||||"); continue
        e = load(f"idle-{k}.ping-empty.json"); p = load(f"idle-{k}.ping.json")
        rows.append((k, d))
        print(f"| {k:,} | {d['sessions_opened']:,} | {d['open_errors']} | {d['sessions_per_s']:,.0f} | "
              f"{d['server_rss_before_kib']/1024:.1f} | {d['server_rss_idle_kib']/1024:.1f} | {d['rss_per_session_bytes']:,.0f} | "
              f"{d['verified_alive']}/{d['verified']} | {e['latency_p50_ms']} / {e['latency_p99_ms']} | "
              f"{p['latency_p50_ms']} / {p['latency_p99_ms']} | {errors(p)} |")
rows.sort()
if len(rows) >= 2:
    (k1, d1), (k2, d2) = rows[0], rows[-1]
    slope = (d2["server_rss_idle_kib"] - d1["server_rss_idle_kib"]) * 1024 / (k2 - k1)
    print(f"\nSlope between {k1:,} and {k2:,} sessions: {slope:,.0f} bytes per session.")
print("\n## Create/delete cycles (one server)\n")
print("| cycle | RSS with sessions idle (MiB) | RSS after DELETE all (MiB) |")
print("|---|---|---|")
cyc = [l.split("\t") for l in open(os.path.join(out, "cycles.tsv")).read().splitlines()[1:]]
for c, idle, after, _ in cyc:
    print(f"| {c} | {int(idle)/1024:.1f} | {int(after)/1024:.1f} |")
if len(cyc) >= 2:
    a1, an = int(cyc[0][2]), int(cyc[-1][2])
    print(f"\nRSS after DELETE, cycle {cyc[-1][0]} vs cycle 1: {an/a1:.3f}x ({(an-a1)/1024:+.1f} MiB).")
print("\n## Sessions holding a GET SSE stream\n")
print("Control rows: each session holds one idle keep-alive connection (after one ping) and no stream.\n")
print("| sessions | holding | opened | errors | open at reading | RSS before (MiB) | RSS held (MiB) | RSS per session (bytes) | RSS after close + DELETE (MiB) |")
print("|---|---|---|---|---|---|---|---|---|")
for f in sorted(os.listdir(out), key=lambda x: (len(x), x)):
    if (f.startswith("streams-") or f.startswith("conns-")) and f.endswith(".json"):
        d = load(f)
        per = d.get("rss_per_session_with_stream_bytes", d.get("rss_per_session_with_connection_bytes"))
        what = "GET SSE stream" if d["mode"] == "streams" else "idle connection (control)"
        print(f"| {d['sessions_requested']:,} | {what} | {d['sessions_with_stream']:,} | {d['errors']} | {d['streams_alive_at_reading']:,} | "
              f"{d['server_rss_before_kib']/1024:.1f} | {d['server_rss_streams_kib']/1024:.1f} | {per:,} | {d['server_rss_after_delete_kib']/1024:.1f} |")
PY
cat "$OUT/summary.md"
