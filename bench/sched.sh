#!/usr/bin/env bash
# bench/sched.sh - the scheduler's targets, measured on this machine: each
# target beside the figure measured and the ratio between them. Prints
# figures; never fails on speed. Fails (exit 1) only when something is
# wrong: a binary is missing, sluiced does not start, a benchmark crashes.
#
#   bench/sched.sh [cycle|memory|placements|sim|all ...]   (default: all)
#
#   cycle       build/bench/sched_bench cycle (fgd and bestfit, each with
#               the default job mix and with no gang bound to one rack) and
#               sched_bench preempt: a full scheduling pass over 10,000
#               pending jobs on 10,000 nodes; target <= 100 ms.
#   memory      (a) sched_bench memory: 1,000,000 pending jobs in the library;
#               (b) sluiced (simulated executor, 8 fake H100, --sync normal)
#               given BENCH_MEMORY_JOBS jobs of 8 GPUs on its cordoned node
#               (so they never run), through the API with wrk; target < 2 GB for 1,000,000.
#   placements  sluiced --executor simulated --fake-nodes (BENCH_PLACE_NODES
#               x 8 H100) under wrk POSTing 1-GPU jobs that "run" for
#               BENCH_SIM_DURATION: jobs going Pending -> Running per second,
#               from the store's job_events; --sync normal and full, fewer
#               connections, and the local executor running `true`;
#               target >= 10,000/s.
#   sim         `sluice sim` fill experiments pinned to one core (taskset
#               -c 0): every policy on openb default, fgd on gpuspec33 and
#               multigpu50; target <= 10 s each.
#
# Settings (environment): SLUICE_BIN (build), SCHED_BENCH
# (build/bench/sched_bench), BENCH_CYCLE_REPS (20),
# BENCH_MEMORY_JOBS (1000000), BENCH_MEMORY_CONNECTIONS (64),
# BENCH_PLACE_NODES (4000), BENCH_PLACE_SECONDS (20),
# BENCH_PLACE_CONNECTIONS (256), BENCH_SIM_DURATION (1s),
# BENCH_LOCAL_SECONDS (10), BENCH_TRACES (../shared/traces/alibaba-gpu-v2023).
# Raw output lands in bench/out/sched-*.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

BIN=${SLUICE_BIN:-$REPO/build}
SCHED_BENCH=${SCHED_BENCH:-$REPO/build/bench/sched_bench}
OUT=$REPO/bench/out
REPS=${BENCH_CYCLE_REPS:-20}
MEM_JOBS=${BENCH_MEMORY_JOBS:-1000000}
MEM_CONNS=${BENCH_MEMORY_CONNECTIONS:-64}
PLACE_NODES=${BENCH_PLACE_NODES:-4000}
PLACE_SECONDS=${BENCH_PLACE_SECONDS:-20}
PLACE_CONNS=${BENCH_PLACE_CONNECTIONS:-256}
SIM_DURATION=${BENCH_SIM_DURATION:-1s}
LOCAL_SECONDS=${BENCH_LOCAL_SECONDS:-10}
TRACES=${BENCH_TRACES:-$REPO/../shared/traces/alibaba-gpu-v2023}
CLK_TCK=$(getconf CLK_TCK)
mkdir -p "$OUT"

say() { printf '%s\n' "$*"; }
now() { date +%s.%N; }
# calc EXPR: floating-point arithmetic through awk ("?" when it fails).
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

