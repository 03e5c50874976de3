# lib.sh - helpers for shell integration tests (tests/integration/*.t).
#
# Source it from a POSIX sh or bash test:
#
#   #!/bin/sh
#   . "$(dirname "$0")/../lib.sh"
#   start_sluiced
#   id=$(sluice run --gpus 1 -- true)
#   ok "job submitted" test -n "$id"
#   wait_state "$id" Succeeded 30
#   is "$(sluice show "$id" -o json | json_get state)" Succeeded "job succeeded"
#   done_testing
#
# TAP: plan-less. ok NAME CMD [ARGS...] passes when CMD exits 0; is GOT WANT
# NAME; like GOT ERE NAME; pass/fail NAME; diag TEXT; skip_all REASON;
# done_testing prints "1..N" and exits 1 if anything failed. ok/is/like
# return 1 on failure (so `ok ... || bail ...` works): do not use set -e.
#
# Daemon: start_sluiced [ARGS...] starts "$SLUICE_BIN/sluiced --dev" on a free
# port of 127.0.0.1 with a temp data dir and FAKE_GPUS (default 4xH100;
# "none" = no --fake-gpus) and exports SLUICE_SERVER, SLUICE_TOKEN,
# SLUICED_PID, SLUICE_TMP, SLUICE_JOBS, SLUICED_PORT. Jobs run as an
# unprivileged account (sluiced --job-user, nobody by default), so what a
# job writes goes in $SLUICE_JOBS (mode 1777; $SLUICE_TMP is 0711 and its
# data dir 0700). stop_sluiced (SIGTERM, 10 s, then
# SIGKILL; returns the daemon's exit status), kill9_sluiced,
# restart_sluiced (same data dir and port). On EXIT the daemon is stopped
# and the temp dir removed (kept when SLUICE_KEEP_TMP=1).
#
# done_testing also stops a daemon that is still running and records, as
# one more test, that it exited cleanly on SIGTERM: under ASan that is where
# leaks and late memory errors show.

# --- where things are -----------------------------------------------------

_sl_find_repo() {
    d=$(cd "$(dirname "$0")" && pwd)
    while [ "$d" != / ]; do
        if [ -f "$d/tests/lib.sh" ] && [ -f "$d/Makefile" ]; then
            printf '%s\n' "$d"
            return 0
        fi
        d=$(dirname "$d")
    done
    pwd
}

SLUICE_REPO=${SLUICE_REPO:-$(_sl_find_repo)}
SLUICE_BIN=${SLUICE_BIN:-$SLUICE_REPO/build/asan}
export SLUICE_REPO SLUICE_BIN

