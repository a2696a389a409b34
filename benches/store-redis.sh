# The redis-server of `benches/compare.sh --feature store`, sourced by compare.sh: started
# once on a free port for the runs whose feature fragment names @STORE_URL@ (only those get
# its URL, so `mine` beside `mine+store` runs without a store), flushed before each such run,
# and counted after it (INFO commandstats). compare.sh stops it on exit (STORE_PID).

STORE_URL="" STORE_PORT="" STORE_PID=""

# Starts redis-server with its files under OUT/redis and its log in OUT/logs/redis.log;
# sets STORE_PID, STORE_PORT and STORE_URL. Returns 1 when it does not answer.
start_store_redis() { # out
    command -v redis-server >/dev/null && command -v redis-cli >/dev/null || {
        echo "--feature store needs redis-server and redis-cli (scripts/lb-tools.sh installs them)" >>"$1/logs/redis.log"
        return 1
    }
    STORE_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    mkdir -p "$1/redis"
    redis-server --port "$STORE_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$1/redis" \
        >>"$1/logs/redis.log" 2>&1 </dev/null &
    STORE_PID=$!
    STORE_URL="redis://127.0.0.1:$STORE_PORT/0"
    for _ in $(seq 50); do
        redis-cli -p "$STORE_PORT" ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

# Whether a run's configuration uses the store this script started.
uses_store() { [[ -n "$STORE_URL" && -n "$1" ]] && grep -qF "$STORE_URL" "$1"; }
# Before such a run: an empty store, and Redis's command counts from zero.
reset_store() { redis-cli -p "$STORE_PORT" flushall >/dev/null && redis-cli -p "$STORE_PORT" config resetstat >/dev/null; }
# After it: "total per_op breakdown" of the commands Redis ran (INFO commandstats; the
# script's own INFO and CONFIG RESETSTAT left out), per operation of the run's JSON (`ok`:
# warm-up included, as are the commands that set its sessions up and end them).
store_commands() { # json
    redis-cli -p "$STORE_PORT" info commandstats | python3 -c '
import json, sys
calls = {}
for line in sys.stdin:
    if line.startswith("cmdstat_") and not line.startswith(("cmdstat_info:", "cmdstat_config|resetstat:")):
        name, stats = line.strip()[len("cmdstat_"):].split(":", 1)
        calls[name] = int(stats.split("calls=")[1].split(",")[0])
total = sum(calls.values())
ops = 0
try:
    ops = json.load(open(sys.argv[1])).get("ok") or 0
except Exception:
    pass
per_op = "%.4f" % (total / ops) if ops else "n/a"
print(total, per_op, ",".join("%s=%d" % kv for kv in sorted(calls.items())) or "-")
' "$1"
}
