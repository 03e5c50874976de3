#!/bin/sh
# slurm_e2e.sh - Sluice with the Slurm executor against Slurm alone, end to
# end, on the three-node Slurm lab of tests/slurm/lab.sh (24 GPU devices):
#
#   1. BENCH_E2E_N (2,000) trivial 1-GPU jobs submitted by 8 clients, from
#      the first submit to the last completion: `sbatch` (untyped
#      --gres=gpu:1, Slurm's own scheduler picks) against Sluice's API
#      (Sluice decides each placement, submits it pinned to Slurm), the
#      executor reading ends from the tail of Slurm's jobcomp file
#      (--slurm-jobcomp, as when sluiced runs on the controller's host):
#      once submitting through Slurm's C API (the default), once with
#      sbatch (--slurm-api tools), and once more with staged successors
#      (--slurm-stage on: the queue's next jobs wait in Slurm behind the
#      running ones, docs/decisions/0010); with Sluice, where
#      the time goes: the wait in Sluice's queue, from Sluice's decision to
#      the job's first command, and from then to the end Sluice saw;
#   2. decision-to-running of BENCH_LAT_N (100) jobs placed one at a time:
#      Sluice's decision (the job's started_at) to the job's first command;
#   3. the two ways of keeping Slurm from starting a job on its own choice,
#      BENCH_PIN_N (50) of each, one at a time: sbatch pinned (-w, typed
#      GRES) to the first command, against sbatch --hold then
#      scontrol release to the first command;
#   4. the cost of one poll of job states with BENCH_POLL_JOBS (10,000)
#      held jobs in Slurm: squeue -O of the partition with the fields the
#      executor reads every --slurm-poll, squeue's -o text for the
#      partition and for 24 job ids, squeue --json, scontrol for one job
#      and for all.
#
# Each job writes its own start time (date +%s%N), so start times are not
# limited by Slurm's whole seconds. Run as root from the repository root
# with the binaries built (make); prints figures, never fails on speed;
# exit 1 when something is wrong, 0 with a SKIP line when this host cannot
# run a Slurm lab. About 13 minutes, and 5 more per extra round of part 1
# (BENCH_E2E_ROUNDS=3: its four sides three times over, alternated, with
# each round's ratios and the medians in the summary).
set -u

cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
BIN=${SLUICE_BIN:-$REPO/build}
N=${BENCH_E2E_N:-2000}
CLIENTS=${BENCH_E2E_CLIENTS:-8}
LAT_N=${BENCH_LAT_N:-100}
PIN_N=${BENCH_PIN_N:-50}
POLL_JOBS=${BENCH_POLL_JOBS:-10000}
POLL=${BENCH_SLURM_POLL:-1s}
ROUNDS=${BENCH_E2E_ROUNDS:-1}

say() { printf '%s\n' "$*"; }

[ -x "$BIN/sluiced" ] && [ -x "$BIN/sluice" ] || { say "slurm_e2e: build first (make)"; exit 1; }
. "$REPO/tests/slurm/lab.sh"
WORK=$(mktemp -d /tmp/sluice-e2e.XXXXXX) || exit 1
chmod 0755 "$WORK"
LAB=$WORK/lab
PID=
OUT=$WORK/e2e.out
cleanup() {
    [ -z "$PID" ] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }
    lab_stop "$LAB" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Slurm's own default of 10,000 jobs is too few for the poll-cost part.
LAB_SLURM_CONF_EXTRA="MaxJobCount=$((POLL_JOBS + 5000))"
LAB_SLUICE=$BIN/sluice
export LAB_SLUICE
lab_start "$LAB" >"$WORK/lab.log" 2>&1
case $? in
0) ;;
2) say "SKIP slurm_e2e: $LAB_SKIP"; exit 0 ;;
*) cat "$WORK/lab.log"; say "slurm_e2e: the lab did not start"; exit 1 ;;
esac
say "== slurm_e2e: lab at $LAB (3 nodes x 8 GPUs, cgroups $LAB_CGROUP), $(nproc) CPUs"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_sluiced [ARG...]: a fresh data dir, the Slurm executor on the lab.
start_sluiced() {
    PORT=$(free_port)
    DATA=$WORK/data.$PORT
    "$BIN/sluiced" --dev --listen "127.0.0.1:$PORT" --data-dir "$DATA" --executor slurm \
        --slurm-partition main --slurm-output-dir "$LAB_SHARED" --slurm-poll "$POLL" \
        --log-level debug "$@" >"$WORK/sluiced.$PORT.log" 2>&1 &
    PID=$!
    E2E_SLUICED_LOG=$WORK/sluiced.$PORT.log
    export E2E_SLUICED_LOG
    URL=http://127.0.0.1:$PORT
    i=0
    until curl -sf -o /dev/null "$URL/healthz"; do
        i=$((i + 1))
        if [ $i -gt 300 ] || ! kill -0 "$PID" 2>/dev/null; then
            tail -20 "$WORK/sluiced.$PORT.log"
            say "slurm_e2e: sluiced did not start"
            exit 1
        fi
        sleep 0.1
    done
    SLUICE_TOKEN=$(cat "$DATA/admin.token")
    export SLUICE_TOKEN
}

