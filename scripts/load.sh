#!/usr/bin/env bash
# The tests that bound latency under load (tests/abuse.rs: an initialize flood, slowloris
# connections), against the release build, one test at a time: their figures are those of
# the optimized server, which the debug build the other tests use is ten times slower than.
#
#   scripts/load.sh
#
# A latency bound measured on a shared 2-core machine can be broken by a neighbour, so a
# failed run is repeated once, and both runs' figures are printed; a second failure fails.
# Ends with cargo test's "test result" line.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo build --release --quiet --bin mcp-actor || exit 1
run() {
    MCP_ACTOR_TEST_BIN="$PWD/target/release/mcp-actor" \
        cargo test --quiet --test abuse -- --ignored --test-threads=1 --nocapture 2>&1 |
        tee /dev/stderr | grep -oE '[0-9]+ passed; [0-9]+ failed' | sed 's/;/,/' | tail -n 1
    return "${PIPESTATUS[0]}"
}
if run; then
    exit 0
fi
echo "load: a latency bound failed; running the load tests once more"
run
