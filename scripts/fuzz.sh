#!/usr/bin/env bash
# Fuzz the parsers that read client input (fuzz/, described in docs/fuzzing.md) with
# cargo fuzz and libFuzzer:
#
#   scripts/fuzz.sh                      every target for 5 s: the test suite's run, built
#                                        without optimizations or sanitizer (the build
#                                        is what costs a fresh machine its minutes)
#   scripts/fuzz.sh --long SECONDS       every target for SECONDS, optimized and under
#                                        AddressSanitizer: the development runs
#   scripts/fuzz.sh [--long SECONDS] TARGET...   only these targets
#
# cargo-fuzz, pinned, is installed into the git-ignored .tools/cargo-fuzz when missing. It
# runs on the stable toolchain: RUSTC_BOOTSTRAP=1 lets stable rustc take the -Z flags cargo
# fuzz passes (FUZZ_SANITIZER picks the sanitizer: address for --long, none for the short run).
# Each target starts from its committed seeds (fuzz/seeds/TARGET) and grows a scratch corpus
# in fuzz/corpus/TARGET; a crash leaves its input in fuzz/artifacts/TARGET and fails the
# target. One fuzzing process at a time.
# Prints each target's executions and ends with "fuzzing: N passed, M failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO_FUZZ_VERSION="0.13.2"
seconds=5
long=false
if [[ "${1:-}" == "--long" ]]; then
    seconds="${2:?--long takes a number of seconds}"
    long=true
    shift 2
fi
if $long; then
    sanitizer="${FUZZ_SANITIZER:-address}"
else
    sanitizer="${FUZZ_SANITIZER:-none}"
fi
passed=0
failed=0

tools=".tools/cargo-fuzz"
if [[ ! -x "$tools/bin/cargo-fuzz" ]] || ! "$tools/bin/cargo-fuzz" --version | grep -q "$CARGO_FUZZ_VERSION"; then
    echo "installing cargo-fuzz $CARGO_FUZZ_VERSION into $tools"
    cargo install --quiet --locked "cargo-fuzz@$CARGO_FUZZ_VERSION" --root "$tools"
fi
export PATH="$PWD/$tools/bin:$PATH"
export RUSTC_BOOTSTRAP=1
# No stack trace kept per allocation, and no leak check: the targets look for panics and
# memory errors, and the parsers allocate at every step.
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=0:detect_leaks=0}"

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list 2>/dev/null)
fi
if [[ ${#targets[@]} -eq 0 ]]; then
    echo "no fuzz target found (is cargo-fuzz installed?)"
    echo "fuzzing: 0 passed, 1 failed"
    exit 1
fi

# Build flags shared by the build and the runs, so a run never rebuilds: optimized, with
# debug assertions and overflow checks, since a panic is what the targets look for.
build=(--sanitizer "$sanitizer" --debug-assertions)
$long || build+=(--dev)
# Each sanitizer builds in its own folder, so switching never rebuilds the other.
[[ "$sanitizer" == address ]] || build+=(--target-dir "$PWD/fuzz/target/$sanitizer")
if ! cargo fuzz build "${build[@]}"; then
    echo "fuzz targets do not build"
    echo "fuzzing: 0 passed, ${#targets[@]} failed"
    exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for target in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$target"
    options=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
    case "$target" in
        jsonrpc_body | batch_decode | modern_request | request_state) options+=(-dict=fuzz/dicts/mcp.dict) ;;
    esac
    if cargo fuzz run "${build[@]}" "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" \
        -- "${options[@]}" >"$log" 2>&1; then
        runs=$(grep -aoE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$')
        echo "$target: ${runs:-?} executions in ${seconds}s, no crash"
        passed=$((passed + 1))
    else
        echo "$target: FAILED; libFuzzer's report:"
        grep -aE 'panicked|ERROR|SUMMARY|Test unit written|deadly signal|error' "$log" | head -n 20
        tail -n 5 "$log"
        failed=$((failed + 1))
    fi
done

echo "fuzzing: $passed passed, $failed failed"
[[ "$failed" -eq 0 ]]