stop_pid() { # PID [TIMEOUT_S]: SIGTERM, wait, SIGKILL.
    local pid=$1 i=0 max=$(( ${2:-10} * 10 ))
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    while alive "$pid" && [ $i -lt $max ]; do sleep 0.1; i=$((i + 1)); done
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-sched-bench.XXXXXX")
SLUICED_PID=""
WRK_PID=""
CHILD_PID=""

# child CMD...: run CMD in the background and wait for it, so that a signal
# to this script runs its trap at once (a foreground child would delay it
# to its end) and cleanup stops the child. Returns CMD's exit status.
child() {
    local rc=0
    "$@" &
    CHILD_PID=$!
    wait "$CHILD_PID" || rc=$?
    CHILD_PID=""
    return "$rc"
}

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ -z "$WRK_PID" ] || stop_pid "$WRK_PID" 5 || true
    if [ -n "$CHILD_PID" ]; then
        # its own children first (wrk and sluice sim run under time(1))
        pkill -TERM -P "$CHILD_PID" 2>/dev/null || true
        stop_pid "$CHILD_PID" 5 || true
    fi
    [ -z "$SLUICED_PID" ] || stop_pid "$SLUICED_PID" 20 || true
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Results for the summary: one line each, "target|measured|ratio|verdict".
SUMMARY=()
verdict() { # VALUE TARGET le|ge: "met" or "NOT met"
    awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN {
        if (v == "" || v == "?") { print "?"; exit }
        ok = (op == "le") ? (v <= t) : (v >= t)
        print ok ? "met" : "NOT met" }'
}
record() { # LABEL MEASURED-TEXT VALUE TARGET|- le|ge [NOTE]; TARGET "-": a figure only
    local ratio="-" v="-"
    if [ "$4" != "-" ]; then
        ratio=$(awk -v v="$3" -v t="$4" 'BEGIN { if (v == "" || v == "?" || t == 0) print "?"; else printf "%.3gx", v / t }')
        v=$(verdict "$3" "$4" "$5")
    fi
    SUMMARY+=("$(printf '%-48s %-40s %-7s %-8s %s' "$1" "$2" "$ratio" "$v" "${6:-}")")
}

# field FILE SELECTOR KEY: KEY=value from the first "SCHED_BENCH" or
# "SLUICE_BENCH" line of FILE that contains SELECTOR.
field() {
    grep -E '^(SCHED|SLUICE)_BENCH ' "$1" | grep -F -- "$2" | head -1 | tr ' ' '\n' |
        sed -n "s/^$3=//p" | head -1
}

need() { # FILE MAKE-TARGET: an executable we must have
    [ -x "$1" ] || { say "bench: no $1; run 'make $2' first" >&2; exit 1; }
}

