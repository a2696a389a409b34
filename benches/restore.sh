#!/usr/bin/env bash
# What a session restore costs (`[store]`, Redis): two nodes on one redis-server, N sessions
# opened on node A, A SIGKILLed, then each session's next `echo` call sent to node B, which
# restores the session from its record. Prints p50 and p99 of those first calls (restore +
# echo) next to p50 and p99 of a second, warm call of each session on B, and the Redis
# commands each phase took (INFO commandstats before and after: the warm calls' target is 0).
#
#   benches/restore.sh [-n SESSIONS] [-o OUT_DIR]
#
#   -n N      sessions opened on A (default 200)
#   -o DIR    result folder (default target/restore/<date>-<time>): the nodes' configurations
#             and logs, redis.log, and result.json with the figures printed
#
# The binary is $MCP_ACTOR_BIN, else target/release/mcp-actor (built here when missing with
# `cargo build --release --bin mcp-actor`). Calls are sent one at a time over one keep-alive
# connection per node, so a latency is one request's, not a queue's. Everything listens on
# 127.0.0.1 on free ports, and every process this script starts is stopped when it exits.
# Exit code: 0 when every call succeeded, 1 when one failed, 2 on a usage or setup error.
set -uo pipefail

BENCHES="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$BENCHES/.." && pwd)"
SESSIONS=200
OUT=""

say() { echo "restore.sh: $*" >&2; }
die() { say "$*"; exit 2; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        -n) SESSIONS="${2:?-n needs a number}"; shift 2 ;;
        -o) OUT="${2:?-o needs a folder}"; shift 2 ;;
        -h | --help) usage ;;
        *) say "unknown argument '$1'"; usage ;;
    esac
done
[[ "$SESSIONS" =~ ^[0-9]+$ && "$SESSIONS" -ge 1 ]] || die "-n must be a whole number of at least 1"
for t in python3 redis-server redis-cli; do
    command -v "$t" >/dev/null || die "$t is not installed (scripts/lb-tools.sh installs redis-server)"
