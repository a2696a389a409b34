#!/usr/bin/env bash
# Conformance: run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against examples/conformance, the suite's server built on the mcp-actor library.
#
#   scripts/conformance.sh
#
# Installs into git-ignored .tools/ (each step is skipped when already at the pinned version):
#   .tools/node22                  Node 22 from the npm registry (the suite needs Node >= 22)
#   .tools/conf-0.1.16             the suite's `latest` release
#   .tools/conf-0.2.0-alpha.12     the prerelease that adds --requirements and wire-schema checks
# Builds the example, starts it on a free loopback port, then runs:
#   0.1.16-active                  the 30 active scenarios (= the 2025-11-25 requirement set)
#   0.1.16-pending                 json-schema-2020-12 and server-sse-polling
#   0.2.0-alpha.12-2025-11-25      --requirements 2025-11-25, including the unscored scenarios
#   0.2.0-alpha.12-2026-07-28      --requirements 2026-07-28 (the stateless revision, served on the
#                                  same endpoint), including the unscored scenarios (pending ones
#                                  and the io.modelcontextprotocol/tasks extension)
# Results go to .tools/conf-results/<run>/ (the suite's checks.json files) and
# .tools/conf-results/<run>.log (its full output); the server's output goes to
# .tools/conf-results/server.{out,err}.
#
# Fails (exit 1) on any FAILURE check in any run, on any WARNING check in a 0.1.16 run
# (scenarios of optional extensions that the suite itself does not score are reported but
# not counted),
# when a suite exits non-zero or reports nothing, or when the server dies. A scenario
# counts as failed under the same rules; the last line is `conformance: N passed, M failed`
# over the scenarios of every run.
#
# Environment:
#   CONFORMANCE_PROFILE       debug (default) or release: how the example is built
#   CONFORMANCE_STARTUP_SECS  how long to wait for the server to listen (default 60)
#   CARGO_TARGET_DIR          honoured by cargo as usual
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

node_major=22
suite_stable="0.1.16"
suite_alpha="0.2.0-alpha.12"
alpha_requirements="2025-11-25"
modern_requirements="2026-07-28"

tools="$repo_root/.tools"
results="$tools/conf-results"
profile="${CONFORMANCE_PROFILE:-debug}"

log() { echo "conformance: $*" >&2; }
# shellcheck source=scripts/lib.sh
source "$repo_root/scripts/lib.sh"

# --- toolchain ----------------------------------------------------------------
command -v npm >/dev/null || { log "npm is required (any version; it only installs packages)"; exit 2; }
command -v python3 >/dev/null || { log "python3 is required"; exit 2; }
command -v cargo >/dev/null || { log "cargo is required"; exit 2; }

# Installs package@version into the npm project `dir`, unless it is already there at `version`.
npm_install_pinned() {
    local dir="$1" package="$2" version="$3"
    local manifest="$dir/node_modules/$package/package.json"
    if [[ -f "$manifest" ]] &&
        [[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$manifest")" == "$version" ]]; then
        return 0
    fi
    log "installing $package@$version into ${dir#"$repo_root"/}"
    mkdir -p "$dir"
    [[ -f "$dir/package.json" ]] || (cd "$dir" && npm init -y >/dev/null)
    # Nothing here needs an install script: node-linux-* ships the binary in the tarball.
    (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
        "$package@$version" >/dev/null)
}

case "$(uname -m)" in
    x86_64 | amd64) node_arch=x64 ;;
    aarch64 | arm64) node_arch=arm64 ;;
    *) log "no Node package for machine type $(uname -m)"; exit 2 ;;
esac
node_pkg="node-linux-$node_arch"
node_dir="$tools/node22"
node_bin="$node_dir/node_modules/$node_pkg/bin"
if [[ ! -x "$node_bin/node" ]] || [[ "$("$node_bin/node" -p 'process.versions.node.split(".")[0]')" != "$node_major" ]]; then
    log "installing $node_pkg@$node_major into ${node_dir#"$repo_root"/}"
    mkdir -p "$node_dir"
    [[ -f "$node_dir/package.json" ]] || (cd "$node_dir" && npm init -y >/dev/null)
    (cd "$node_dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
        "$node_pkg@$node_major" >/dev/null)
fi
export PATH="$node_bin:$PATH"
node="$node_bin/node"

npm_install_pinned "$tools/conf-$suite_stable" @modelcontextprotocol/conformance "$suite_stable"
npm_install_pinned "$tools/conf-$suite_alpha" @modelcontextprotocol/conformance "$suite_alpha"
suite_cli() { echo "$tools/conf-$1/node_modules/@modelcontextprotocol/conformance/dist/index.js"; }

# --- build ----------------------------------------------------------------------
case "$profile" in
    debug) profile_flag=() ;;
    release) profile_flag=(--release) ;;
    *) log "CONFORMANCE_PROFILE must be debug or release, not '$profile'"; exit 2 ;;
esac
log "building the conformance example ($profile)"
# Cargo names the executable it built, wherever CARGO_TARGET_DIR points.
bin="$(cargo build --example conformance "${profile_flag[@]}" --message-format=json-render-diagnostics |
    python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "conformance" \
            and "example" in msg["target"]["kind"] and msg.get("executable"):
        print(msg["executable"])
')" || { log "building the example failed"; exit 1; }
if [[ -z "$bin" || ! -x "$bin" ]]; then
    log "cargo did not report the conformance example's executable"
    exit 1
fi

