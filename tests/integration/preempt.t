#!/bin/sh
# Preemption through sluiced, with the local executor on fake GPUs: a
# production job preempts a best-effort one that holds both GPUs; the
# victim receives its checkpoint signal (SIGUSR1, trapped by the job, which
# writes a marker) and is killed only after its grace; it goes back to
# Pending with its submit time; the preemptor runs; the victim runs again
# when the preemptor is done (its log shows the second attempt under a
# header "after preemption"). Then two queues of a cohort: one borrows the
# other's idle quota and gives it back when the lender's job arrives
# (reclaim), the youngest borrowed job first; and a minimum run time
# protects a job that has just started.
. "$(dirname "$0")/../lib.sh"

FAKE_GPUS=2xH100
start_sluiced || bail "sluiced starts"
D=$SLUICE_JOBS

cat >"$D/classes.yaml" <<'YAML'
apiVersion: sluice/v1
kind: PriorityClass
metadata: {name: production}
spec: {value: 1000, preemptible: false}
---
apiVersion: sluice/v1
kind: PriorityClass
metadata: {name: best-effort}
spec: {value: 0, opportunistic: true}
---
apiVersion: sluice/v1
kind: PriorityClass
metadata: {name: protected}
spec: {value: 50, minRuntime: 1h}
YAML
ok "apply production, best-effort and protected priority classes" sluice apply -f "$D/classes.yaml"

# The victim: traps the checkpoint signal, notes when it came, keeps
# running (it ignores it, so the grace must run out and SIGKILL end it).
cat >"$D/victim.yaml" <<YAML
apiVersion: sluice/v1
kind: Job
metadata: {name: victim}
spec:
  priorityClass: best-effort
  command: [sh, -c, 'trap "date +%s.%N > $D/ckpt.\$SLUICE_ATTEMPT; echo checkpoint" USR1; echo started; while :; do sleep 0.1; done']
  resources: {gpus: 2, cpus: 0.1, memory: 16Mi}
  checkpoint: {signal: SIGUSR1, grace: 3s}
YAML
victim=$(sluice submit -f "$D/victim.yaml")
like "$victim" '^[0-9]+$' "a best-effort job asking for both GPUs is submitted"
ok "it runs" wait_state "$victim" Running 15
submitted=$(sluice show "$victim" -o json | json_get submitted_at)
sleep 0.5

t0=$(date +%s.%N)
# The preemptor runs until the checks below are done (at most 60 s), so
# that a loaded machine cannot let it end, and the victim run again, first.
prod=$(sluice run --name urgent --priority production --gpus 2 --cpus 0.1 --memory 16Mi -- \
    sh -c "echo preemptor; i=0; while [ ! -e '$D/release' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done")
like "$prod" '^[0-9]+$' "a production job asking for both GPUs is submitted"
i=0
while [ ! -s "$D/ckpt.0" ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ok "the victim receives SIGUSR1 (its trap wrote the marker)" test -s "$D/ckpt.0"
ev=$(curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$victim/events")
like "$ev" "\"type\": ?\"preempt\"[^}]*preempted for job $prod \\(it ran opportunistically on idle capacity\\): SIGUSR1, SIGKILL in 3s" \
    "its preempt event says for which job, why, the signal and the grace"
is "$(sluice show "$prod" -o json | json_get state)" Pending \
    "the preemptor waits while the victim has its grace"
like "$(sluice why "$prod")" 'preempting' "and says it waits for the job it preempted"
ok "the preemptor runs" wait_state "$prod" Running 20
t_run=$(date +%s.%N)
ckpt=$(cat "$D/ckpt.0")
ok "the victim was killed only after its 3 s grace" \
    python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) >= 2.9 else 1)" "$ckpt" "$t_run"
ok "and the whole preemption took less than 20 s" \
    python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) < 20 else 1)" "$t0" "$t_run"