done
if [[ -z "${MCP_ACTOR_BIN:-}" ]]; then
    MCP_ACTOR_BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/mcp-actor"
    [[ "$MCP_ACTOR_BIN" == /* ]] || MCP_ACTOR_BIN="$REPO/$MCP_ACTOR_BIN"
    if [[ ! -x "$MCP_ACTOR_BIN" ]]; then
        say "building mcp-actor (release)"
        (cd "$REPO" && nice -n 10 cargo build --release --locked --bin mcp-actor) || die "cargo build failed"
    fi
fi
[[ -x "$MCP_ACTOR_BIN" ]] || die "no binary at $MCP_ACTOR_BIN"

[[ -n "$OUT" ]] || OUT="$REPO/target/restore/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT/redis" || die "cannot create $OUT"
OUT="$(cd "$OUT" && pwd)"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

PIDS=()
stop_all() {
    local pid
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
    return 0
}
trap stop_all EXIT
trap 'exit 130' INT TERM

REDIS_PORT="$(free_port)"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$OUT/redis" \
    >"$OUT/redis.log" 2>&1 </dev/null &
PIDS+=($!)
for _ in $(seq 50); do
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
done
redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 || die "redis-server did not answer on port $REDIS_PORT"

# A node: the echo tool, the shared store, loopback only, no admin listener (its default
# port may be taken), no initialize rate limit (N sessions from one address at once).
node_config() { # node_id -> path
    cat >"$OUT/$1.toml" <<EOF
[server]
node_id = "$1"
worker_threads = 1

[admin]
enabled = false

[http]
initialize_rate_per_ip = 0

[store]
url = "redis://127.0.0.1:$REDIS_PORT/0"

[[tools]]
builtin = "echo"
EOF
    echo "$OUT/$1.toml"
}

start_node() { # node_id port -> the PID on stdout (returns 1 if it never answered)
    RUST_LOG="${RUST_LOG:-warn}" "$MCP_ACTOR_BIN" --listen "127.0.0.1:$2" --config "$(node_config "$1")" \
        >"$OUT/$1.log" 2>&1 </dev/null &
    local pid=$!
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 1
        code="$(curl -s -o /dev/null --max-time 2 -w '%{http_code}' "http://127.0.0.1:$2/mcp" 2>/dev/null)"
        [[ -n "$code" && "$code" != 000 ]] && { echo "$pid"; return 0; }
        sleep 0.1
    done
    return 1
}

PORT_A="$(free_port)" PORT_B="$(free_port)"
PID_A="$(start_node a "$PORT_A")" || die "node a did not start (see $OUT/a.log)"
PIDS+=("$PID_A")
PID_B="$(start_node b "$PORT_B")" || die "node b did not start (see $OUT/b.log)"
PIDS+=("$PID_B")
say "$SESSIONS sessions on a (port $PORT_A), then a SIGKILLed and each session's next call on b (port $PORT_B); Redis on $REDIS_PORT; out: $OUT"

python3 - "$SESSIONS" "$PORT_A" "$PORT_B" "$PID_A" "$REDIS_PORT" "$OUT/result.json" <<'PY'
import http.client, json, os, signal, subprocess, sys, time

sessions, port_a, port_b, pid_a, redis_port, out = sys.argv[1:]
sessions, pid_a = int(sessions), int(pid_a)
VERSION = "2025-11-25"
ACCEPT = "application/json, text/event-stream"

def redis(*args):
    return subprocess.run(["redis-cli", "-p", redis_port, *args], capture_output=True, text=True).stdout

def commands():
    """Commands Redis has run, every kind but INFO (this script's own)."""
    total = 0
    for line in redis("info", "commandstats").splitlines():
        if line.startswith("cmdstat_") and not line.startswith("cmdstat_info:"):
            total += int(line.split("calls=")[1].split(",")[0])
    return total

class Node:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)

    def post(self, body, session=None):
        headers = {"Content-Type": "application/json", "Accept": ACCEPT}
        if session:
            headers["Mcp-Session-Id"] = session
            headers["MCP-Protocol-Version"] = VERSION
        self.conn.request("POST", "/mcp", json.dumps(body), headers)
        response = self.conn.getresponse()
        text = response.read().decode()
        return response.status, response.getheader("Mcp-Session-Id"), text

def echo(node, session, n):
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "restore-%d" % n}}}
    started = time.perf_counter()
    status, _, text = node.post(body, session)
    elapsed = time.perf_counter() - started
    ok = status == 200 and ("restore-%d" % n) in text
    return elapsed, ok

def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else None

a, b = Node(port_a), Node(port_b)
ids = []
for i in range(sessions):
    status, sid, _ = a.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "restore-bench", "version": "1"}}})
    if status != 200 or not sid:
        sys.exit("initialize on a: HTTP %s" % status)
    a.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    if not echo(a, sid, 1)[1]:
        sys.exit("echo on a failed")
    ids.append(sid)

# The `initialized` flag reaches the record off the request's path: wait until every
# record has it, so that b restores what a client that got its answers would expect.
deadline = time.time() + 30
pending = set(ids)
while pending and time.time() < deadline:
    pending = {s for s in pending if '"initialized":true' not in redis("hget", "mcp:session:" + s, "data")}
    if pending:
        time.sleep(0.1)
if pending:
    sys.exit("%d records never said initialized" % len(pending))

os.kill(pid_a, signal.SIGKILL)
time.sleep(0.2)

before = commands()
first, failed = [], 0
for n, sid in enumerate(ids):
    elapsed, ok = echo(b, sid, 100 + n)
    first.append(elapsed)
    failed += not ok
after_first = commands()
warm = []
for n, sid in enumerate(ids):
    elapsed, ok = echo(b, sid, 10_000 + n)
    warm.append(elapsed)
    failed += not ok
after_warm = commands()

result = {
    "sessions": sessions,
    "failed_calls": failed,
    "first_call_on_b_ms": {"p50": quantile(first, 0.50), "p99": quantile(first, 0.99), "max": quantile(first, 1.0)},
    "warm_call_on_b_ms": {"p50": quantile(warm, 0.50), "p99": quantile(warm, 0.99), "max": quantile(warm, 1.0)},
    "redis_commands_per_restore": (after_first - before) / sessions,
    "redis_commands_per_warm_echo": (after_warm - after_first) / sessions,
}
json.dump(result, open(out, "w"), indent=2)
f, w = result["first_call_on_b_ms"], result["warm_call_on_b_ms"]
print("sessions %d, failed calls %d" % (sessions, failed))
print("first call on b (restore + echo): p50 %.2f ms, p99 %.2f ms" % (f["p50"], f["p99"]))
print("warm call on b (echo):            p50 %.2f ms, p99 %.2f ms" % (w["p50"], w["p99"]))
print("Redis commands: %.2f per restore, %.2f per warm echo call (target 0)"
      % (result["redis_commands_per_restore"], result["redis_commands_per_warm_echo"]))
sys.exit(1 if failed else 0)
PY
rc=$?
[[ $rc -le 1 ]] || rc=2
exit $rc
