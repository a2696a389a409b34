# Shared helpers of the test scripts (sourced, not run). Each script sets `log` first.
#
#   resolve_bin PATH ROOT       absolute path of a server binary given relative to the
#                               caller's folder or to ROOT; exits 2 when it is missing
#   free_port                   a free TCP port on 127.0.0.1
#   stop_server PID             TERM, up to 5 s for a clean exit, then KILL
#   wait_listening PID PORT LOG SECS
#                               until 127.0.0.1:PORT accepts connections; exits 1 (showing
#                               the end of LOG) if the server dies or SECS pass
#   npm_pinned DIR WHAT          npm ci in DIR from its package-lock.json, skipped while the
#                               lock file is the one of the last install (a stamp in
#                               DIR/node_modules records its digest); WHAT names it in the log
#   pip_pinned VENV REQS WHAT    the same for pip: a venv at VENV (made when missing) with
#                               REQS installed, stamped in VENV

resolve_bin() {
    local bin="$1" root="$2"
    if [[ "$bin" != /* ]]; then
        if [[ -e "$bin" ]]; then
            bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
        else
            bin="$root/$bin"
        fi
    fi
    if [[ ! -x "$bin" ]]; then
        log "server binary not found or not executable: $bin (build it first, e.g. cargo build)"
        exit 2
    fi
    echo "$bin"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

stop_server() {
    local pid="$1"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}

wait_listening() {
    local pid="$1" port="$2" log_file="$3" startup="$4" rc
    local deadline=$((SECONDS + startup))
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid" && rc=0 || rc=$?
            log "server exited (status $rc) before listening; its output:"
            tail -n 50 "$log_file" >&2 || true
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            log "server did not listen on 127.0.0.1:$port within ${startup}s; its output:"
            tail -n 50 "$log_file" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
}

digest_of() {
    python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"
}

npm_pinned() {
    local dir="$1" what="$2" want stamp="$1/node_modules/.pinned-install"
    [[ -f "$dir/package-lock.json" ]] || { log "$dir has no package-lock.json: nothing pins $what"; exit 2; }
    want="$(digest_of "$dir/package-lock.json")"
    [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && return 0
    log "installing $what (npm ci in $dir)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" >"$stamp"
}

pip_pinned() {
    local venv="$1" reqs="$2" what="$3" want stamp="$1/.pinned-install"
    want="$(digest_of "$reqs")"
    if [[ ! -x "$venv/bin/python" ]]; then
        log "creating venv $venv"
        python3 -m venv "$venv"
    fi
    [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && return 0
    log "installing $what (pip, $reqs)"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$reqs"
    echo "$want" >"$stamp"
}
