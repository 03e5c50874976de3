#!/bin/sh
# slurm_replay.sh - a window of a real GPU trace replayed, time-compressed,
# on the three-node Slurm lab of tests/slurm/lab.sh (3 nodes x 8 GPUs = 24),
# twice, each from an idle cluster:
#
#   A. Slurm alone: every job `sbatch`ed at its compressed submit time,
#      untyped --gres=gpu:N, 2 CPUs per GPU, --time, --account=<its team>;
#      Slurm's own scheduler decides (sched/backfill, bf_interval=1, and
#      priority/multifactor with age, job size and fair-share weights; the
#      job-size factor counts CPUs, so the 2 CPUs per GPU make it the GPUs).
#      There is no slurmdbd in the lab, so Slurm's fair-share factor has no
#      usage history and no account tree: the --account is a label, and
#      every job's fair-share factor is the same. Fair share on the Slurm
#      side is therefore not measured here, and not imitated. The side
#      prints the range of each factor sprio gave the waiting jobs (every
#      10 s); seen here (Slurm 22.05.8): fair share 0 and age 0 throughout,
#      job size 188..333, so Slurm's queue was ordered by job size (larger
#      first, Slurm's default) and then submit order.
#   B. Sluice: sluiced with the Slurm executor on the same lab, one team per
#      group of trace users, each with a queue of nominal 6 GPUs in one
#      cohort (a team may borrow whatever the others leave idle), DRF fair
#      share, FGD placement, backfill, preemption off (the Slurm side has
#      none); the same jobs (same GPUs, CPUs, time limit) POSTed to its API
#      at the same compressed times, submitted by the admin for each team;
#      Sluice decides each placement and hands it to Slurm pinned.
#
# The trace: SenseTime Helios (SC'21; ../shared/traces/sensetime-helios,
# helios_data_training.csv, the 15,000 last jobs of a Slurm GPU cluster):
# per job a user, a GPU count, the gap since the previous submission and
# the run time. Only jobs of 1 to 8 GPUs are kept (one node each; larger
# ones, gangs over nodes, are left out, as are CPU-only jobs): the first
# BENCH_REPLAY_JOBS (200) of them at or after row u_id BENCH_REPLAY_FROM
# (6644: about 6.6 hours of the trace, 21 users; jobs of 1, 2, 4 and 8 GPUs,
# 37 of 8). The trace has no VC column (users are renumbered): user U
# belongs to team U mod 4 on both sides (25, 84, 61 and 30 jobs).
#
# Time compression: submit times keep the trace's gaps, scaled so that the
# window's arrivals span BENCH_REPLAY_SPAN (120) seconds; each job runs
# `sleep D`, D = its run time / C clipped to [1 s, BENCH_REPLAY_MAXDUR
# (25 s)], C chosen so that the window's GPU-seconds are BENCH_REPLAY_LOAD
# (1.3) x 24 GPUs x the span: the lab is oversubscribed by 30% while jobs
# arrive. The default window was chosen so that both factors are about
# 200x (the replay is the trace sped up, on 24 GPUs), with 56 jobs raised
# to 1 s and 30 cut to 25 s; the plan line says each factor and how many
# jobs were clipped. Both sides give each job the same time limit: its D
# plus 10 s, rounded up to whole minutes (Slurm's unit; the estimate its
# backfill and Sluice's both use).
#
# Measured, for each side, from times the jobs write themselves
# (date +%s%N at the job's first and last command, into $LAB_SHARED):
#   - wait: submit (when sbatch or the POST was called) to the job's first
#     command; mean, p95, max, and apart for 8-GPU jobs;
#   - makespan: first submit to the last job's end;
#   - GPU allocation: GPU-seconds held by running jobs (first to last
#     command) / (24 GPUs x makespan), and the same per tenth of makespan;
#   - Jain's fairness index across teams over their mean bounded slowdown:
#     a job's bounded slowdown is max(1, (end - submit) / max(run, tau)),
#     tau = BENCH_REPLAY_TAU (2 s), x_t the mean over team t's jobs, and
#     J = (sum x_t)^2 / (n * sum x_t^2) over the n teams with jobs: 1 when
#     every team's jobs are slowed down alike, 1/n when one team bears it all.
# The summary prints both sides and the ratios Slurm alone / Sluice.
#
# Run as root from the repository root with the binaries built (make):
#   bench/slurm_replay.sh
#   BENCH_REPLAY_JOBS=40 BENCH_REPLAY_SPAN=20 BENCH_REPLAY_MAXDUR=10 bench/slurm_replay.sh
# About 8 minutes with the defaults (each side ~3.5 minutes). Other knobs:
# BENCH_REPLAY_TRACE (the CSV), BENCH_SLURM_POLL (sluiced's --slurm-poll,
# 1s). Prints figures, never fails on speed; exit 1 when something is wrong
# (a job refused, never run or failed), 0 with a SKIP line when this host
# cannot run the Slurm lab or the trace is not here.
set -u

cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
BIN=${SLUICE_BIN:-$REPO/build}
# the traces are in ../shared beside the repository (tests/lib.sh's
# shared_dir): $SLUICE_SHARED, else ../shared, else /work/shared
SHARED=${SLUICE_SHARED:-}
for d in "$SHARED" "$REPO/../shared" /work/shared; do
    if [ -n "$d" ] && [ -d "$d/traces" ]; then
        SHARED=$d
        break
    fi
