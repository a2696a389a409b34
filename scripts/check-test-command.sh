#!/usr/bin/env bash
# Checks the test command's own bookkeeping: a suite that exits non-zero before printing its
# closing line counts as a failure in the total, and a passing suite's line is kept.
# Ends with "test command: N passed, M failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tally=$(mktemp)
out=$(mktemp)
trap 'rm -f "$tally" "$out"' EXIT
status=0
# shellcheck source=scripts/suite.sh
source scripts/suite.sh
suite "dies before its summary" bash -c 'echo starting; exit 3' >/dev/null
suite "fails with a summary" bash -c 'echo "2 passed, 1 failed"; exit 1' >/dev/null
suite "passes" bash -c 'echo "5 passed, 0 failed"' >/dev/null
passed=0 failed=0
check() {
    if [ "$2" = "$3" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL $1: got '$2', want '$3'"
    fi
}
check "a suite that dies counts one failure" "$(sed -n 1p "$tally")" "0 passed, 1 failed"
check "a suite's own failures are kept" "$(sed -n 2p "$tally")" "2 passed, 1 failed"
check "a passing suite is kept" "$(sed -n 3p "$tally")" "5 passed, 0 failed"
check "the run fails" "$status" "1"
echo "test command: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