vj=$(sluice show "$victim" -o json)
is "$(printf '%s' "$vj" | json_get state)" Pending "the victim is back to Pending"
is "$(printf '%s' "$vj" | json_get preemptions)" 1 "with one preemption counted"
is "$(printf '%s' "$vj" | json_get submitted_at)" "$submitted" "and its submit time kept"
ev=$(curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$victim/events")
like "$ev" '"from": ?"Preempted", ?"to": ?"Pending"' "and the requeue from Preempted to Pending"
like "$(sluice logs "$victim")" 'checkpoint' "its output shows the trap ran"
is "$(sluice show "$prod" -o json | json_get state)" Running "while the preemptor still runs"
touch "$D/release"
ok "the preemptor succeeds" wait_state "$prod" Succeeded 20
ok "then the victim runs again" wait_state "$victim" Running 20
sleep 0.5
is "$(sluice show "$victim" -o json | json_get attempt)" 1 "as its second attempt"
like "$(sluice logs "$victim" | grep '^==> attempt 1')" \
    '^==> attempt 1 \(started .* UTC, after preemption\) <==$' "its log shows the second attempt after a preemption"
ok "cancel the victim" sluice cancel "$victim"
ok "which ends Cancelled" wait_state "$victim" Cancelled 20

# ---- reclaim in a cohort ---------------------------------------------
cat >"$D/queues.yaml" <<'YAML'
apiVersion: sluice/v1
kind: Cohort
metadata: {name: pool}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: lender}
spec: {team: default, cohort: pool, nominal: {gpus: 1}}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: borrower}
spec: {team: default, cohort: pool, nominal: {gpus: 1}}
YAML
ok "apply two queues of 1 GPU each in a cohort" sluice apply -f "$D/queues.yaml"
cat >"$D/borrow.yaml" <<YAML
apiVersion: sluice/v1
kind: Job
spec:
  queue: borrower
  command: [sh, -c, 'trap "echo checkpoint; exit 0" TERM; while :; do sleep 0.1; done']
  resources: {gpus: 1, cpus: 0.1, memory: 16Mi}
  checkpoint: {signal: SIGTERM, grace: 5s}
YAML
b1=$(sluice submit -f "$D/borrow.yaml")
ok "the borrower's first job runs" wait_state "$b1" Running 15
sleep 1.1 # so that the second starts later: it is the younger
b2=$(sluice submit -f "$D/borrow.yaml")
ok "its second job runs too, on the lender's idle GPU" wait_state "$b2" Running 15
q=$(sluice queues -o json)
is "$(printf '%s' "$q" | python3 -c 'import json,sys; print(int([x["borrowed"]["gpus"] for x in json.load(sys.stdin) if x["name"]=="borrower"][0]))')" 1 \
    "sluice queues shows the borrower borrowing 1 GPU"
l1=$(sluice run --queue lender --gpus 1 --cpus 0.1 --memory 16Mi -- sleep 2)
ok "the lender's job runs once its GPU is reclaimed" wait_state "$l1" Running 20
is "$(sluice show "$b2" -o json | json_get preemptions)" 1 "the younger borrowed job was the victim"
is "$(sluice show "$b1" -o json | json_get state)" Running "the older one, within nominal, kept running"
like "$(sluice logs "$b2")" 'checkpoint' "the victim got SIGTERM and exited on it"
ok "the lender's job succeeds" wait_state "$l1" Succeeded 20
ok "and the victim runs again" wait_state "$b2" Running 20
sluice cancel "$b1" "$b2" >/dev/null
wait_state "$b1" Cancelled 20 >/dev/null
wait_state "$b2" Cancelled 20 >/dev/null

# ---- a minimum run time protects a job that has just started ----------
p1=$(sluice run --priority protected --gpus 2 --cpus 0.1 --memory 16Mi -- sleep 30)
ok "a job of a class with a 1 h minimum run time runs" wait_state "$p1" Running 15
p2=$(sluice run --priority production --gpus 2 --cpus 0.1 --memory 16Mi -- sleep 1)
sleep 2
is "$(sluice show "$p1" -o json | json_get state)" Running "a production job does not preempt it"
is "$(sluice show "$p1" -o json | json_get preemptions)" 0 "it was not preempted"
is "$(sluice show "$p2" -o json | json_get state)" Pending "the production job waits"
sluice cancel "$p1" "$p2" >/dev/null

stop_sluiced
is "$?" 0 "sluiced stops cleanly"
done_testing
