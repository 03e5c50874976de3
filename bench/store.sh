#!/usr/bin/env bash
# bench/store.sh - the two stores side by side in one run (issue 18's
# figures): durable submissions/s and placements/s with sluiced on SQLite
# and on PostgreSQL (a server of the bench's own, tests/pg/pg.sh, stopped
# after). Prints figures and ratios; never fails on speed. Fails (exit 1)
# only when something is wrong (a daemon does not start).
#
#   submissions  sluiced --sync full, one cordoned fake T4 (bench/cordon_all.sh:
#                jobs stay Pending), wrk -t2 -c64 -d BENCH_DURATION POSTing
#                1-GPU jobs (bench/submit.lua): 201s per second, p50/p99.
#   placements   sluiced --sync full --executor simulated, BENCH_PLACE_NODES
#                fake nodes x 8 H100, wrk -t2 -c256 POSTing 1-GPU jobs that
#                "run" 1 s (bench/jobs.lua): jobs going Pending -> Running per
#                second in the steady window (the store's job events, first
#                and last 2 s left out).
#
# Both stores commit durably: SQLite fdatasyncs its WAL per group, and a
# PostgreSQL COMMIT returns after the server flushed it
# (synchronous_commit=on, fsync on). PostgreSQL runs on this same host, on
# a loopback port: the network is the kernel's.
#
# Settings: BENCH_DURATION (10s), BENCH_PLACE_SECONDS (15),
# BENCH_PLACE_NODES (1000), SLUICE_BIN (build). Raw output: bench/out/store-*.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
BIN=${SLUICE_BIN:-$REPO/build}
DURATION=${BENCH_DURATION:-10s}
PLACE_SECONDS=${BENCH_PLACE_SECONDS:-15}
PLACE_NODES=${BENCH_PLACE_NODES:-1000}
OUT=$REPO/bench/out
mkdir -p "$OUT"