stop_sluiced() {
    kill "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    PID=
}

py() { python3 "$REPO/bench/slurm_e2e.py" "$@" | tee -a "$OUT" || { say "slurm_e2e: $1 failed"; exit 1; }; }

# Part 1 in BENCH_E2E_ROUNDS rounds (default 1) of its four sides, each
# round's figures in a file of its own; the summary gives the first
# round's details and, with more rounds, each round's ratios and the
# medians (this host's load drifts between sides: more rounds say more).
ALL_OUT=$OUT
r=1
while [ "$r" -le "$ROUNDS" ]; do
    OUT=$WORK/e2e.round$r.out
    say "-- 1. round $r of $ROUNDS: $N jobs, $CLIENTS clients: sbatch"
    py plain "$N" "$CLIENTS"
    lab_wait_idle 60 >/dev/null
    say "-- 1. round $r: Sluice (--slurm-poll $POLL --slurm-jobcomp --slurm-api tools)"
    start_sluiced --slurm-jobcomp "$LAB_JOBCOMP" --slurm-api tools
    py sluice "$N" "$CLIENTS" "$URL" sluice_tools o
    stop_sluiced
    lab_wait_idle 60 >/dev/null
    say "-- 1. round $r: Sluice (--slurm-poll $POLL --slurm-jobcomp)"
    start_sluiced --slurm-jobcomp "$LAB_JOBCOMP"
    py sluice "$N" "$CLIENTS" "$URL"
    stop_sluiced
    lab_wait_idle 60 >/dev/null
    say "-- 1. round $r: Sluice (--slurm-poll $POLL --slurm-jobcomp --slurm-stage on)"
    start_sluiced --slurm-jobcomp "$LAB_JOBCOMP" --slurm-stage on
    py sluice "$N" "$CLIENTS" "$URL" sluice_stage t
    stop_sluiced
    lab_wait_idle 60 >/dev/null
    r=$((r + 1))
done
OUT=$ALL_OUT
cat "$WORK/e2e.round1.out" >>"$OUT"
start_sluiced --slurm-jobcomp "$LAB_JOBCOMP"
say "-- 2. decision to running, $LAT_N jobs one at a time"
py latency "$LAT_N" "$URL"
stop_sluiced
lab_wait_idle 60 >/dev/null
say "-- 3. pinned against held + release, $PIN_N each"
py pinhold "$PIN_N"
say "-- 4. one poll with $POLL_JOBS held jobs in Slurm"
seq "$POLL_JOBS" | xargs -P8 -n 200 sh -c 'for i; do sbatch --hold -p main --mem=1 -o /dev/null --wrap true >/dev/null || exit 255; done' sh ||
    { say "slurm_e2e: could not submit $POLL_JOBS held jobs"; exit 1; }
py pollcost
scancel -p main >/dev/null 2>&1

