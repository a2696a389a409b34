#!/usr/bin/env bash
# One command for the whole comparison: mcp-actor against the limit baseline and the SDK
# peers, every workload of benches/loadgen (mcp-bench), then the tables (report.md) and the
# plot (compare.svg).
#
#   benches/compare.sh [-o OUT_DIR] [-d SECS] [-w SECS] [--rounds N]
#                      [--servers "mine limit rust ts python"] [--scenarios "..."]
#                      [--streams K] [--feature "NAME ..."] [--store] [--no-build]
#
#   -o DIR         result folder (default target/compare/<date>-<time> in this repository)
#   -d SECS        measured window of the load scenarios (default 10)
#   -w SECS        warm-up before each window (default 2)
#   --rounds N     runs of each (scenario, server), each on a fresh server (default 3)
#   --servers L    any of: mine limit rust ts python (default: all, mine first)
#   --scenarios L  scenario names, or a prefix such as "echo" or "streams" (default: all;
#                  `--scenarios list` prints them)
#   --streams K    streams opened by the streams scenarios (default 10000)
#   --feature L    for each NAME, a server `mine+NAME` beside `mine`: mcp-actor on
#                  benches/compare.toml with benches/features/NAME.toml appended, so a
#                  feature's cost is a ratio to mine in the same run's report. A fragment
#                  naming @OTLP_ENDPOINT@ gets benches/otlp-sink.py's URL (`telemetry`:
#                  traces exported to a local OTLP/HTTP sink). One naming @STORE_URL@ gets
#                  the URL of a redis-server this script starts on a free port (and stops
#                  on exit), flushed before each of that server's runs (`store`: a shared
#                  session store); after each such run the Redis commands it took, per
#                  operation, are printed and written to OUT/store_commands.tsv
#   --store        the same as --feature store
#   --no-build     use what is built; only check that it exists
#
# Servers: `mine` is mcp-actor on benches/compare.toml ($MCP_ACTOR_BIN, or the release build of
# this repository, built here when missing); `limit` is benches/limit (echo and streams scenarios);
# `rust`, `ts`, `python` are benches/peers/<name>. Builds go through cargo, which rebuilds only
# what changed, and benches/setup.sh (peers and limit); they run under `nice -n 10`.
#
# Order: scenario by scenario; inside a scenario, round by round; inside a round, server by
# server (mine first). Background noise then falls on every server alike. Each run is a fresh
# server process on a free 127.0.0.1 port; once it answers, mcp-bench runs with --pid and
# --json OUT/<scenario>__<server>__r<N>.json; then the server gets SIGTERM, and SIGKILL after
# 10 s. Logs: OUT/logs/<run>.server.log and <run>.bench.log. Every run is a line of
# OUT/runs.tsv with its status: ok, not-supported (mcp-bench exit 3: the server lacks the
# feature; not a failure), failed (exit 1: failed or mismatched operations), setup-error
# (exit 2), timeout, start-failed (the server never answered), server-exited (it died during
# the run), and the hypervisor's steal time over the run (steal_pct: CPU the host gave to
# other guests; a run with 5% or more is flagged, as the host slowed it). After the last run:
# report.py writes OUT/report.md and plot.py OUT/compare.svg.
# The exit code is 1 when any run failed (after the report is written), 2 on a usage or
# setup error, else 0.
set -uo pipefail

BENCHES="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$BENCHES/.." && pwd)"
ARGV="$0 $*"

ALL_SERVERS="mine limit rust ts python"
ALL_SCENARIOS="echo-legacy-1x32 echo-legacy-64x4 echo-modern-1x32 echo-modern-256
input-required-1x32 elicit-legacy-1x32 progress-legacy-1x8 progress-modern-1x8
streams-legacy streams-modern resume-legacy"