# Per-thread CPU of PID, in clock ticks: "comm ticks" lines.
# Waited-for children (the local executor's task shims) count as "children".
thread_ticks() {
    local t
    for t in /proc/"$1"/task/*; do
        printf '%s %s\n' "$(cat "$t/comm" 2>/dev/null)" \
            "$(sed 's/^.*) //' "$t/stat" 2>/dev/null | awk '{ print $12 + $13 }')"
    done
    printf 'children %s\n' "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $14 + $15 }')"
}
# cpu_report BEFORE AFTER SECONDS: "engine 0.86, http 0.30, ..." cores used.
cpu_report() {
    awk -v tck="$CLK_TCK" -v s="$3" '
        FNR == NR { a[$1] += $2; next }
        { b[$1] += $2 }
        END { for (k in b) { c = (b[k] - a[k]) / tck / s; tot += c
                             out = out sprintf("%s%s %.2f", out == "" ? "" : ", ", k, c) }
              printf "%s (total %.2f cores)", out, tot }' "$1" "$2"
}
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $6 + $7 + $8, $5 }' /proc/stat; }

# start_sluiced NAME ARGS...: sluiced on a free port with its own data dir;
# sets SLUICED_PID, URL, DATA and exports SLUICE_TOKEN.
start_sluiced() {
    local name=$1 port
    shift
    port=$(free_port)
    DATA=$TMP/$name
    URL=http://127.0.0.1:$port
    "$BIN/sluiced" --listen "127.0.0.1:$port" --data-dir "$DATA" "$@" \
        >"$OUT/sched-$name-sluiced.log" 2>&1 &
    SLUICED_PID=$!
    for _ in $(seq 1 300); do
        curl -sf -o /dev/null --max-time 1 "$URL/healthz" && break
        alive "$SLUICED_PID" ||
            { say "bench: sluiced exited; see $OUT/sched-$name-sluiced.log" >&2; exit 1; }
        sleep 0.1
    done
    curl -sf -o /dev/null "$URL/healthz" ||
        { say "bench: sluiced not healthy after 30 s" >&2; exit 1; }
    SLUICE_TOKEN=$(tr -d ' \r\n' <"$DATA/admin.token")
    export SLUICE_TOKEN
}

stop_sluiced() {
    stop_pid "$SLUICED_PID" 60 || true
    SLUICED_PID=""
}

# status_kb PID FIELD: VmRSS / VmHWM of a process in kB.
status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# --- 1. cycle ----------------------------------------------------------------

part_cycle() {
    need "$SCHED_BENCH" build/bench/sched_bench
    say "== cycle: a full pass over 10,000 pending jobs on 10,000 nodes (target <= 100 ms)"
    local p f
    for p in fgd bestfit; do
        f=$OUT/sched-cycle-$p.txt
        say "-- sched_bench cycle --policy $p --reps $REPS"
        child "$SCHED_BENCH" cycle --policy "$p" --reps "$REPS" >"$f" 2>&1 ||
            { cat "$f" >&2; say "bench: sched_bench cycle failed" >&2; exit 1; }
        grep -v '^SCHED_BENCH' "$f" | sed 's/^/   /'
        record "1. pass, cold (indexes built), $p" \
            "$(fmt "$(field "$f" phase=cold cpu_ms)" '%.1f') ms CPU, $(field "$f" phase=cold starts) started" \
            "$(field "$f" phase=cold cpu_ms)" 100 le
        record "1. pass, full (10k pending), $p" \
            "$(fmt "$(field "$f" phase=full cpu_ms)" '%.1f') ms CPU, $(field "$f" phase=full starts) started" \
            "$(field "$f" phase=full cpu_ms)" 100 le
        record "1. pass, steady median (x$REPS), $p" \
            "$(fmt "$(field "$f" steady-summary cpu_median_ms)" '%.1f') ms CPU, $(field "$f" steady-summary starts_per_pass) started/pass" \
            "$(field "$f" steady-summary cpu_median_ms)" 100 le
        record "1. pass, steady max (x$REPS), $p" \
            "$(fmt "$(field "$f" steady-summary cpu_max_ms)" '%.1f') ms CPU" \
            "$(field "$f" steady-summary cpu_max_ms)" 100 le
    done
    for p in fgd bestfit; do
        f=$OUT/sched-cycle-$p-rackfree.txt
        say "-- sched_bench cycle --policy $p --reps $REPS --domain-gangs 0 (no gang bound to one rack)"
        child "$SCHED_BENCH" cycle --policy "$p" --reps "$REPS" --domain-gangs 0 >"$f" 2>&1 ||
            { cat "$f" >&2; say "bench: sched_bench cycle failed" >&2; exit 1; }
        grep -v '^SCHED_BENCH' "$f" | sed 's/^/   /'
        record "1. pass, cold, $p, no rack gangs" \
            "$(fmt "$(field "$f" phase=cold cpu_ms)" '%.1f') ms CPU" "$(field "$f" phase=cold cpu_ms)" 100 le
        record "1. pass, full, $p, no rack gangs" \
            "$(fmt "$(field "$f" phase=full cpu_ms)" '%.1f') ms CPU" "$(field "$f" phase=full cpu_ms)" 100 le
        record "1. pass, steady median, $p, no rack gangs" \
            "$(fmt "$(field "$f" steady-summary cpu_median_ms)" '%.1f') ms CPU (max $(fmt "$(field "$f" steady-summary cpu_max_ms)" '%.0f'))" \
            "$(field "$f" steady-summary cpu_median_ms)" 100 le
    done
    f=$OUT/sched-preempt.txt
    say "-- sched_bench preempt (one pass that must preempt for a 4 x 8-GPU gang)"
    child "$SCHED_BENCH" preempt >"$f" 2>&1 ||
        { cat "$f" >&2; say "bench: sched_bench preempt failed" >&2; exit 1; }
    grep -v '^SCHED_BENCH' "$f" | sed 's/^/   /'
    local c
    for c in gang-any gang-domain gang-any-none gang-domain-none; do
        record "1. preempting pass, $c" \
            "$(fmt "$(field "$f" "phase=$c " cpu_ms)" '%.1f') ms CPU, $(field "$f" "phase=$c " preempts) victims" \
            "$(field "$f" "phase=$c " cpu_ms)" 100 le
    done
}

# --- 2. memory ---------------------------------------------------------------

part_memory() {
    need "$SCHED_BENCH" build/bench/sched_bench
    need "$BIN/sluiced" all
    say "== memory: 1,000,000 pending jobs (target < 2 GB)"
    local f dg
    for dg in 25 0; do
        f=$OUT/sched-memory-dg$dg.txt
        say "-- sched_bench memory --jobs 1000000 --domain-gangs $dg"
        child "$SCHED_BENCH" memory --jobs 1000000 --domain-gangs "$dg" >"$f" 2>&1 ||
            { cat "$f" >&2; say "bench: sched_bench memory failed" >&2; exit 1; }
        grep -v '^SCHED_BENCH' "$f" | sed 's/^/   /'
    done
    f=$OUT/sched-memory-dg25.txt
    local bpj
    bpj=$(field "$f" rss_before_kb= bytes_per_job)
    record "2a. library: RSS for 1M pending" \
        "$(fmt "$(calc "$bpj * 1000000 / 1048576")" '%.0f') MiB ($(fmt "$bpj" '%.0f') B/job)" \
        "$(calc "$bpj * 1000000 / 1e9")" 2 le
    record "2a. library: add 1M jobs" \
        "$(fmt "$(field "$f" rss_before_kb= add_cpu_ms)" '%.0f') ms CPU" "" - le
    record "2a. library: pass over 1M (fills gaps)" \
        "$(fmt "$(field "$f" rss_before_kb= pass_cpu_ms)" '%.0f') ms CPU, $(field "$f" rss_before_kb= starts) started" \
        "" - le
    record "2a. library: pass over 1M, cluster full" \
        "$(fmt "$(field "$f" rss_before_kb= pass2_cpu_ms)" '%.0f') ms CPU, $(field "$f" rss_before_kb= pass2_starts) started" \
        "" - le
    f=$OUT/sched-memory-dg0.txt
    record "2a. ditto, no rack gangs: pass, full" \
        "$(fmt "$(field "$f" rss_before_kb= pass2_cpu_ms)" '%.0f') ms CPU" "" - le

    # (b) the daemon
    say "-- sluiced --executor simulated --fake-gpus 8xH100 --sync normal, its node cordoned: $MEM_JOBS jobs of 8 GPUs (never run)"
    if ! command -v wrk >/dev/null 2>&1; then
        say "   wrk not installed: skipped (scripts/deps.sh installs it)"
        record "2b. sluiced: RSS for 1M pending" "skipped (no wrk)" "" 2 le
        return 0
    fi
    start_sluiced memory --executor simulated --fake-gpus 8xH100 --sync normal
    sh bench/cordon_all.sh "$URL" "$SLUICE_TOKEN" ||
        { say "bench: cannot cordon the node" >&2; exit 1; }
    local rss0 rss1 hwm t0 t1 done_dir n_db span rate store_b
    rss0=$(status_kb "$SLUICED_PID" VmRSS)
    done_dir=$TMP/memory-done
    mkdir -p "$done_dir"
    thread_ticks "$SLUICED_PID" >"$TMP/mem-cpu0"
    t0=$(now)
    SLUICE_BENCH_RUN=m SLUICE_BENCH_GPUS=8 SLUICE_BENCH_MAX=$MEM_JOBS SLUICE_BENCH_THREADS=2 \
        SLUICE_BENCH_DONE_DIR=$done_dir \
        wrk -t2 -c"$MEM_CONNS" -d3600s -s bench/jobs.lua "$URL/v1/jobs" \
        >"$OUT/sched-memory-wrk.txt" 2>&1 &
    WRK_PID=$!
    # wrk runs for its -d: stop it (SIGINT: it prints its figures) once both
    # threads have their share, or after 15 minutes
    for _ in $(seq 1 9000); do
        [ "$(find "$done_dir" -name 'done.*' | wc -l)" -ge 2 ] && break
        alive "$WRK_PID" || break
        sleep 0.1
    done
    t1=$(now)
    kill -INT "$WRK_PID" 2>/dev/null || true
    wait "$WRK_PID" 2>/dev/null || true
    WRK_PID=""
    thread_ticks "$SLUICED_PID" >"$TMP/mem-cpu1"
    sleep 1
    rss1=$(status_kb "$SLUICED_PID" VmRSS)
    hwm=$(status_kb "$SLUICED_PID" VmHWM)
    n_db=$(sqlite3 "$DATA/sluice.db" 'select count(*) from jobs where state = 0' 2>/dev/null || echo "?")
    span=$(sqlite3 "$DATA/sluice.db" "select (max(at) - min(at)) / 1000.0 from job_events where type = 'state' and to_state = 'Pending'" 2>/dev/null || echo "?")
    rate=$(calc "$n_db / $span")
    store_b=$(du -cb "$DATA"/sluice.db* | tail -1 | cut -f1)
    say "   $(sed -n 's/^SLUICE_BENCH //p' "$OUT/sched-memory-wrk.txt")"
    say "   $n_db jobs Pending in the store, submitted over $(fmt "$span" '%.1f') s: $(fmt "$rate" '%.0f')/s (wrk ran $(fmt "$(calc "$t1 - $t0")" '%.1f') s)"
    say "   sluiced CPU over the run: $(cpu_report "$TMP/mem-cpu0" "$TMP/mem-cpu1" "$(calc "$t1 - $t0")")"
    say "   sluiced VmRSS $(fmt "$(calc "$rss0 / 1024")" '%.1f') MiB before, $(fmt "$(calc "$rss1 / 1024")" '%.1f') MiB after; VmHWM $(fmt "$(calc "$hwm / 1024")" '%.1f') MiB"
    local per_job rss_1m extra=""
    per_job=$(calc "($rss1 - $rss0) * 1024 / $n_db")
    rss_1m=$(calc "($rss0 + ($rss1 - $rss0) * 1000000 / $n_db) * 1024")
    [ "$n_db" = 1000000 ] || [ "$n_db" -ge 1000000 ] 2>/dev/null ||
        extra=" (extrapolated linearly from $n_db)"
    say "   $(fmt "$per_job" '%.0f') bytes per pending job; store on disk $(fmt "$(calc "$store_b / 1048576")" '%.1f') MiB ($(fmt "$(calc "$store_b / $n_db")" '%.0f') B/job)$extra"
    stop_sluiced
    record "2b. sluiced: VmRSS with 1M pending" \
        "$(fmt "$(calc "$rss_1m / 1048576")" '%.0f') MiB ($(fmt "$per_job" '%.0f') B/job)$extra" \
        "$(calc "$rss_1m / 1e9")" 2 le
    record "2b. sluiced: VmHWM (at $n_db jobs)" "$(fmt "$(calc "$hwm / 1024")" '%.0f') MiB" "$(calc "$hwm * 1024 / 1e9")" 2 le
    record "2b. sluiced: submissions/s (16-GPU jobs)" "$(fmt "$rate" '%.0f')/s" "" - le
    record "2b. sluiced: store on disk" \
        "$(fmt "$(calc "$store_b / 1048576")" '%.0f') MiB ($(fmt "$(calc "$store_b / $n_db")" '%.0f') B/job)" "" - le
}

# --- 3. placements -----------------------------------------------------------

# place_run NAME SECONDS CONNS SLUICED-ARGS...: one wrk run of 1-GPU jobs;
# sets P_SUB (submissions/s), P_PLACE (placements/s, steady window),
# P_PEAK (best second), P_PENDING (Pending when wrk stopped), P_CPU.
place_run() {
    local name=$1 secs=$2 conns=$3 f db t0 t1 m0 m1
    shift 3
    start_sluiced "$name" "$@"
    f=$OUT/sched-$name-wrk.txt
    thread_ticks "$SLUICED_PID" >"$TMP/$name-cpu0"
    m0=$(machine_ticks)
    t0=$(now)
    SLUICE_BENCH_RUN=$name SLUICE_BENCH_GPUS=1 SLUICE_BENCH_SIM_DURATION=${P_SIM:-} \
        child /usr/bin/time -f '%U %S' -o "$TMP/$name-wrk-time" \
        wrk -t2 -c"$conns" -d"${secs}s" --latency -s bench/jobs.lua "$URL/v1/jobs" \
        >"$f" 2>&1 || true
    t1=$(now)
    m1=$(machine_ticks)
    thread_ticks "$SLUICED_PID" >"$TMP/$name-cpu1"
    db=$DATA/sluice.db
    P_PENDING=$(sqlite3 "$db" 'select count(*) from jobs where state = 0' 2>/dev/null || echo "?")
    sleep 2
    stop_sluiced
    local created dur
    created=$(field "$f" SLUICE_BENCH created)
    dur=$(field "$f" SLUICE_BENCH duration_us)
    P_SUB=$(calc "${created:-0} / (${dur:-1} / 1000000)")
    # placements: Pending -> Running per second, leaving out the first and
    # last 2 s (ramp-up, and the tail after wrk stopped)
    read -r P_PLACE P_PEAK P_PLACED <<<"$(sqlite3 -separator ' ' "$db" "
        with r as (select at from job_events where type = 'state' and to_state = 'Running'),
             b as (select min(at) + 2000 as lo, max(at) - 2000 as hi from r),
             s as (select at / 1000 as sec, count(*) as n from r group by sec)
        select (select count(*) from r, b where at >= lo and at < hi) * 1000.0 /
                   max((select hi - lo from b), 1),
               (select max(n) from s), (select count(*) from r)" 2>/dev/null || echo "? ? ?")"
    P_CPU="sluiced $(cpu_report "$TMP/$name-cpu0" "$TMP/$name-cpu1" "$(calc "$t1 - $t0")")"
    P_CPU="$P_CPU; wrk $(awk -v s="$(calc "$t1 - $t0")" '{ printf "%.2f", ($1 + $2) / s }' "$TMP/$name-wrk-time" 2>/dev/null || echo "?") cores"
    P_IDLE=$(awk -v a="$m0" -v b="$m1" 'BEGIN { split(a, x, " "); split(b, y, " ");
        busy = y[1] - x[1]; idle = y[2] - x[2]; printf "%.0f", 100 * idle / (busy + idle) }')
    say "   $(sed -n 's/^SLUICE_BENCH //p' "$f" | cut -d' ' -f1-8)"
    say "   submissions $(fmt "$P_SUB" '%.0f')/s; placements $(fmt "$P_PLACE" '%.0f')/s (steady window), best second $P_PEAK, $P_PLACED placed in all; $P_PENDING Pending when wrk stopped"
    say "   CPU: $P_CPU; machine idle $P_IDLE %"
}

part_placements() {
    need "$BIN/sluiced" all
    say "== placements: jobs going Pending -> Running per second in sluiced (target >= 10,000/s)"
    if ! command -v wrk >/dev/null 2>&1 || ! command -v sqlite3 >/dev/null 2>&1; then
        say "   wrk or sqlite3 not installed: skipped (scripts/deps.sh installs them)"
        record "3. placements/s" "skipped (no wrk or sqlite3)" "" 10000 ge
        return 0
    fi
    local nodes=$TMP/nodes.csv i
    {
        say "sn,cpu_milli,memory_mib,gpu,model"
        for i in $(seq 0 $((PLACE_NODES - 1))); do printf 'node-%05d,96000,1048576,8,H100\n' "$i"; done
    } >"$nodes"
    local cap
    cap=$(calc "$PLACE_NODES * 8")
    say "   $PLACE_NODES fake nodes x 8 H100 = $cap GPUs; each job 1 GPU for $SIM_DURATION (capacity bound: $(fmt "$(calc "$cap / ($(sim_seconds "$SIM_DURATION"))")" '%.0f')/s)"

    P_SIM=$SIM_DURATION
    say "-- simulated executor, --sync normal, wrk -t2 -c$PLACE_CONNS -d${PLACE_SECONDS}s"
    place_run place-normal "$PLACE_SECONDS" "$PLACE_CONNS" \
        --executor simulated --fake-nodes "$nodes" --sync normal
    record "3. placements/s, simulated, sync normal" \
        "$(fmt "$P_PLACE" '%.0f')/s (subm. $(fmt "$P_SUB" '%.0f')/s, $P_PENDING left)" "$P_PLACE" 10000 ge
    say "-- simulated executor, --sync full, wrk -t2 -c$PLACE_CONNS -d${PLACE_SECONDS}s"
    place_run place-full "$PLACE_SECONDS" "$PLACE_CONNS" \
        --executor simulated --fake-nodes "$nodes" --sync full
    record "3. placements/s, simulated, sync full" \
        "$(fmt "$P_PLACE" '%.0f')/s (subm. $(fmt "$P_SUB" '%.0f')/s, $P_PENDING left)" "$P_PLACE" 10000 ge
    say "-- simulated executor, --sync normal, wrk -t2 -c64 -d${PLACE_SECONDS}s (fewer connections)"
    place_run place-c64 "$PLACE_SECONDS" 64 \
        --executor simulated --fake-nodes "$nodes" --sync normal
    record "3. placements/s, simulated, normal, 64 conns" \
        "$(fmt "$P_PLACE" '%.0f')/s (subm. $(fmt "$P_SUB" '%.0f')/s)" "$P_PLACE" 10000 ge
    P_SIM=""
    say "-- local executor (jobs run 'true'), --sync normal, wrk -t2 -c64 -d${LOCAL_SECONDS}s"
    place_run place-local "$LOCAL_SECONDS" 64 --fake-nodes "$nodes" --sync normal
    record "3. placements/s, local executor ('true')" \
        "$(fmt "$P_PLACE" '%.0f')/s (subm. $(fmt "$P_SUB" '%.0f')/s)" "$P_PLACE" 10000 ge \
        "(process launching, for comparison)"
}

# sim_seconds DURATION: "1s" / "500ms" / "2" in seconds
sim_seconds() {
    case $1 in
    *ms) calc "${1%ms} / 1000" ;;
    *s) printf '%s' "${1%s}" ;;
    *m) calc "${1%m} * 60" ;;
    *) printf '%s' "$1" ;;
    esac
}

# --- 4. sim ------------------------------------------------------------------

part_sim() {
    need "$BIN/sluice" all
    say "== sim: fill experiments, one core (taskset -c 0), target <= 10 s each"
    local nodes=$TRACES/openb_node_list_gpu_node.csv
    if [ ! -f "$nodes" ]; then
        say "   no traces at $TRACES: skipped (BENCH_TRACES)"
        record "4. sluice sim" "skipped (no traces)" "" 10 le
        return 0
    fi
    local pin=()
    command -v taskset >/dev/null 2>&1 && pin=(taskset -c 0)
    local runs=() r w p out wall cpu
    for p in fgd bestfit packing clustering dotprod random spread; do runs+=("default:$p"); done
    runs+=("gpuspec33:fgd" "multigpu50:fgd")
    for r in "${runs[@]}"; do
        w=${r%%:*}
        p=${r#*:}
        out=$OUT/sched-sim-$w-$p.json
        child "${pin[@]}" /usr/bin/time -f '%U %S %e' -o "$TMP/time" "$BIN/sluice" sim \
            --nodes "$nodes" --workload "$TRACES/openb_pod_list_$w.csv" \
            --policy "$p" --seed 42 --no-progress >"$out" 2>"$OUT/sched-sim-$w-$p.err" ||
            { cat "$OUT/sched-sim-$w-$p.err" >&2; say "bench: sluice sim failed" >&2; exit 1; }
        wall=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["wall_seconds"])' "$out")
        cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$TMP/time")
        say "   $(printf '%-11s %-10s' "$w" "$p") wall_seconds $(fmt "$wall" '%.3f')  CPU $cpu s  alloc $(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("%.4f, %d/%d placed" % (d["alloc_ratio_final"], d["placed"], d["pods"]))' "$out")"
        record "4. sim $w $p" "$(fmt "$wall" '%.3f') s wall, $cpu s CPU" "$wall" 10 le
    done
}

# --- main --------------------------------------------------------------------

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(all)
for p in "${parts[@]}"; do
    case $p in
    cycle | memory | placements | sim | all) ;;
    *) say "usage: bench/sched.sh [cycle|memory|placements|sim|all ...]" >&2; exit 2 ;;
    esac
done
want() { local p; for p in "${parts[@]}"; do [ "$p" = "$1" ] || [ "$p" = all ] && return 0; done; return 1; }

say "== sched bench ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -r)); parts: ${parts[*]}"
! want cycle || part_cycle
! want memory || part_memory
! want placements || part_placements
! want sim || part_sim

{
    say ""
    say "== summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs; ratios matter, absolute figures are noisy)"
    say "$(printf '%-48s %-40s %-7s %-8s' "target" "measured" "ratio" "verdict")"
    say "   1: a full pass <= 100 ms; 2: 1M pending < 2 GB; 3: >= 10,000 placements/s; 4: <= 10 s per experiment"
    for line in "${SUMMARY[@]}"; do say "$line"; done
} | tee "$OUT/sched-summary.txt"
exit 0