# ---- summary -------------------------------------------------------------
get() { sed -n "s/^E2E $1 \\(.* \\)*$2=\\([^ ]*\\).*/\\2/p" "$OUT" | head -1; }
getw() { sed -n "s/^E2E pollcost .*way=$1 .*median_ms=\\([^ ]*\\) bytes=\\([^ ]*\\).*/\\1 ms (\\2 bytes)/p" "$OUT"; }
say ""
say "== summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, Slurm $(sinfo -V | cut -d' ' -f2); one host, noisy)"
say "e2e $N x 1-GPU 'true', $CLIENTS clients   sbatch      : $(get plain total_s) s ($(get plain jobs_per_s) jobs/s; submitting took $(get plain submit_s) s)"
say "e2e $N x 1-GPU 'true', $CLIENTS clients   Sluice      : $(get sluice total_s) s ($(get sluice jobs_per_s) jobs/s; submitting took $(get sluice submit_s) s; $(get sluice succeeded) succeeded)"
say "e2e, the same, Sluice submitting with sbatch   : $(get sluice_tools total_s) s ($(get sluice_tools jobs_per_s) jobs/s; $(get sluice_tools succeeded) succeeded)"
say "e2e, the same, staged successors (--slurm-stage): $(get sluice_stage total_s) s ($(get sluice_stage jobs_per_s) jobs/s; $(get sluice_stage succeeded) succeeded)"
say "ratio Slurm alone / Sluice (time)                : $(python3 -c "print('%.2fx' % ($(get plain total_s) / $(get sluice total_s)))") (with sbatch: $(python3 -c "print('%.2fx' % ($(get plain total_s) / $(get sluice_tools total_s)))"); staged: $(python3 -c "print('%.2fx' % ($(get plain total_s) / $(get sluice_stage total_s)))"))"
if [ "$ROUNDS" -gt 1 ]; then
    python3 - "$WORK" "$ROUNDS" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
sides = ["plain", "sluice", "sluice_tools", "sluice_stage"]
t = {k: [] for k in sides}
for r in range(1, rounds + 1):
    for line in open("%s/e2e.round%d.out" % (work, r)):
        w = line.split()
        if len(w) > 1 and w[0] == "E2E" and w[1] in t:
            t[w[1]].append(float(dict(x.split("=", 1) for x in w[2:])["total_s"]))
for r in range(rounds):
    p = t["plain"][r]
    print("round %d: sbatch %.2f s, Sluice %.2f s (%.2fx), with sbatch %.2f s (%.2fx), "
          "staged %.2f s (%.2fx)" % (r + 1, p, t["sluice"][r], p / t["sluice"][r],
                                     t["sluice_tools"][r], p / t["sluice_tools"][r],
                                     t["sluice_stage"][r], p / t["sluice_stage"][r]))
m = {k: statistics.median(v) for k, v in t.items()}
print("median of %d rounds: sbatch %.2f s, Sluice %.2f s (%.2fx), with sbatch %.2f s "
      "(%.2fx), staged %.2f s (%.2fx)" % (rounds, m["plain"], m["sluice"],
                                          m["plain"] / m["sluice"], m["sluice_tools"],
                                          m["plain"] / m["sluice_tools"], m["sluice_stage"],
                                          m["plain"] / m["sluice_stage"]))
PY
fi
say "Sluice: mean wait in Sluice's queue              : $(get sluice wait_in_sluice_mean_ms) ms"
say "Sluice: decision to first command p50 / p99      : $(get sluice decision_to_running_p50_ms) / $(get sluice decision_to_running_p99_ms) ms (under load)"
say "Sluice: first command to end seen, mean          : $(get sluice running_to_end_seen_mean_ms) ms (run, Slurm's teardown, the poll)"
say "Sluice: decision to submit / submit / to running: $(get sluice decision_to_submit_p50_ms) / $(get sluice submit_p50_ms) / $(get sluice submit_to_running_p50_ms) ms (p50 of each; the commit, the C API's call, Slurm's start)"
say "the same with sbatch                             : $(get sluice_tools decision_to_submit_p50_ms) / $(get sluice_tools submit_p50_ms) / $(get sluice_tools submit_to_running_p50_ms) ms"
say "decision to running, one at a time p50 / p99    : $(get latency p50_ms) / $(get latency p99_ms) ms (max $(get latency max_ms))"
say "sbatch pinned to first command p50 / p99         : $(get pinhold pinned_p50_ms) / $(get pinhold pinned_p99_ms) ms"
say "held + scontrol release to first command p50/p99 : $(get pinhold held_release_p50_ms) / $(get pinhold held_release_p99_ms) ms"
for w in squeue_O_partition squeue_text_partition squeue_text_24_ids squeue_json scontrol_one_job scontrol_all_jobs; do
    printf 'one poll, %s held jobs: %-22s: %s\n' "$(get pollcost jobs)" "$w" "$(getw $w)"
done