OUT=""
DURATION=10
WARMUP=2
ROUNDS=3
SERVERS="$ALL_SERVERS"
SCENARIOS="$ALL_SCENARIOS"
STREAMS=10000
FEATURES=""
BUILD=1
STOP_WAIT=10 # seconds between SIGTERM and SIGKILL
READY_WAIT=60 # seconds a server may take to answer after its start

say() { echo "compare.sh: $*" >&2; }
die() { say "$*"; exit 2; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# The mcp-bench arguments of a scenario (without --url, --pid, --json, -d, -w).
scenario_args() { # name -> SARGS (array), SKIND (load|streams), SECHO (1 for echo scenarios)
    SKIND=load
    SECHO=0
    case "$1" in
        echo-legacy-1x32) SARGS=(echo --era legacy -s 1 -c 32) SECHO=1 ;;
        echo-legacy-64x4) SARGS=(echo --era legacy -s 64 -c 4) SECHO=1 ;;
        echo-modern-1x32) SARGS=(echo --era modern -s 1 -c 32) SECHO=1 ;;
        echo-modern-256) SARGS=(echo --era modern -s 256 -c 1) SECHO=1 ;;
        input-required-1x32) SARGS=(input-required -s 1 -c 32) ;;
        elicit-legacy-1x32) SARGS=(elicit --era legacy -s 1 -c 32) ;;
        progress-legacy-1x8) SARGS=(progress --era legacy -s 1 -c 8 --count 100) ;;
        progress-modern-1x8) SARGS=(progress --era modern -s 1 -c 8 --count 100) ;;
        streams-legacy) SARGS=(streams --era legacy --count "$STREAMS") SKIND=streams ;;
        streams-modern) SARGS=(streams --era modern --count "$STREAMS") SKIND=streams ;;
        resume-legacy) SARGS=(resume -s 4 --events 100 --every 10) ;;
        *) return 1 ;;
    esac
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -o) OUT="${2:?-o needs a folder}"; shift 2 ;;
        -d) DURATION="${2:?-d needs seconds}"; shift 2 ;;
        -w) WARMUP="${2:?-w needs seconds}"; shift 2 ;;
        --rounds) ROUNDS="${2:?--rounds needs a number}"; shift 2 ;;
        --servers) SERVERS="${2:?--servers needs a list}"; shift 2 ;;
        --scenarios) SCENARIOS="${2:?--scenarios needs a list}"; shift 2 ;;
        --streams) STREAMS="${2:?--streams needs a number}"; shift 2 ;;
        --feature) FEATURES="$FEATURES ${2:?--feature needs a name}"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --store) FEATURES="$FEATURES store"; shift ;;
        -h|--help) usage ;;
        *) say "unknown argument '$1'"; usage ;;
    esac
done

if [[ "$SCENARIOS" == list ]]; then
    for s in $ALL_SCENARIOS; do scenario_args "$s"; echo "$s: mcp-bench ${SARGS[*]}"; done
    exit 0
fi
for n in "$DURATION" "$WARMUP" "$ROUNDS" "$STREAMS"; do
    [[ "$n" =~ ^[0-9]+$ ]] || die "not a whole number: '$n'"
done
[[ "$ROUNDS" -ge 1 && "$DURATION" -ge 1 && "$STREAMS" -ge 1 ]] || die "-d, --rounds and --streams must be at least 1"

# Servers in the canonical order (mine first: every ratio is relative to it).
want_servers=()
for s in $SERVERS; do
    [[ " $ALL_SERVERS " == *" $s "* ]] || die "unknown server '$s' (one of: $ALL_SERVERS)"
done
for s in $ALL_SERVERS; do
    [[ " $SERVERS " == *" $s "* ]] && want_servers+=("$s")