say() { printf '%s\n' "$*"; }
calc() { awk "BEGIN { printf \"%s\", ($1) }" 2>/dev/null || echo "?"; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "" || v == "?") print "?"; else printf f, v }'; }
free_port() {
    python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
field() { sed -n 's/^SLUICE_BENCH //p' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }

for t in wrk psql curl; do
    command -v $t >/dev/null 2>&1 || { say "bench/store.sh: $t is not installed (scripts/deps.sh)" >&2; exit 1; }
done
[ -x "$BIN/sluiced" ] || { say "bench/store.sh: no $BIN/sluiced; run make first" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-store-bench.XXXXXX")
chmod 0711 "$TMP"
PID=""
stop_sluiced() {
    [ -n "$PID" ] || return 0
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=""
}
cleanup() {
    local rc=$?
    stop_sluiced
    sh tests/pg/pg.sh stop "$TMP/pg" >/dev/null 2>&1 || true
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT

PGURL=$(sh tests/pg/pg.sh start "$TMP/pg") || { say "bench/store.sh: PostgreSQL did not start" >&2; exit 1; }
export PGPASSFILE=$TMP/pg/pgpass
n_db=0
# store_arg STORE: the --store of a fresh store of that kind (n_db is
# counted by the caller: this runs in a subshell)
store_arg() {
    if [ "$1" = postgres ]; then
        psql "$PGURL" -X -q -w -c "CREATE DATABASE b$n_db" >/dev/null
        printf '%s' "--store ${PGURL%/*}/b$n_db"
    fi
}
# Rows of the store of the last daemon (SQL the two dialects share).
store_sql() { # STORE SQL
    if [ "$1" = postgres ]; then
        psql "${PGURL%/*}/b$n_db" -X -q -w -A -t -c "$2"
    else
        sqlite3 "$TMP/data-$n_db/sluice.db" "$2"
    fi
}

start() { # STORE ARGS...: start sluiced on a fresh store of that kind
    local store=$1
    shift
    local sarg
    n_db=$((n_db + 1))
    sarg=$(store_arg "$store")
    PORT=$(free_port)
    URL=http://127.0.0.1:$PORT
    # shellcheck disable=SC2086
    "$BIN/sluiced" --dev --listen "127.0.0.1:$PORT" --data-dir "$TMP/data-$n_db" \
        --sync full $sarg "$@" >"$OUT/store-$store-$n_db.log" 2>&1 &
    PID=$!
    for _ in $(seq 1 300); do
        curl -sf -o /dev/null --max-time 1 "$URL/healthz" && break
        kill -0 "$PID" 2>/dev/null || { say "bench: sluiced exited; see $OUT/store-$store-$n_db.log" >&2; exit 1; }
        sleep 0.1
    done
    SLUICE_TOKEN=$(tr -d ' \r\n' <"$TMP/data-$n_db/admin.token")
    export SLUICE_TOKEN
}

declare -A SUB P50 P99 PLACE
for store in sqlite postgres; do
    say "== $store"
    start "$store" --fake-gpus 1xT4
    sh bench/cordon_all.sh "$URL" "$SLUICE_TOKEN"
    SLUICE_BENCH_RUN=w wrk -t2 -c64 -d2s -s bench/submit.lua "$URL/v1/jobs" >/dev/null 2>&1 || true
    f=$OUT/store-$store-submit.txt
    SLUICE_BENCH_RUN=m wrk -t2 -c64 -d"$DURATION" --latency -s bench/submit.lua \
        "$URL/v1/jobs" >"$f" 2>&1 || true
    SUB[$store]=$(calc "$(field "$f" created) / ($(field "$f" duration_us) / 1000000)")
    P50[$store]=$(calc "$(field "$f" p50_us) / 1000")
    P99[$store]=$(calc "$(field "$f" p99_us) / 1000")
    say "   durable submissions $(fmt "${SUB[$store]}" '%.0f')/s (p50 $(fmt "${P50[$store]}" '%.1f') ms, p99 $(fmt "${P99[$store]}" '%.1f') ms, non-201 $(field "$f" non201))"
    stop_sluiced

    nodes=$TMP/nodes.csv
    { echo "sn,cpu_milli,memory_mib,gpu,model"
      for i in $(seq 0 $((PLACE_NODES - 1))); do printf 'node-%05d,96000,1048576,8,H100\n' "$i"; done
    } >"$nodes"
    start "$store" --executor simulated --fake-nodes "$nodes"
    f=$OUT/store-$store-place.txt
    SLUICE_BENCH_RUN=p SLUICE_BENCH_GPUS=1 SLUICE_BENCH_SIM_DURATION=1s \
        wrk -t2 -c256 -d"${PLACE_SECONDS}s" -s bench/jobs.lua "$URL/v1/jobs" >"$f" 2>&1 || true
    sleep 2
    store_sql "$store" "SELECT at FROM job_events WHERE type = 'state' AND to_state = 'Running'" \
        >"$TMP/running.txt"
    PLACE[$store]=$(sort -n "$TMP/running.txt" | awk '{ a[NR] = $1 } END {
        if (NR < 2) { print "?"; exit } lo = a[1] + 2000; hi = a[NR] - 2000; n = 0
        for (i = 1; i <= NR; i++) if (a[i] >= lo && a[i] < hi) n++
        if (hi <= lo) print "?"; else printf "%.0f", n * 1000 / (hi - lo) }')
    say "   placements $(fmt "${PLACE[$store]}" '%.0f')/s ($(wc -l <"$TMP/running.txt") placed; $PLACE_NODES nodes x 8 H100, jobs of 1 GPU for 1 s)"
    stop_sluiced
done

say ""
say "== the two stores, one run ($(nproc) CPUs; PostgreSQL $(psql "$PGURL" -X -A -t -w -c 'SHOW server_version' | cut -d' ' -f1) on this host)"
printf '%-28s %14s %14s %8s\n' "" "SQLite" "PostgreSQL" "PG/SQLite"
printf '%-28s %14s %14s %8s\n' "durable submissions/s" "$(fmt "${SUB[sqlite]}" '%.0f')" \
    "$(fmt "${SUB[postgres]}" '%.0f')" "$(fmt "$(calc "${SUB[postgres]} / ${SUB[sqlite]}")" '%.2f')"
printf '%-28s %14s %14s\n' "  submit latency p50 / p99" "$(fmt "${P50[sqlite]}" '%.1f')/$(fmt "${P99[sqlite]}" '%.1f') ms" \
    "$(fmt "${P50[postgres]}" '%.1f')/$(fmt "${P99[postgres]}" '%.1f') ms"
printf '%-28s %14s %14s %8s\n' "placements/s" "$(fmt "${PLACE[sqlite]}" '%.0f')" \
    "$(fmt "${PLACE[postgres]}" '%.0f')" "$(fmt "$(calc "${PLACE[postgres]} / ${PLACE[sqlite]}")" '%.2f')"
