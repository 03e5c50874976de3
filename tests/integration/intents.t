#!/bin/sh
# Acknowledged intents survive kill -9 of the daemon. A job whose cancel
# was answered 202, a job preempted and in its grace, and a job past its
# maxRuntime and in its grace all outlive a crash of sluiced (they trap
# the signal and keep running); the restarted daemon signals each again,
# kills it when the grace counted from the first signal is over, and
# ends it as the intent said: Cancelled; Preempted then Pending (with one
# preemption, not a second one decided after the restart); Failed for
# maxRuntime. None ends Succeeded.
. "$(dirname "$0")/../lib.sh"

FAKE_GPUS=2xH100
conf=$(mktemp /tmp/sluice-conf.XXXXXX)
printf 'cancelGrace: 4s\n' >"$conf"
start_sluiced --config "$conf" || bail "sluiced starts"
J=$SLUICE_JOBS

# events JOB TYPE: how many events of TYPE the job has.
events() {
    curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$1/events" |
        python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin)["events"] if e["type"] == sys.argv[1]))' "$2"
}
# wait_final JOB TIMEOUT_S: until the job is in a final state (or the
# timeout); prints the state.
wait_final() {
    _n=0
    while [ "$_n" -lt $(($2 * 10)) ]; do
        _s=$(sluice show "$1" -o json | json_get state)
        case "$_s" in Succeeded | Failed | Cancelled | Lost | Timeout) break ;; esac
        sleep 0.1
        _n=$((_n + 1))
    done
    printf '%s\n' "$_s"
}

# --- a cancel in flight -----------------------------------------------------------
# It ignores SIGTERM (notes each one) and would end on its own after 25 s.
c=$(sluice run --name trapper --cpus 0.1 --memory 16Mi -- \
    sh -c 'trap "echo term" TERM; echo up; i=0; while [ $i -lt 250 ]; do sleep 0.1; i=$((i + 1)); done')
ok "a job that ignores SIGTERM runs" wait_state "$c" Running 30
sleep 0.5
sluice cancel "$c" >/dev/null
is "$?" 0 "its cancel is acknowledged"
kill9_sluiced
ok "sluiced restarts after kill -9" restart_sluiced
is "$(wait_final "$c" 20)" Cancelled "the job whose cancel was acknowledged ends Cancelled"
is "$(sluice logs "$c" | grep -c '^term$')" 2 "it got SIGTERM again after the restart"

# --- a preemption in flight ---------------------------------------------------------
cat >"$J/victim.yaml" <<YAML
apiVersion: sluice/v1
kind: Job
metadata: {name: victim}
spec:
  priorityClass: best-effort
  command: [sh, -c, 'trap "echo ckpt" USR1; echo up; i=0; while [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done']
  resources: {gpus: 2, cpus: 0.1, memory: 16Mi}
  checkpoint: {signal: SIGUSR1, grace: 5s}
YAML
v=$(sluice submit -f "$J/victim.yaml")
ok "a best-effort job takes both GPUs" wait_state "$v" Running 30
p=$(sluice run --name urgent --priority production --gpus 2 --cpus 0.1 --memory 16Mi -- sleep 2)
i=0
while [ "$(events "$v" preempt)" != 1 ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
is "$(events "$v" preempt)" 1 "a production job preempts it: checkpoint signal, 5 s of grace"
kill9_sluiced
ok "sluiced restarts after kill -9 during the grace" restart_sluiced
i=0
while [ "$(sluice show "$v" -o json | json_get preemptions)" != 1 ] && [ "$i" -lt 150 ]; do
    sleep 0.1
    i=$((i + 1))
done
is "$(sluice show "$v" -o json | json_get preemptions)" 1 "the victim ends its attempt preempted"
like "$(sluice show "$v" -o json | json_get state)" '^(Pending|Running)$' \
    "and is back in line, not finished"
is "$(events "$v" preempt)" 1 "the restart decided no second preemption"
is "$(sluice logs "$v" | grep -c '^ckpt$')" 2 "it got its checkpoint signal again"
is "$(wait_final "$p" 30)" Succeeded "the preemptor runs"
sluice cancel "$v" >/dev/null

# --- a timeout in flight ------------------------------------------------------------
cat >"$J/slow.yaml" <<YAML
apiVersion: sluice/v1
kind: Job
metadata: {name: slow}
spec:
  command: [sh, -c, 'trap "echo ckpt" USR1; echo up; i=0; while [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done']
  resources: {cpus: 0.1, memory: 16Mi}
  maxRuntime: 2s
  checkpoint: {signal: SIGUSR1, grace: 5s}
YAML
t=$(sluice submit -f "$J/slow.yaml")
ok "a job with maxRuntime 2s runs" wait_state "$t" Running 30
i=0
while [ "$(events "$t" timeout)" != 1 ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
is "$(events "$t" timeout)" 1 "it reaches maxRuntime: checkpoint signal, 5 s of grace"
kill9_sluiced
ok "sluiced restarts after kill -9 during the grace" restart_sluiced
is "$(wait_final "$t" 20)" Timeout "the timed-out job ends Timeout"
like "$(sluice show "$t" -o json | json_get message)" 'maxRuntime' "for its maxRuntime"
is "$(events "$t" timeout)" 1 "with its one timeout: the grace was not started again"
is "$(sluice logs "$t" | grep -c '^ckpt$')" 2 "it got its checkpoint signal again"

rm -f "$conf"
done_testing
