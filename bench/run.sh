#!/usr/bin/env bash
# bench/run.sh - `make bench`: durable job submissions per second, Sluice
# beside Slurm on this machine. Prints figures and ratios; never fails on
# speed. Fails (exit 1) only when something is wrong: the daemon does not
# start, or acknowledged jobs are missing from the store.
#
#   1. sluiced (build/sluiced, the optimised build) --dev, temp data dir, one
#      fake T4, cordoned (bench/cordon_all.sh); every job asks for its GPU,
#      so jobs stay Pending and the figure is submission alone (parse,
#      admit, commit, answer).
#   2. wrk -t2 -c64 -d10s --latency -s bench/submit.lua after a 2 s warm-up:
#      201s per second, p50/p99 latency, non-201 answers.
#   3. The store holds what was acknowledged: GET /v1/jobs (all pages) while
#      running, and sqlite3 count(*) after a clean stop.
#   4. The same work through the CLI: N x `sluice run`, 8 in parallel (one
#      process per submission, like sbatch).
#   5. When Slurm is installed and we are root: a one-node Slurm in a temp
#      dir (docs: shared notes, slurm-on-one-machine), N x
#      `sbatch --hold --wrap=true`, 8 in parallel; then torn down.
#
# Settings (environment): BENCH_DURATION (10s), BENCH_CONNECTIONS (64),
# BENCH_THREADS (2), BENCH_N (300, CLI and sbatch submissions),
# BENCH_PARALLEL (8), BENCH_NO_SLURM=1 (skip Slurm), SLUICE_BIN (build).
# Raw output lands in bench/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

DURATION=${BENCH_DURATION:-10s}
CONNS=${BENCH_CONNECTIONS:-64}
THREADS=${BENCH_THREADS:-2}
N=${BENCH_N:-300}
PAR=${BENCH_PARALLEL:-8}
BIN=${SLUICE_BIN:-$REPO/build}
OUT=$REPO/bench/out
mkdir -p "$OUT"

say() { printf '%s\n' "$*"; }
now() { date +%s.%N; }
# calc EXPR: floating-point arithmetic through awk.
# (The parentheses keep awk from reading "a > b" as a redirection.)
calc() { awk "BEGIN { printf \"%s\", ($1) }" 2>/dev/null || echo "?"; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "" || v == "?") print "?"; else printf f, v }'; }

alive() { # PID: running and not a zombie
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
    local st
    st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$st" ] && [ "$st" != Z ]
}

