#!/bin/sh
# slurm_handover.sh - where a GPU's turnover goes on the Slurm lab: N
# trivial 1-GPU jobs from 8 clients, Slurm alone (sbatch) and then through
# Sluice (--executor slurm; SLUICED_ARGS, e.g. "--slurm-stage on"), on one
# lab whose slurmctld logs at debug2; then bench/slurm_handover.py over its
# log. A figure-printing tool, not a test; about a minute for N=600.
#
#   BENCH_HANDOVER_N (600), BENCH_HANDOVER_PLAIN (1: run Slurm alone
#   first; 0: Sluice alone), SLUICED_ARGS ("--slurm-stage on").
# Run as root with slurm-wlm and munge installed (scripts/deps.sh), after
# `make` (it uses build/).
set -u
cd "$(dirname "$0")/.." || exit 1
N=${BENCH_HANDOVER_N:-600}
PLAIN=${BENCH_HANDOVER_PLAIN:-1}
ARGS=${SLUICED_ARGS:---slurm-stage on}
BIN=$PWD/build
. tests/slurm/lab.sh
WORK=$(mktemp -d /tmp/sluice-handover.XXXXXX) || exit 1
chmod 0755 "$WORK"
LAB=$WORK/lab PID=
cleanup() {
    [ -z "$PID" ] || { kill "$PID"; wait "$PID"; }
    lab_stop "$LAB" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
LAB_SLUICE=$BIN/sluice LAB_SLURM_CONF_EXTRA=SlurmctldDebug=debug2
export LAB_SLUICE LAB_SLURM_CONF_EXTRA
lab_start "$LAB" >"$WORK/lab.log" 2>&1 || { cat "$WORK/lab.log"; exit 1; }
if [ "$PLAIN" = 1 ]; then
    python3 bench/slurm_e2e.py plain "$N" 8 || exit 1
    lab_wait_idle 60 >/dev/null
fi
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DATA=$WORK/data
# shellcheck disable=SC2086
"$BIN/sluiced" --dev --listen "127.0.0.1:$PORT" --data-dir "$DATA" --executor slurm \
    --slurm-partition main --slurm-output-dir "$LAB_SHARED" --slurm-poll 1s \
    --slurm-jobcomp "$LAB_JOBCOMP" $ARGS >"$WORK/sluiced.log" 2>&1 &
PID=$!
until curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz"; do sleep 0.1; done
SLUICE_TOKEN=$(cat "$DATA/admin.token")
export SLUICE_TOKEN
python3 bench/slurm_e2e.py sluice "$N" 8 "http://127.0.0.1:$PORT" || exit 1
python3 bench/slurm_handover.py "$LAB" "$DATA"
