#!/usr/bin/env bash
# Instructions the server executes per request, under valgrind's callgrind: deterministic
# for a given binary and scenario, so two binaries compare without the noise of timings.
#
#   benches/instructions.sh BIN NAME SESSIONS CONCURRENCY REQUESTS PORT   -> total Ir
#
# Run it for two request counts and take (Ir(n2) - Ir(n1)) / (n2 - n1): start-up and the
# sessions' initialize cancel out (docs/performance.md, "Layers and hardening").
# Needs valgrind and the kit's load generator at $MCP_LOADGEN (default /work/bench/...).
set -euo pipefail
bin=$1 name=$2 s=$3 c=$4 n=$5 port=$6
dir=${CG_DIR:-/tmp/cg}
out=$dir/$name.$s.$c.$n.out
mkdir -p "$dir"
RUST_LOG=warn valgrind --tool=callgrind --callgrind-out-file=$out $bin --listen 127.0.0.1:$port --config "$(dirname "$0")/bench.toml" > $dir/$name.stdout 2>$dir/$name.stderr &
vpid=$!
for i in $(seq 1 200); do grep -q listening $dir/$name.stdout 2>/dev/null && break; sleep 0.2; done
"${MCP_LOADGEN:-/work/bench/loadgen/target/release/mcp-loadgen}" load --url http://127.0.0.1:$port/mcp -s $s -c $c -n $n --timeout 120 > $dir/$name.$s.$c.$n.load 2>&1
kill -INT $vpid; wait $vpid || true
grep -E "^(summary|totals):" $out | head -1 | awk '{print $2}'