free_port() {
    python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench.XXXXXX")
SLUICED_PID=""
SLURM_DIR=""
SLURMCTLD_PID=""
SLURMD_PID=""
MUNGED_PID=""

stop_pid() { # PID [TIMEOUT_S]: SIGTERM, wait, SIGKILL. Returns exit status if child.
    local pid=$1 i=0 max=$(( ${2:-10} * 10 ))
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    while alive "$pid" && [ $i -lt $max ]; do sleep 0.1; i=$((i + 1)); done
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null
}

slurm_teardown() {
    [ -n "$SLURM_DIR" ] || return 0
    [ -z "$SLURMD_PID" ] || stop_pid "$SLURMD_PID" 10 || true
    [ -z "$SLURMCTLD_PID" ] || stop_pid "$SLURMCTLD_PID" 10 || true
    [ -z "$MUNGED_PID" ] || stop_pid "$MUNGED_PID" 5 || true
    SLURMD_PID="" SLURMCTLD_PID="" MUNGED_PID=""
    rm -rf "$SLURM_DIR"
    SLURM_DIR=""
}

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
    local rc=$?
    [ -z "$SLUICED_PID" ] || stop_pid "$SLUICED_PID" 10 || true
    slurm_teardown
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. sluiced ---------------------------------------------------------------

if [ ! -x "$BIN/sluiced" ]; then
    say "bench: no $BIN/sluiced; run 'make' first" >&2
    exit 1
fi
PORT=$(free_port)
DATA=$TMP/data
URL=http://127.0.0.1:$PORT
# BENCH_SYNC=full (default): every 201 is on disk (fdatasync of the WAL per
# group); normal: survives a crash of sluiced, not a power loss.
BENCH_SYNC=${BENCH_SYNC:-full}
"$BIN/sluiced" --dev --listen "127.0.0.1:$PORT" --data-dir "$DATA" \
    --fake-gpus 1xT4 --sync "$BENCH_SYNC" >"$OUT/sluiced.log" 2>&1 &
SLUICED_PID=$!
for _ in $(seq 1 300); do
    curl -sf -o /dev/null --max-time 1 "$URL/healthz" && break
    alive "$SLUICED_PID" || { say "bench: sluiced exited; see $OUT/sluiced.log" >&2; exit 1; }
    sleep 0.1
done
curl -sf -o /dev/null "$URL/healthz" || { say "bench: sluiced not healthy after 30 s" >&2; exit 1; }
SLUICE_TOKEN=$(tr -d ' \r\n' <"$DATA/admin.token")
SLUICE_SERVER=$URL
export SLUICE_TOKEN SLUICE_SERVER
sh bench/cordon_all.sh "$URL" "$SLUICE_TOKEN" || { say "bench: cannot cordon the node" >&2; exit 1; }

say "== sluice: sluiced $("$BIN/sluiced" --version 2>/dev/null | head -1 || true) on $URL, $(nproc) CPUs"

# --- 2. wrk -------------------------------------------------------------------

# bench_field FILE KEY: a value from the SLUICE_BENCH line of a wrk run.
bench_field() {
    sed -n 's/^SLUICE_BENCH //p' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

have_wrk=1
command -v wrk >/dev/null 2>&1 || have_wrk=0
created_total=0
if [ $have_wrk = 1 ]; then
    say "-- warm-up: wrk -t$THREADS -c$CONNS -d2s"
    SLUICE_BENCH_RUN=w wrk -t"$THREADS" -c"$CONNS" -d2s -s bench/submit.lua \
        "$URL/v1/jobs" >"$OUT/wrk-warmup.txt" 2>&1 || true
    say "-- wrk -t$THREADS -c$CONNS -d$DURATION --latency -s bench/submit.lua $URL/v1/jobs"
    SLUICE_BENCH_RUN=m wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency \
        -s bench/submit.lua "$URL/v1/jobs" 2>&1 | tee "$OUT/wrk.txt" || true
    for f in "$OUT/wrk-warmup.txt" "$OUT/wrk.txt"; do
        c=$(bench_field "$f" created)
        created_total=$((created_total + ${c:-0}))
    done
    W_REQ=$(bench_field "$OUT/wrk.txt" requests)
    W_CREATED=$(bench_field "$OUT/wrk.txt" created)
    W_NON201=$(bench_field "$OUT/wrk.txt" non201)
    W_CODES=$(bench_field "$OUT/wrk.txt" codes)
    W_DUR=$(bench_field "$OUT/wrk.txt" duration_us)
    W_P50=$(bench_field "$OUT/wrk.txt" p50_us)
    W_P99=$(bench_field "$OUT/wrk.txt" p99_us)
    W_SOCK=$(sed -n 's/^SLUICE_BENCH //p' "$OUT/wrk.txt" | tr ' ' '\n' |
             sed -n 's/^sock_[a-z]*=//p' | awk '{ s += $1 } END { print s + 0 }')
    HTTP_RATE=$(calc "${W_CREATED:-0} / (${W_DUR:-1} / 1000000)")
else
    say "-- wrk not installed: skipping the HTTP figure (scripts/deps.sh installs it)"
fi

# --- 3. the store holds what was acknowledged ---------------------------------

count_jobs() { # via the API, all pages
    python3 - "$URL" "$SLUICE_TOKEN" <<'PY'
import http.client, json, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); tok = sys.argv[2]
c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
after, n = 0, 0
while True:
    c.request("GET", "/v1/jobs?state=all&limit=10000&after=%d" % after,
              headers={"Authorization": "Bearer " + tok})
    r = c.getresponse(); body = r.read()
    if r.status != 200:
        print("error: HTTP %d %s" % (r.status, body[:200]), file=sys.stderr); sys.exit(1)
    page = json.loads(body); n += len(page["jobs"])
    if page["next"] is None:
        break
    after = page["next"]
print(n)
PY
}

API_COUNT=""
COUNT_OK=1
if [ $have_wrk = 1 ]; then
    t0=$(now)
    API_COUNT=$(count_jobs) || API_COUNT="?"
    t1=$(now)
    # Requests in flight when wrk stopped may have committed unanswered:
    # at most one per connection per run.
    if [ "$API_COUNT" = "?" ]; then
        COUNT_OK=0
        COUNT_MSG="could not list jobs"
    elif [ "$API_COUNT" -ge "$created_total" ] &&
         [ "$API_COUNT" -le $((created_total + 2 * CONNS)) ]; then
        COUNT_MSG="ok: $API_COUNT jobs listed, $created_total acknowledged (+$((API_COUNT - created_total)) in flight at wrk's stop)"
    else
        COUNT_OK=0
        COUNT_MSG="MISMATCH: $API_COUNT jobs listed, $created_total acknowledged"
    fi
    LIST_S=$(calc "$t1 - $t0")
    say "-- store check (GET /v1/jobs, all pages, $(fmt "$LIST_S" '%.2f') s): $COUNT_MSG"
fi

# --- 4. the CLI, one process per submission -----------------------------------

CLI_RATE=""
CLI_OK=0
if [ -x "$BIN/sluice" ]; then
    say "-- $N x 'sluice run --gpus 1 -- true', $PAR in parallel"
    t0=$(now)
    seq 1 "$N" | xargs -P"$PAR" -I{} "$BIN/sluice" run --name c{} --gpus 1 -- true \
        >"$OUT/cli.txt" 2>"$OUT/cli.err" || true
    t1=$(now)
    CLI_OK=$(grep -c '^[0-9][0-9]*$' "$OUT/cli.txt" || true)
    CLI_S=$(calc "$t1 - $t0")
    CLI_RATE=$(calc "$CLI_OK / ($t1 - $t0)")
    say "   $CLI_OK/$N acknowledged in $(fmt "$CLI_S" '%.2f') s"
    [ "$CLI_OK" -eq "$N" ] || { say "   errors:"; head -5 "$OUT/cli.err" | sed 's/^/   /'; }
fi

# Stop cleanly, then count in SQLite directly.
stop_pid "$SLUICED_PID" 30 && STOP_RC=0 || STOP_RC=$?
SLUICED_PID=""
say "-- sluiced stopped (exit status $STOP_RC)"
DB_COUNT=""
if command -v sqlite3 >/dev/null 2>&1; then
    for db in "$DATA/sluice.db" "$DATA"/*.db; do
        [ -f "$db" ] || continue
        DB_COUNT=$(sqlite3 "$db" 'select count(*) from jobs' 2>/dev/null) && break
        DB_COUNT=""
    done
fi
if [ -n "$DB_COUNT" ] && [ -n "$API_COUNT" ] && [ "$API_COUNT" != "?" ]; then
    if [ "$DB_COUNT" -lt $((API_COUNT + CLI_OK)) ]; then
        COUNT_OK=0
        say "-- sqlite3 count MISMATCH: $DB_COUNT rows, $API_COUNT listed + $CLI_OK by CLI"
    else
        say "-- sqlite3: $DB_COUNT jobs in the store after a clean stop"
    fi
fi

# --- 5. Slurm ----------------------------------------------------------------

SB_RATE=""
SB_MSG=""
slurm_bench() {
    if [ "${BENCH_NO_SLURM:-0}" = 1 ]; then SB_MSG="skipped (BENCH_NO_SLURM=1)"; return 0; fi
    for c in sbatch slurmctld slurmd sinfo munge munged; do
        command -v "$c" >/dev/null 2>&1 ||
            { SB_MSG="skipped ($c not installed; apt-get install slurm-wlm munge)"; return 0; }
    done
    if [ "$(id -u)" -ne 0 ]; then SB_MSG="skipped (Slurm daemons need root here)"; return 0; fi
    if pgrep -x slurmctld >/dev/null 2>&1 || pgrep -x slurmd >/dev/null 2>&1; then
        SB_MSG="skipped (a Slurm daemon already runs on this machine; not touching it)"
        return 0
    fi

    SLURM_DIR=$TMP/slurm
    mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/work"
    for i in 0 1 2 3 4 5 6 7; do : >"$SLURM_DIR/gpu$i"; done

    # munge: use the running one, else start our own (and stop it after).
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        mkdir -p /run/munge && chown munge:munge /run/munge
        rm -f /run/munge/munged.pid
        su -s /bin/sh munge -c munged >"$SLURM_DIR/munged.out" 2>&1 || true
        for _ in $(seq 1 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
        MUNGED_PID=$(cat /run/munge/munged.pid 2>/dev/null || true)
        if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
            SB_MSG="skipped (munged does not start: $(head -1 "$SLURM_DIR/munged.out"))"
            return 0
        fi
    fi

    # slurm.conf and gres.conf in the temp dir, found through SLURM_CONF
    # (gres.conf is read from slurm.conf's directory): /etc/slurm is never
    # written, so nothing of this machine's setup needs restoring.
    local host cpus mem_mb
    host=$(hostname -s)
    cpus=$(nproc)
    mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.8 }' /proc/meminfo)
    export SLURM_CONF=$SLURM_DIR/slurm.conf
    cat >"$SLURM_CONF" <<CONF
ClusterName=lab
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
PriorityType=priority/multifactor
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$SLURM_DIR/jobcomp.txt
MpiDefault=none
ReturnToService=2
MaxJobCount=200000
NodeName=$host CPUs=$cpus RealMemory=$mem_mb Gres=gpu:8 State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    cat >"$SLURM_DIR/gres.conf" <<CONF
AutoDetect=off
NodeName=$host Name=gpu File=$SLURM_DIR/gpu[0-7]
CONF

    slurmctld -c >"$SLURM_DIR/slurmctld.out" 2>&1 || true
    for _ in $(seq 1 50); do [ -s "$SLURM_DIR/slurmctld.pid" ] && break; sleep 0.1; done
    SLURMCTLD_PID=$(cat "$SLURM_DIR/slurmctld.pid" 2>/dev/null || true)
    slurmd >"$SLURM_DIR/slurmd.out" 2>&1 || true
    for _ in $(seq 1 50); do [ -s "$SLURM_DIR/slurmd.pid" ] && break; sleep 0.1; done
    SLURMD_PID=$(cat "$SLURM_DIR/slurmd.pid" 2>/dev/null || true)
    if [ -z "$SLURMCTLD_PID" ] || ! alive "$SLURMCTLD_PID"; then
        SB_MSG="skipped (slurmctld does not start; see $OUT/slurmctld.log)"
        cp "$SLURM_DIR/slurmctld.log" "$OUT/slurmctld.log" 2>/dev/null || true
        return 0
    fi
    local state=""
    for _ in $(seq 1 200); do
        state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
        [ "$state" = idle ] && break
        sleep 0.1
    done
    say "== slurm: $(sbatch --version 2>/dev/null), one node '$host' ($state), conf in $SLURM_DIR"

    say "-- $N x 'sbatch --hold --wrap=true', $PAR in parallel"
    local t0 t1
    t0=$(now)
    (cd "$SLURM_DIR/work" && seq 1 "$N" | xargs -P"$PAR" -I{} \
        sbatch --hold --wrap=true -J sb{} -o /dev/null) \
        >"$OUT/sbatch.txt" 2>"$OUT/sbatch.err" || true
    t1=$(now)
    SB_OK=$(grep -c '^Submitted batch job' "$OUT/sbatch.txt" || true)
    SB_S=$(calc "$t1 - $t0")
    SB_RATE=$(calc "$SB_OK / ($t1 - $t0)")
    SB_HELD=$(squeue -h -t PD -o %i 2>/dev/null | wc -l || true)
    say "   $SB_OK/$N submitted in $(fmt "$SB_S" '%.2f') s; squeue shows $SB_HELD pending"
    [ "$SB_OK" -eq "$N" ] || { say "   errors:"; head -5 "$OUT/sbatch.err" | sed 's/^/   /'; }
    cp "$SLURM_DIR/slurmctld.log" "$OUT/slurmctld.log" 2>/dev/null || true
    SB_MSG="$SB_OK/$N in $(fmt "$SB_S" '%.2f') s"
    slurm_teardown
    unset SLURM_CONF
}
slurm_bench

# --- summary -----------------------------------------------------------------

{
    say ""
    say "== summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs; ratios matter, absolute figures are noisy)"
    if [ $have_wrk = 1 ]; then
        say "sluice http  durable submissions/s : $(fmt "$HTTP_RATE" '%.0f')  (--sync $BENCH_SYNC; wrk -t$THREADS -c$CONNS -d$DURATION: ${W_CREATED:-?} x 201 of ${W_REQ:-?} answers)"
        say "sluice http  latency p50 / p99     : $(fmt "$(calc "${W_P50:-0} / 1000")" '%.2f') ms / $(fmt "$(calc "${W_P99:-0} / 1000")" '%.2f') ms"
        say "sluice http  non-201 answers       : ${W_NON201:-?}${W_CODES:+ ($W_CODES)}; socket errors: ${W_SOCK:-0}"
        say "sluice store check                 : $COUNT_MSG"
    fi
    [ -z "$DB_COUNT" ] || say "sluice sqlite3 count after stop    : $DB_COUNT"
    say "sluiced exit status on SIGTERM     : $STOP_RC"
    [ -z "$CLI_RATE" ] || say "sluice cli   submissions/s         : $(fmt "$CLI_RATE" '%.1f')  ($CLI_OK/$N x 'sluice run', $PAR parallel)"
    if [ -n "$SB_RATE" ]; then
        say "slurm sbatch submissions/s         : $(fmt "$SB_RATE" '%.1f')  ($SB_MSG, $PAR parallel)"
        if [ $have_wrk = 1 ] && [ "$(calc "$SB_RATE > 0")" = 1 ]; then
            say "ratio sluice http / sbatch         : $(fmt "$(calc "$HTTP_RATE / $SB_RATE")" '%.0f')x"
        fi
        if [ -n "$CLI_RATE" ] && [ "$(calc "$SB_RATE > 0")" = 1 ]; then
            say "ratio sluice cli / sbatch          : $(fmt "$(calc "$CLI_RATE / $SB_RATE")" '%.1f')x  (process per submission on both sides)"
        fi
    else
        say "slurm sbatch                       : $SB_MSG"
    fi
} | tee "$OUT/summary.txt"

if [ "$COUNT_OK" != 1 ]; then
    say "bench: acknowledged jobs are missing from the store" >&2
    exit 1
fi
exit 0