done
TRACE=${BENCH_REPLAY_TRACE:-$SHARED/traces/sensetime-helios/helios_data_training.csv}
FROM=${BENCH_REPLAY_FROM:-6644}
JOBS=${BENCH_REPLAY_JOBS:-200}
SPAN=${BENCH_REPLAY_SPAN:-120}
LOAD=${BENCH_REPLAY_LOAD:-1.3}
MAXDUR=${BENCH_REPLAY_MAXDUR:-25}
POLL=${BENCH_SLURM_POLL:-1s}

say() { printf '%s\n' "$*"; }

[ -x "$BIN/sluiced" ] && [ -x "$BIN/sluice" ] || { say "slurm_replay: build first (make)"; exit 1; }
[ -r "$TRACE" ] || { say "SKIP slurm_replay: no trace at $TRACE (set BENCH_REPLAY_TRACE)"; exit 0; }
. "$REPO/tests/slurm/lab.sh"
WORK=$(mktemp -d /tmp/sluice-replay.XXXXXX) || exit 1
chmod 0755 "$WORK"
LAB=$WORK/lab
PID=
cleanup() {
    [ -z "$PID" ] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }
    lab_stop "$LAB" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

py() { python3 "$REPO/bench/slurm_replay.py" "$@"; }

say "== slurm_replay: $JOBS jobs of $TRACE from u_id $FROM, arrivals over $SPAN s, offered load $LOAD x 24 GPUs"
py plan "$TRACE" "$FROM" "$JOBS" "$SPAN" "$LOAD" "$MAXDUR" "$WORK/plan.json" ||
    { say "slurm_replay: no plan"; exit 1; }

# Slurm's multifactor priority as a site would set it; the age factor
# saturates after 5 minutes (the replay lasts minutes, not days), and
# priorities are recomputed every minute (Slurm's shortest period).
# shellcheck disable=SC2034 # read by lab_start
LAB_PRIORITY=priority/multifactor
# shellcheck disable=SC2034
LAB_SLURM_CONF_EXTRA="PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
PriorityMaxAge=5
PriorityCalcPeriod=1"
LAB_SLUICE=$BIN/sluice
export LAB_SLUICE
lab_start "$LAB" >"$WORK/lab.log" 2>&1
case $? in
0) ;;
2) say "SKIP slurm_replay: $LAB_SKIP"; exit 0 ;;
*) cat "$WORK/lab.log"; say "slurm_replay: the lab did not start"; exit 1 ;;
esac
say "== lab at $LAB (3 nodes x 8 GPUs, cgroups $LAB_CGROUP), $(nproc) CPUs, Slurm $(sinfo -V | cut -d' ' -f2)"
say "   slurm.conf: $(grep -E '^(SchedulerType|SchedulerParameters|PriorityType|AccountingStorageType)=' "$SLURM_CONF" | tr '\n' ' ')"

say "-- A. Slurm alone (sbatch at the compressed submit times)"
py slurm "$WORK/plan.json" "$WORK/a.json" || { say "slurm_replay: the Slurm side failed"; exit 1; }
lab_wait_idle 60 >/dev/null || { say "slurm_replay: the lab is not idle after side A"; exit 1; }

say "-- B. Sluice (--executor slurm, --slurm-poll $POLL; POST /v1/jobs at the same times)"
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT=$(free_port)
DATA=$WORK/data
"$BIN/sluiced" --dev --listen "127.0.0.1:$PORT" --data-dir "$DATA" --executor slurm \
    --slurm-partition main --slurm-output-dir "$LAB_SHARED" --slurm-poll "$POLL" \
    >"$WORK/sluiced.log" 2>&1 &
PID=$!
SLUICE_SERVER=http://127.0.0.1:$PORT
export SLUICE_SERVER
i=0
until curl -sf -o /dev/null "$SLUICE_SERVER/healthz"; do
    i=$((i + 1))
    if [ $i -gt 300 ] || ! kill -0 "$PID" 2>/dev/null; then
        tail -20 "$WORK/sluiced.log"
        say "slurm_replay: sluiced did not start"
        exit 1
    fi
    sleep 0.1
done
SLUICE_TOKEN=$(cat "$DATA/admin.token")
export SLUICE_TOKEN
py teams "$WORK/plan.json" >"$WORK/teams.yaml" &&
    "$BIN/sluice" apply -f "$WORK/teams.yaml" >"$WORK/apply.out" 2>&1 ||
    { cat "$WORK/apply.out" 2>/dev/null; say "slurm_replay: the teams were not applied"; exit 1; }
py sluice "$WORK/plan.json" "$SLUICE_SERVER" "$WORK/b.json" ||
    { tail -20 "$WORK/sluiced.log"; say "slurm_replay: the Sluice side failed"; exit 1; }
kill "$PID" 2>/dev/null
wait "$PID" 2>/dev/null
PID=

say ""
say "== summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, Slurm $(sinfo -V | cut -d' ' -f2); one host, noisy)"
say "Helios u_id $FROM.., $JOBS jobs of 1-8 GPUs, offered load $LOAD x 24 GPUs over $SPAN s; teams = user mod 4"
say "Slurm alone: backfill + multifactor; no slurmdbd, so no fair-share usage (every account alike)"
say "Sluice: 4 teams x nominal 6 GPUs in one cohort, DRF fair share, FGD, backfill, no preemption"
py report "$WORK/plan.json" "$WORK/a.json" "$WORK/b.json" || { say "slurm_replay: no report"; exit 1; }