# Leak checks on clean exit; a kill -9 never reaches them.
if [ -z "${ASAN_OPTIONS:-}" ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    export ASAN_OPTIONS
fi
if [ -z "${UBSAN_OPTIONS:-}" ]; then
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    export UBSAN_OPTIONS
fi

# --- TAP ------------------------------------------------------------------

_tap_n=0
_tap_failed=0
_tap_done=0

_tap_result() { # STATUS NAME
    _tap_n=$((_tap_n + 1))
    if [ "$1" -eq 0 ]; then
        printf 'ok %d - %s\n' "$_tap_n" "$2"
    else
        _tap_failed=$((_tap_failed + 1))
        printf 'not ok %d - %s\n' "$_tap_n" "$2"
    fi
    return "$1"
}

# diag LINE...: each argument on its own "# " line, on stderr (where prove
# shows it, as Test::More's diagnostics).
diag() { printf '%s\n' "$@" | sed 's/^/# /' >&2; }
pass() { _tap_result 0 "$1"; }
fail() { _tap_result 1 "$1" || true; return 1; }

# ok NAME CMD [ARGS...]: runs CMD; passes when it exits 0.
ok() {
    _ok_name=$1
    shift
    if "$@"; then
        _tap_result 0 "$_ok_name"
    else
        _ok_rc=$?
        _tap_result 1 "$_ok_name" || true
        diag "  command failed (exit $_ok_rc): $*"
        return 1
    fi
}

# is GOT WANT NAME: string equality.
is() {
    if [ "$1" = "$2" ]; then
        _tap_result 0 "$3"
    else
        _tap_result 1 "$3" || true
        diag "       got: '$1'" "  expected: '$2'"
        return 1
    fi
}

# like GOT ERE NAME: GOT matches the extended regular expression.
like() {
    if printf '%s\n' "$1" | grep -Eq -- "$2"; then
        _tap_result 0 "$3"
    else
        _tap_result 1 "$3" || true
        diag "                  '$1'" "    doesn't match '$2'"
        return 1
    fi
}

skip_all() {
    printf '1..0 # SKIP %s\n' "$1"
    _tap_done=1
    exit 0
}

# bail NAME [DETAIL]: record a failure and finish now (the test cannot go on).
bail() {
    fail "$1" || true
    [ $# -lt 2 ] || diag "$2"
    done_testing
}

done_testing() {
    if [ -n "${SLUICED_PID:-}" ]; then
        if stop_sluiced; then
            pass "sluiced exits cleanly on SIGTERM"
        else
            _dt_rc=$?
            fail "sluiced exits cleanly on SIGTERM (exit $_dt_rc)" || true
            sluiced_log_tail 40
        fi
    fi
    printf '1..%d\n' "$_tap_n"
    _tap_done=1
    if [ "$_tap_failed" -gt 0 ]; then
        diag "Looks like you failed $_tap_failed test(s) of $_tap_n."
        exit 1
    fi
    exit 0
}

# --- daemon ---------------------------------------------------------------

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

sluice() { "$SLUICE_BIN/sluice" "$@"; }

# The shared folder with the public traces and the placement checker
# (../shared next to the repository): $SLUICE_SHARED, else the first of
# $SLUICE_REPO/../shared and /work/shared that has traces/. Prints nothing
# and returns 1 when there is none.
shared_dir() {
    for _sd in "${SLUICE_SHARED:-}" "$SLUICE_REPO/../shared" /work/shared; do
        if [ -n "$_sd" ] && [ -d "$_sd/traces" ]; then
            (cd "$_sd" && pwd)
            return 0
        fi
    done
    return 1
}

# A temp dir removed on exit (unless SLUICE_KEEP_TMP=1); start_sluiced
# makes its own.
make_tmp() {
    SLUICE_TMP=${SLUICE_TMP:-$(mktemp -d "${TMPDIR:-/tmp}/sluice-test.XXXXXX")}
    SLUICE_JOBS=$SLUICE_TMP/jobs
    export SLUICE_TMP SLUICE_JOBS
    chmod 0711 "$SLUICE_TMP"
    mkdir -p "$SLUICE_JOBS"
    chmod 1777 "$SLUICE_JOBS"
}

# Print a value from JSON on stdin: json_get KEY[.KEY...] (list index ok).
# null prints "null", objects/arrays/booleans print as JSON. When the input
# is not JSON or the path is absent, prints nothing and returns 1.
json_get() {
    python3 -c 'import json, sys
try:
    v = json.load(sys.stdin)
    for k in sys.argv[1].split("."):
        v = v[int(k)] if isinstance(v, list) else v[k]
except (ValueError, KeyError, IndexError, TypeError) as e:
    sys.stderr.write("json_get %s: %s: %s\n" % (sys.argv[1], type(e).__name__, e))
    sys.exit(1)
print("null" if v is None else (json.dumps(v) if isinstance(v, (dict, list, bool)) else v))' "$1"
}

# Alive and not a zombie (a child we have not waited for still answers kill -0).
_sl_alive() {
    [ -n "$1" ] || return 1
    [ -r "/proc/$1/stat" ] || return 1
    _st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$_st" ] && [ "$_st" != Z ] && [ "$_st" != X ]
}

sluiced_log_tail() {
    [ -f "${SLUICE_TMP:-}/sluiced.log" ] || return 0
    diag "--- last ${1:-20} lines of $SLUICE_TMP/sluiced.log ---"
    tail -n "${1:-20}" "$SLUICE_TMP/sluiced.log" | sed 's/^/# /'
}

# _sl_launch: start the daemon on $SLUICED_PORT with $SLUICED_ARGS and wait
# for /healthz. Returns 0 when healthy, 1 when it died, 2 on timeout.
_sl_launch() {
    # shellcheck disable=SC2086
    "$SLUICE_BIN/sluiced" --dev --listen "127.0.0.1:$SLUICED_PORT" \
        --data-dir "$SLUICE_TMP/data" $SLUICED_ARGS \
        >>"$SLUICE_TMP/sluiced.log" 2>&1 &
    SLUICED_PID=$!
    export SLUICED_PID
    SLUICE_SERVER="http://127.0.0.1:$SLUICED_PORT"
    export SLUICE_SERVER
    _i=0
    while [ "$_i" -lt 300 ]; do
        if curl -sf -o /dev/null --max-time 2 "$SLUICE_SERVER/healthz"; then
            if [ -f "$SLUICE_TMP/data/admin.token" ]; then
                SLUICE_TOKEN=$(tr -d ' \r\n' <"$SLUICE_TMP/data/admin.token")
                export SLUICE_TOKEN
            fi
            return 0
        fi
        if ! _sl_alive "$SLUICED_PID"; then
            wait "$SLUICED_PID" 2>/dev/null
            diag "sluiced exited with status $? before it was healthy"
            SLUICED_PID=
            return 1
        fi
        sleep 0.1
        _i=$((_i + 1))
    done
    diag "sluiced not healthy after 30 s"
    return 2
}

# start_sluiced [EXTRA ARGS...]: see the header. Returns non-zero (after a
# diag with the log tail) when the daemon does not become healthy.
start_sluiced() {
    if [ ! -x "$SLUICE_BIN/sluiced" ]; then
        diag "no executable $SLUICE_BIN/sluiced (build it: make SAN=1 all)"
        return 1
    fi
    make_tmp
    _gpus=${FAKE_GPUS:-4xH100}
    SLUICED_ARGS=""
    [ "$_gpus" = none ] || SLUICED_ARGS="--fake-gpus $_gpus"
    _own_store=0
    for _a in "$@"; do
        SLUICED_ARGS="$SLUICED_ARGS $_a"
        case $_a in --store | --store=*) _own_store=1 ;; esac
    done
    # The PostgreSQL pass of make test (tests/pg/suite.sh): a database of
    # this test's own on the suite's server, dropped at exit.
    if [ "${SLUICE_TEST_STORE:-}" = postgres ] && [ "$_own_store" -eq 0 ]; then
        if [ -z "${SLUICE_PG_DB:-}" ]; then
            SLUICE_PG_DB="t_$$_$(date +%s%N | tail -c 7)"
            psql "$SLUICE_TEST_PG_URL" -X -q -w -v ON_ERROR_STOP=1 \
                -c "CREATE DATABASE $SLUICE_PG_DB" >/dev/null || {
                diag "cannot create a database on $SLUICE_TEST_PG_URL"
                return 1
            }
            diag "store: PostgreSQL database $SLUICE_PG_DB"
        fi
        SLUICED_ARGS="$SLUICED_ARGS --store ${SLUICE_TEST_PG_URL%/*}/$SLUICE_PG_DB"
    fi
    _try=0
    while :; do
        _try=$((_try + 1))
        SLUICED_PORT=$(free_port)
        export SLUICED_PORT
        _sl_launch && return 0
        _rc=$?
        # Another process may have taken the free port between our probe
        # and the daemon's bind: try a new port, a few times.
        if [ "$_rc" -eq 1 ] && [ "$_try" -lt 3 ] &&
            grep -qi 'in use' "$SLUICE_TMP/sluiced.log" 2>/dev/null; then
            continue
        fi
        sluiced_log_tail 30
        [ "$_rc" -ne 2 ] || kill9_sluiced
        return 1
    done
}

# restart_sluiced: same data dir, port and arguments (after a stop or kill).
restart_sluiced() {
    if _sl_alive "${SLUICED_PID:-}"; then
        stop_sluiced || true
    fi
    _sl_launch && return 0
    _rc=$?
    sluiced_log_tail 30
    [ "$_rc" -ne 2 ] || kill9_sluiced
    return 1
}

# stop_sluiced: SIGTERM, wait up to 10 s, then SIGKILL. Returns the daemon's
# exit status (137 when it had to be killed).
stop_sluiced() {
    [ -n "${SLUICED_PID:-}" ] || return 0
    _pid=$SLUICED_PID
    SLUICED_PID=
    kill -TERM "$_pid" 2>/dev/null || true
    _i=0
    while _sl_alive "$_pid" && [ "$_i" -lt 100 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    if _sl_alive "$_pid"; then
        diag "sluiced did not exit within 10 s of SIGTERM; killing it"
        kill -KILL "$_pid" 2>/dev/null || true
        wait "$_pid" 2>/dev/null
        return 137
    fi
    wait "$_pid" 2>/dev/null
}

kill9_sluiced() {
    [ -n "${SLUICED_PID:-}" ] || return 0
    kill -KILL "$SLUICED_PID" 2>/dev/null || true
    wait "$SLUICED_PID" 2>/dev/null || true
    SLUICED_PID=
}

# wait_state JOB STATE [TIMEOUT_S]: poll `sluice show JOB -o json` until the
# job's state is STATE (or one of "A|B|C"). Returns 1 on timeout (default 30 s).
wait_state() {
    _ws_deadline=$(($(date +%s) + ${3:-30}))
    _ws_state=""
    while :; do
        _ws_state=$(sluice show "$1" -o json 2>/dev/null | json_get state 2>/dev/null) || _ws_state=""
        case "|$2|" in
        *"|$_ws_state|"*) [ -n "$_ws_state" ] && return 0 ;;
        esac
        if [ "$(date +%s)" -ge "$_ws_deadline" ]; then
            diag "job $1: state '$_ws_state' after ${3:-30} s, wanted $2" \
                "$(sluice show "$1" 2>&1 | sed -n '1,25p')"
            return 1
        fi
        sleep 0.2
    done
}

# other_team_member USER: apply team "other" (queue "other") with USER a
# member of it, and print a token of USER's: someone who sees none of
# team default's jobs.
other_team_member() {
    printf '%s\n' 'apiVersion: sluice/v1' 'kind: Team' 'metadata: {name: other}' '---' \
        'apiVersion: sluice/v1' 'kind: Queue' 'metadata: {name: other}' 'spec: {team: other}' \
        '---' 'apiVersion: sluice/v1' 'kind: User' "metadata: {name: $1}" \
        'spec: {team: other, role: member}' | sluice apply -f - >/dev/null &&
        sluice token create --user "$1"
}

_sl_cleanup() {
    _cl_rc=$?
    if [ -n "${SLUICED_PID:-}" ]; then
        kill -TERM "$SLUICED_PID" 2>/dev/null || true
        _i=0
        while _sl_alive "$SLUICED_PID" && [ "$_i" -lt 50 ]; do
            sleep 0.1
            _i=$((_i + 1))
        done
        kill -KILL "$SLUICED_PID" 2>/dev/null || true
    fi
    if [ -n "${SLUICE_PG_DB:-}" ]; then
        psql "$SLUICE_TEST_PG_URL" -X -q -w \
            -c "DROP DATABASE IF EXISTS $SLUICE_PG_DB WITH (FORCE)" >/dev/null 2>&1 || true
    fi
    if [ -n "${SLUICE_TMP:-}" ] && [ -d "$SLUICE_TMP" ]; then
        if [ "${SLUICE_KEEP_TMP:-0}" = 1 ]; then
            echo "# kept $SLUICE_TMP"
        else
            rm -rf "$SLUICE_TMP"
        fi
    fi
    # A test that dies without done_testing must not look like a pass.
    if [ "$_tap_done" -eq 0 ] && [ "$_cl_rc" -eq 0 ]; then
        printf '1..%d\n' "$_tap_n"
        [ "$_tap_failed" -eq 0 ] || _cl_rc=1
    fi
    exit "$_cl_rc"
}
trap _sl_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