# --- start the server -----------------------------------------------------------
mkdir -p "$results"
server_out="$results/server.out"
server_err="$results/server.err"
port="$(free_port)"

server_pid=""
cleanup() {
    stop_server "$server_pid"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "starting ${bin#"$repo_root"/} --listen 127.0.0.1:$port"
# Empty the output files here, not in the child's redirection, so the wait below can never
# read the previous run's `listening on` line.
: >"$server_out"
: >"$server_err"
"$bin" --listen "127.0.0.1:$port" >>"$server_out" 2>>"$server_err" &
server_pid=$!

# The example prints `listening on <url>` as its first stdout line once it is bound.
deadline=$((SECONDS + ${CONFORMANCE_STARTUP_SECS:-60}))
url=""
until [[ -n "$url" ]]; do
    first_line="$(head -n 1 "$server_out" 2>/dev/null || true)"
    if [[ "$first_line" == "listening on "* ]]; then
        url="${first_line#listening on }"
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        wait "$server_pid" && rc=0 || rc=$?
        server_pid=""
        log "the server exited (status $rc) before listening; its stderr:"
        tail -n 30 "$server_err" >&2 || true
        exit 1
    fi
    if ((SECONDS >= deadline)); then
        log "the server did not listen within ${CONFORMANCE_STARTUP_SECS:-60}s; its stderr:"
        tail -n 30 "$server_err" >&2 || true
        exit 1
    fi
    sleep 0.1
done
log "server up at $url"

# --- run the suites -------------------------------------------------------------
total_passed=0
total_failed=0
status=0

# run_suite <run name> <suite version> <strict: 1 = a WARNING fails> <suite args...>
run_suite() {
    local run="$1" version="$2" strict="$3"
    shift 3
    local out="$results/$run" rc=0
    rm -rf "$out" "$out.log" "$out.tally"
    echo
    echo "=== $run: conformance@$version server ${*:-(default: active suite)}"
    "$node" "$(suite_cli "$version")" server --url "$url" -o "$out" "$@" >"$out.log" 2>&1 || rc=$?

    # The suite's own summary: the failing scenarios, then the totals block.
    grep -E '^✗ ' "$out.log" || true
    sed -n '/^Total: /,$p' "$out.log"

    # Per-run tallies from the checks.json files; the verdict goes to <run>.tally.
    python3 - "$out" "$strict" <<'PY'
import collections, glob, json, os, re, sys

out, strict = sys.argv[1], sys.argv[2] == "1"
# Scenarios of optional extensions the suite runs but does not score (its log lists them
# as "✗ name (extension)" under "Not scored"): reported, not counted against us.
log = open(out + ".log", encoding="utf-8", errors="replace").read()
extensions = set(re.findall(r"^\s+[✓✗] (\S+) \(extension\)$", log, re.M))
counts = collections.Counter()
passed = failed = 0
unscored = collections.Counter()
problems = []
for path in sorted(glob.glob(os.path.join(out, "*", "checks.json"))):
    # The folder is server-<scenario>-<ISO timestamp with ':' and '.' turned into '-'>.
    folder = os.path.basename(os.path.dirname(path)).removeprefix("server-")
    scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", folder)
    bad = False
    for check in json.load(open(path)):
        status = check.get("status", "?")
        counts[status] += 1
        bad = bad or status == "FAILURE" or (strict and status == "WARNING")
        if status in ("FAILURE", "WARNING") and scenario not in extensions:
            message = check.get("errorMessage") or check.get("description")
            problems.append(f"  {status} {scenario} [{check.get('id')}]: {message}")
    if scenario in extensions:
        unscored["failed" if bad else "passed"] += 1
        continue
    failed += bad
    passed += not bad
statuses = ["SUCCESS", "FAILURE", "WARNING", "INFO", "SKIPPED"]
print("checks: " + ", ".join(f"{s}={counts[s]}" for s in statuses))
for line in problems:
    print(line)
rule = "a FAILURE or WARNING fails a scenario" if strict else "a FAILURE fails a scenario"
print(f"scenarios: {passed} passed, {failed} failed ({rule})")
if extensions:
    print(f"unscored extension scenarios: {unscored['passed']} passed, {unscored['failed']} failing "
          f"(not counted: optional extensions the suite does not score)")
verdict = "ok" if failed == 0 and passed > 0 else "fail"
with open(out + ".tally", "w") as f:
    print(passed, failed, verdict, file=f)
PY
    local passed failed verdict
    read -r passed failed verdict <"$out.tally"
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    if [[ "$verdict" != ok ]]; then
        ((passed + failed > 0)) || log "$run: the suite reported no scenario (see $out.log)"
        status=1
    fi
    if ((rc != 0)); then
        log "$run: the suite exited with status $rc (see ${out#"$repo_root"/}.log)"
        status=1
    fi
}

run_suite "$suite_stable-active" "$suite_stable" 1
run_suite "$suite_stable-pending" "$suite_stable" 1 --suite pending
run_suite "$suite_alpha-$alpha_requirements" "$suite_alpha" 0 --requirements "$alpha_requirements"
run_suite "$suite_alpha-$modern_requirements" "$suite_alpha" 0 --requirements "$modern_requirements"

echo
if ! kill -0 "$server_pid" 2>/dev/null; then
    log "the server died during the run; its stderr:"
    tail -n 30 "$server_err" >&2 || true
    status=1
fi
echo "conformance: $total_passed passed, $total_failed failed"
exit "$status"
