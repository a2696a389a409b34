# The test command's suite runner (sourced by scripts/test and scripts/check-test-command.sh).
# The caller sets `tally` and `out` (temporary files) and `status`.

# Runs one suite, shows its output and how long it took, and records its closing
# "N passed, M failed" line. A
# suite that exits non-zero while its closing line counts no failure (it did not start, or
# died before its summary) counts as one failure, so the total can never read "0 failed"
# over a broken suite.
suite() {
    local name=$1
    shift
    echo "== $name"
    local start=$SECONDS
    "$@" 2>&1 | tee "$out"
    local rc=${PIPESTATUS[0]}
    echo "== $name: $((SECONDS - start)) s"
    local line
    if [ "$name" = "cargo test" ]; then
        line=$(grep -hoE 'test result: (ok|FAILED)\. [0-9]+ passed; [0-9]+ failed' "$out" |
            awk '{p+=$4; f+=$6} END {printf "%d passed, %d failed\n", p, f}')
    elif [ "$name" = "interop" ]; then
        # One closing line per client.
        line=$(grep -hoE '^[0-9]+ passed, [0-9]+ failed' "$out" |
            awk '{p+=$1; f+=$3} END {printf "%d passed, %d failed\n", p, f}')
    else
        line=$(grep -hoE '[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    fi
    [ -n "$line" ] || line="0 passed, 0 failed"
    if [ "$rc" -ne 0 ]; then
        echo "== $name FAILED (exit $rc)"
        status=1
        line=$(echo "$line" | awk '{f=$3; if (f < 1) f=1; printf "%d passed, %d failed\n", $1, f}')
    fi
    echo "$line" >>"$tally"
}