done
[[ ${#want_servers[@]} -gt 0 ]] || die "no server selected"
# Feature variants run right after mine, so background noise falls on both alike.
FEATURES="$(printf '%s\n' $FEATURES | awk '!seen[$0]++' | tr '\n' ' ')"
variants=()
for f in $FEATURES; do
    [[ -f "$BENCHES/features/$f.toml" ]] || die "unknown feature '$f' (no benches/features/$f.toml)"
    [[ " ${want_servers[*]} " == *" mine "* ]] || die "--feature needs the server mine"
    variants+=("mine+$f")
done
if [[ ${#variants[@]} -gt 0 ]]; then
    rest=("${want_servers[@]:1}")
    want_servers=(mine "${variants[@]}" "${rest[@]}")
fi

# Scenarios: exact names or prefixes ("echo" = every echo-* scenario), in the canonical order.
want_scenarios=()
for w in $SCENARIOS; do
    hit=0
    for s in $ALL_SCENARIOS; do [[ "$s" == "$w" || "$s" == "$w"-* ]] && hit=1; done
    [[ $hit == 1 ]] || die "unknown scenario '$w' (--scenarios list prints them)"
done
for s in $ALL_SCENARIOS; do
    for w in $SCENARIOS; do
        if [[ "$s" == "$w" || "$s" == "$w"-* ]]; then want_scenarios+=("$s"); break; fi
    done
done

[[ -n "$OUT" ]] || OUT="$REPO/target/compare/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT/logs" "$OUT/configs" || die "cannot create $OUT"
OUT="$(cd "$OUT" && pwd)"
[[ -e "$OUT/runs.tsv" ]] && die "$OUT already holds a run (runs.tsv); pick another -o"

# --- build what is missing -------------------------------------------------------------
nice_cargo() { nice -n 10 env CARGO_INCREMENTAL=0 cargo "$@"; }
has() { [[ " ${want_servers[*]} " == *" $1 "* ]]; }

MCPBENCH="$BENCHES/loadgen/target/release/mcp-bench"
if has mine && [[ -z "${MCP_ACTOR_BIN:-}" ]]; then
    MCP_ACTOR_BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/mcp-actor"
    [[ "$MCP_ACTOR_BIN" == /* ]] || MCP_ACTOR_BIN="$REPO/$MCP_ACTOR_BIN"
    if [[ $BUILD == 1 ]]; then
        say "building mcp-actor (release)"
        (cd "$REPO" && nice_cargo build --release --locked) || die "cargo build of mcp-actor failed"
    fi
fi
export MCP_ACTOR_BIN
if [[ $BUILD == 1 ]]; then
    say "building mcp-bench"
    (cd "$BENCHES/loadgen" && nice_cargo build --release --locked) || die "cargo build of mcp-bench failed"
    parts=()
    for s in limit rust ts python; do has "$s" && parts+=("$s"); done
    if [[ ${#parts[@]} -gt 0 ]]; then
        say "benches/setup.sh ${parts[*]}"
        env -u CARGO_TARGET_DIR "$BENCHES/setup.sh" "${parts[@]}" || die "benches/setup.sh ${parts[*]} failed"
    fi
fi
# What each server needs, built or not.
missing=()
[[ -x "$MCPBENCH" ]] || missing+=("$MCPBENCH")
has mine && { [[ -x "$MCP_ACTOR_BIN" ]] || missing+=("$MCP_ACTOR_BIN"); }
has limit && { [[ -x "$BENCHES/limit/target/release/mcp-limit" ]] || missing+=("benches/limit/target/release/mcp-limit"); }
has rust && { [[ -x "$BENCHES/peers/rust/target/release/mcp-peer-rmcp" ]] || missing+=("benches/peers/rust/target/release/mcp-peer-rmcp"); }
has ts && { [[ -d "$BENCHES/peers/ts/node_modules" ]] || missing+=("benches/peers/ts/node_modules"); }
has python && { [[ -x "$BENCHES/peers/python/.venv/bin/python" ]] || missing+=("benches/peers/python/.venv"); }
[[ ${#missing[@]} -eq 0 ]] || die "missing (run without --no-build, or benches/setup.sh): ${missing[*]}"
for t in python3 curl timeout; do command -v "$t" >/dev/null || die "$t is not installed"; done
# A binary that rejects compare.toml (an older build without a tool it names) would make
# every mine run a start-failed one: stop here instead.
if has mine; then
    "$MCP_ACTOR_BIN" check "$BENCHES/compare.toml" >/dev/null 2>"$OUT/logs/compare.toml.check" ||
        die "$MCP_ACTOR_BIN rejects benches/compare.toml: $(tr '\n' ' ' <"$OUT/logs/compare.toml.check")"
fi
# The helpers this script starts (the OTLP sink, redis-server), stopped when it exits.
SINK_PID="" STORE_PID=""
stop_helpers() {
    [[ -z "$SINK_PID" ]] || kill "$SINK_PID" 2>/dev/null
    [[ -z "$STORE_PID" ]] || kill "$STORE_PID" 2>/dev/null
    return 0
}
# The OTLP sink, started once for every run that exports to it.
SINK_PID="" OTLP_ENDPOINT=""
if [[ -n "$FEATURES" ]] && grep -qs @OTLP_ENDPOINT@ $(for f in $FEATURES; do echo "$BENCHES/features/$f.toml"; done); then
    exec 3< <(exec python3 "$BENCHES/otlp-sink.py")
    SINK_PID=$!
    read -r -t 10 sink_port <&3 || die "benches/otlp-sink.py did not start"
    OTLP_ENDPOINT="http://127.0.0.1:$sink_port"
    trap 'stop_helpers' EXIT
fi
# The redis-server of `--feature store` (benches/store-redis.sh), for the runs that name it.
source "$BENCHES/store-redis.sh"
if [[ -n "$FEATURES" ]] && grep -qs @STORE_URL@ $(for f in $FEATURES; do echo "$BENCHES/features/$f.toml"; done); then
    trap 'stop_helpers' EXIT
    start_store_redis "$OUT" || die "redis-server did not start (see $OUT/logs/redis.log)"
fi
# mine+NAME's configuration: compare.toml, then the feature's fragment (appended to out).
variant_config() { # server out
    [[ $1 == mine+* ]] && sed -e "s#@OTLP_ENDPOINT@#$OTLP_ENDPOINT#g" -e "s#@STORE_URL@#$STORE_URL#g" \
        "$BENCHES/features/${1#mine+}.toml" >>"$2"
    return 0
}
for v in "${variants[@]}"; do
    cp "$BENCHES/compare.toml" "$OUT/configs/$v.toml"
    variant_config "$v" "$OUT/configs/$v.toml"
    "$MCP_ACTOR_BIN" check "$OUT/configs/$v.toml" >/dev/null 2>"$OUT/logs/$v.check" ||
        die "$MCP_ACTOR_BIN rejects $OUT/configs/$v.toml: $(tr '\n' ' ' <"$OUT/logs/$v.check")"
done

# Streams scenarios hold one connection per stream: raise the open-file limit (the servers
# inherit it; mcp-bench raises its own to the hard limit too).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || say "warning: could not raise the open-file limit ($(ulimit -n))"
if [[ " ${want_scenarios[*]} " == *" streams-"* && "$(ulimit -n)" != unlimited && "$(ulimit -n)" -lt $((STREAMS + 512)) ]]; then
    say "warning: open-file limit $(ulimit -n) is low for --streams $STREAMS"
fi

# --- meta.json --------------------------------------------------------------------------
versions=()
for s in "${want_servers[@]}"; do
    case "$s" in
        mine | mine+*) v="$("$MCP_ACTOR_BIN" --version 2>/dev/null | head -1)" ;;
        limit) v="axum $(awk '/^name = "axum"$/ {getline; gsub(/version = |"/, ""); print; exit}' "$BENCHES/limit/Cargo.lock") (no MCP logic)" ;;
        *) v="$("$BENCHES/peers/$s/version.sh" 2>/dev/null | head -1)" ;;
    esac
    versions+=("$s=${v:-unknown}")
done
BENCH_VERSIONS="$(printf '%s\n' "${versions[@]}")" \
BENCH_SERVERS="${want_servers[*]}" BENCH_SCENARIOS="${want_scenarios[*]}" \
BENCH_DURATION="$DURATION" BENCH_WARMUP="$WARMUP" BENCH_ROUNDS="$ROUNDS" BENCH_STREAMS="$STREAMS" \
BENCH_REPO="$REPO" BENCH_MCPBENCH="$("$MCPBENCH" --version 2>/dev/null)" BENCH_ARGV="$ARGV" \
BENCH_MINE_BIN="$(has mine && echo "$MCP_ACTOR_BIN")" \
BENCH_NOFILE="$(ulimit -n)" python3 - "$OUT/meta.json" <<'PY' || die "cannot write meta.json"
import json, os, platform, subprocess, sys, time

def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""

env = os.environ
repo = env["BENCH_REPO"]
cpu_model = ""
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
mem_kib = 0
try:
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
except OSError:
    pass
busy = run("ps", "-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers").splitlines()[:6]
meta = {
    "kind": "compare",
    "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    "started_unix": time.time(),
    "command": env["BENCH_ARGV"],
    "git_commit": run("git", "-C", repo, "rev-parse", "HEAD"),
    "git_dirty": bool(run("git", "-C", repo, "status", "--porcelain", "--untracked-files=no")),
    "servers": env["BENCH_SERVERS"].split(),
    "scenarios": env["BENCH_SCENARIOS"].split(),
    "duration_s": int(env["BENCH_DURATION"]),
    "warmup_s": int(env["BENCH_WARMUP"]),
    "rounds": int(env["BENCH_ROUNDS"]),
    "streams": int(env["BENCH_STREAMS"]),
    "versions": dict(l.split("=", 1) for l in env["BENCH_VERSIONS"].splitlines() if "=" in l),
    "mcp_bench": env["BENCH_MCPBENCH"],
    "mcp_actor_bin": env["BENCH_MINE_BIN"],
    "mcp_actor_bin_mtime": (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(env["BENCH_MINE_BIN"])))
                            if env["BENCH_MINE_BIN"] else None),
    "host": {
        "nproc": int(run("nproc") or 0),
        "cpu_model": cpu_model,
        "mem_gib": round(mem_kib / 1048576, 1),
        "kernel": platform.release(),
        "loadavg_before": open("/proc/loadavg").read().split()[:3],
        "busiest_processes_before": [" ".join(l.split()) for l in busy],
        "nofile_limit": env["BENCH_NOFILE"],
        "rustc": run("rustc", "--version"),
        "node": run("node", "--version"),
        "python": platform.python_version(),
    },
}
json.dump(meta, open(sys.argv[1], "w"), indent=2)
PY

# --- servers ----------------------------------------------------------------------------
SPID=""
PORT=""

free_port() { # a port nobody listens on, below the ephemeral range (no clash with clients)
    python3 - <<'PY'
import random, socket
for _ in range(200):
    p = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
PY
}

start_server() { # server config log -> SPID, PORT (returns 1 if it never answered)
    PORT="$(free_port)"
    [[ -n "$PORT" ]] || { say "no free port"; return 1; }
    local cmd
    case "$1" in
        mine | mine+*) cmd=(env RUST_LOG="${RUST_LOG:-warn}" "$BENCHES/run-mine.sh" "$PORT" --config "$2") ;;
        limit) cmd=("$BENCHES/limit/run.sh" "$PORT") ;;
        *) cmd=("$BENCHES/peers/$1/run.sh" "$PORT") ;;
    esac
    # A simple command in the background: $! is its PID, and run.sh execs the server.
    "${cmd[@]}" >"$3" 2>&1 </dev/null &
    SPID=$!
    local deadline=$((SECONDS + READY_WAIT)) code
    while [[ $SECONDS -lt $deadline ]]; do
        kill -0 "$SPID" 2>/dev/null || return 1
        # Any HTTP status means the server answers (a GET without session is refused).
        code="$(curl -s -o /dev/null --max-time 2 -w '%{http_code}' "http://127.0.0.1:$PORT/mcp" 2>/dev/null)"
        [[ -n "$code" && "$code" != 000 ]] && return 0
        sleep 0.1
    done
    return 1
}

stop_server() { # -> SERVER_RC (the server's exit status; 137 when killed)
    SERVER_RC=""
    [[ -n "$SPID" ]] || return 0
    kill -TERM "$SPID" 2>/dev/null
    local i
    for ((i = 0; i < STOP_WAIT * 10; i++)); do
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
    SERVER_RC=$?
    SPID=""
}

on_signal() {
    say "interrupted: stopping the server under test"
    STOP_WAIT=2 stop_server
    exit 130
}
trap on_signal INT TERM

# --- the runs ---------------------------------------------------------------------------
# The machine's CPU time so far, in clock ticks: "steal total" from /proc/stat's cpu line.
# Steal is time the hypervisor gave to other guests; a run with much of it is slowed
# (report.md shows it per run).
steal_now() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9; exit}' /proc/stat; }

# The limit answers the echo flow and holds open streams, nothing else (after scenario_args).
limit_skips() { [[ $1 == limit && $SECHO != 1 && $SKIND != streams ]]; }
runs_total=0
for sc in "${want_scenarios[@]}"; do
    scenario_args "$sc"
    for s in "${want_servers[@]}"; do
        limit_skips "$s" && continue
        runs_total=$((runs_total + ROUNDS))
    done
done
say "$runs_total runs: ${want_scenarios[*]} | servers: ${want_servers[*]} | -d $DURATION -w $WARMUP --rounds $ROUNDS --streams $STREAMS | out: $OUT"

[[ -z "$STORE_URL" ]] || printf 'scenario\tserver\tround\tops\tredis_commands\tper_op\tby_command\n' >"$OUT/store_commands.tsv"
printf 'scenario\tserver\tround\tstatus\tbench_exit\tserver_exit\tport\tseconds\tjson\tbench_log\tserver_log\tsteal_pct\n' >"$OUT/runs.tsv"
FAILS=0
n=0
t_start=$SECONDS
for sc in "${want_scenarios[@]}"; do
    scenario_args "$sc"
    for ((r = 1; r <= ROUNDS; r++)); do
        for s in "${want_servers[@]}"; do
            limit_skips "$s" && continue
            n=$((n + 1))
            run="${sc}__${s}__r${r}"
            json="$OUT/$run.json"
            slog="$OUT/logs/$run.server.log"
            blog="$OUT/logs/$run.bench.log"
            cfg=""
            if [[ $s == mine || $s == mine+* ]]; then
                cfg="$OUT/configs/$run.toml" # writable: the streams trigger rewrites it
                cp "$BENCHES/compare.toml" "$cfg"
                variant_config "$s" "$cfg"
            fi
            uses_store "$cfg" && reset_store
            t0=$SECONDS
            read -r steal0 ticks0 < <(steal_now)
            brc="" status=""
            if ! start_server "$s" "$cfg" "$slog"; then
                status=start-failed
            else
                cmd=("$MCPBENCH" "${SARGS[@]}" --url "http://127.0.0.1:$PORT/mcp" --pid "$SPID" --json "$json")
                if [[ $SKIND == load ]]; then
                    cmd+=(-d "$DURATION" -w "$WARMUP")
                    limit_s=$((WARMUP + DURATION + 120))
                else
                    if [[ $s == mine || $s == mine+* ]]; then
                        cmd+=(--trigger-cmd "$(printf '%q %q %q' "$BENCHES/loadgen/mcp-actor-toggle-tool.sh" "$cfg" "$SPID")")
                    else
                        cmd+=(--trigger-url "http://127.0.0.1:$PORT/bench/list-changed")
                    fi
                    limit_s=$((300 + STREAMS / 20))
                fi
                echo "+ ${cmd[*]}" >"$blog"
                timeout -k 10 "$limit_s" "${cmd[@]}" >>"$blog" 2>&1
                brc=$?
                alive=1
                kill -0 "$SPID" 2>/dev/null || alive=0
                case $brc in
                    0) status=ok ;;
                    1) status=failed ;;
                    2) status=setup-error ;;
                    3) status=not-supported ;;
                    124 | 137) status=timeout ;;
                    *) status="error-$brc" ;;
                esac
                [[ $alive == 0 && $status == ok ]] && status=server-exited
            fi
            stop_server
            secs=$((SECONDS - t0))
            read -r steal1 ticks1 < <(steal_now)
            steal=$(awk -v s=$((steal1 - steal0)) -v t=$((ticks1 - ticks0)) 'BEGIN { printf "%.1f", (t > 0 ? 100 * s / t : 0) }')
            [[ $status == ok || $status == not-supported ]] || FAILS=$((FAILS + 1))
            [[ -e "$json" ]] || json=""
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sc" "$s" "$r" "$status" "$brc" "$SERVER_RC" \
                "$PORT" "$secs" "${json:+${json##*/}}" "logs/${blog##*/}" "logs/${slog##*/}" "$steal" >>"$OUT/runs.tsv"
            summary=""
            if [[ -n "$json" ]]; then
                summary="$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
if j.get("not_supported"):
    print("(%s)" % j["not_supported"]); sys.exit()
if "rss_per_stream_kib" in j:
    print("%s/%s streams, %.2f KiB/stream, fan-out p99 %s ms" % (j.get("opened"), j.get("count"), j.get("rss_per_stream_kib") or 0, j.get("latency_p99_ms")))
else:
    print("%.0f/s, %.2f us/op, failed %s, mismatched %s" % (j.get("rate_per_s") or 0, j.get("server_cpu_us_per_op") or 0, j.get("failed"), j.get("mismatched")))
' "$json" 2>/dev/null)"
            fi
            if uses_store "$cfg"; then
                read -r rtotal rper rby < <(store_commands "$json")
                ops="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("ok", ""))' "$json" 2>/dev/null)"
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sc" "$s" "$r" "$ops" "$rtotal" "$rper" "$rby" >>"$OUT/store_commands.tsv"
                summary="$summary; redis: $rtotal commands, $rper per op ($rby)"
            fi
            stolen=""
            awk -v x="$steal" 'BEGIN { exit !(x >= 5) }' && stolen=", steal ${steal}%"
            say "[$n/$runs_total] $sc $s r$r: $status${summary:+ $summary} (${secs} s$stolen)"
            if [[ $status != ok && $status != not-supported ]]; then
                say "    see ${blog/#$OUT\//}$([[ -e $blog ]] || echo ' (none: mcp-bench did not run)') and ${slog/#$OUT\//} in $OUT"
            fi
        done
    done
done
elapsed=$((SECONDS - t_start))

python3 - "$OUT/meta.json" "$elapsed" "$FAILS" <<'PY'
import json, sys, time
p = sys.argv[1]
meta = json.load(open(p))
meta["host"]["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
meta["elapsed_s"] = int(sys.argv[2])
meta["failed_runs"] = int(sys.argv[3])
json.dump(meta, open(p, "w"), indent=2)
PY

rc=0
python3 "$BENCHES/report.py" "$OUT" || { say "report.py failed"; rc=1; }
python3 "$BENCHES/plot.py" "$OUT" "$OUT/compare.svg" >/dev/null || { say "plot.py failed"; rc=1; }
say "done in ${elapsed} s: $OUT/report.md, $OUT/compare.svg"
if [[ $FAILS -gt 0 ]]; then
    say "$FAILS run(s) failed (see the report's Runs section)"
    rc=1
fi
exit $rc
