#!/bin/sh
# Checks mcp-bench's verification against selftest/progress_server.py: a clean server
# gives exit 0 and no failures (echo, echo -n with exactly N calls, progress, streams with
# --trigger-url, resume, sessions with every session opened); a --faulty one gives exit 1
# with mismatches in every scenario (for sessions: wrong echo texts in the alive check);
# --no-resume makes `resume` exit 3 ("not supported"); `sessions` with no server listening
# exits 2 (setup error). Needs python3 and a built target/release/mcp-bench. Ends with
# "N passed, M failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
bench=${MCP_BENCH:-$here/../target/release/mcp-bench}
port=${PORT:-18190}
pass=0
fail=0
tmp=$(mktemp -d)
start() { python3 "$here/progress_server.py" "$1" $2 >/dev/null 2>&1 & echo $!; }
check() { # name expected-exit command...
    name=$1 want=$2
    shift 2
    "$@" >"$tmp/out" 2>&1
    got=$?
    mism=$(awk '$1 == "mismatched" { print $2 }' "$tmp/out")
    ok=1
    [ "$got" = "$want" ] || ok=0
    if [ "$want" = 1 ] && [ "${mism:-0}" = 0 ]; then ok=0; fi
    if [ $ok = 1 ]; then pass=$((pass + 1)); echo "pass: $name"
    else fail=$((fail + 1)); echo "FAIL: $name (exit $got, wanted $want)"; sed 's/^/    /' "$tmp/out"; fi
}
expect() { # name key value: the last check's summary has the line "key value"
    got=$(awk -v k="$2" '$1 == k { print $2 }' "$tmp/out")
    if [ "$got" = "$3" ]; then pass=$((pass + 1)); echo "pass: $1"
    else fail=$((fail + 1)); echo "FAIL: $1 ($2 is ${got:-missing}, wanted $3)"; sed 's/^/    /' "$tmp/out"; fi
}
clean=$(start $port "")
faulty=$(start $((port + 1)) --faulty)
nores=$(start $((port + 2)) --no-resume)
for p in $port $((port + 1)) $((port + 2)); do
    python3 -c "
import socket, sys, time
for _ in range(100):
    try:
        socket.create_connection(('127.0.0.1', $p), 1).close(); sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)" || echo "server on port $p did not start"
done
u() { echo "http://127.0.0.1:$1/mcp"; }
o="-d 1 -w 0.2 -s 2 -c 2"
for s in "echo --era legacy" "echo --era modern" "progress --era legacy" "progress --era modern"; do
    check "clean $s" 0 "$bench" $s --url "$(u $port)" $o
    check "faulty $s" 1 "$bench" $s --url "$(u $((port + 1)))" $o
done
for era in legacy modern; do
    check "clean streams --era $era" 0 "$bench" streams --era $era --url "$(u $port)" --count 40 --parallel 20 \
        --rounds 2 --trigger-url "http://127.0.0.1:$port/bench/list-changed"
done
check "clean resume" 0 "$bench" resume --url "$(u $port)" -d 1 -w 0.2 -s 2 --events 35
check "faulty resume" 1 "$bench" resume --url "$(u $((port + 1)))" -d 1 -w 0.2 -s 2 --events 35
check "no-resume resume" 3 "$bench" resume --url "$(u $((port + 2)))" -d 1 -w 0.2 -s 1
check "clean echo -n" 0 "$bench" echo --era legacy --url "$(u $port)" -n 50 -w 0 -s 2 -c 2
expect "clean echo -n: 50 calls" ok 50
check "clean echo -n, warm-up" 0 "$bench" echo --era modern --url "$(u $port)" -n 30 -w 0.3 -s 1 -c 2
expect "clean echo -n, warm-up: 30 calls after it" ops_in_window 30
check "faulty echo -n" 1 "$bench" echo --era legacy --url "$(u $((port + 1)))" -n 50 -w 0 -s 2 -c 2
s="sessions -k 300 --parallel 8 --settle 0.2 --verify 40 --timeout 10"
check "clean sessions" 0 "$bench" $s --url "$(u $port)" --pid "$clean"
expect "clean sessions: all opened" sessions_opened 300
expect "clean sessions: all alive" verified_alive 40
check "clean sessions --no-delete" 0 "$bench" $s --url "$(u $port)" --no-delete
check "faulty sessions" 1 "$bench" $s --url "$(u $((port + 1)))"
check "no server sessions" 2 "$bench" $s --url "$(u $((port + 3)))"
kill $clean $faulty $nores 2>/dev/null
rm -rf "$tmp"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
