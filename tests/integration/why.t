#!/bin/sh
# `sluice why` and `sluice queues` against a real sluiced with fake GPUs: a
# queue with a quota of 2 GPUs, three one-GPU jobs (the third waits on the
# quota), jobs that can never run (refused at submission, and one that
# waits when its queue's quota shrinks), a running and a finished job, the
# estimated start from a reservation and from the running jobs' maxRuntime,
# and the exit codes of a missing job and a bad id.
. "$(dirname "$0")/../lib.sh"

FAKE_GPUS=4xH100
start_sluiced || bail "sluiced starts"

# No borrowing: the queue's own quota is what binds, not the cohort's.
cat >"$SLUICE_TMP/queues.yaml" <<YAML
apiVersion: sluice/v1
kind: Cohort
metadata: {name: pool}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: research}
spec: {team: default, cohort: pool, nominal: {gpus: 2}, borrowingLimit: {gpus: 0}}
YAML
ok "apply a cohort and a queue with a 2-GPU quota" \
    sluice apply -f "$SLUICE_TMP/queues.yaml"

run1() { sluice run --queue research --gpus 1 --cpus 0.1 --memory 16Mi -- sleep 300; }
j1=$(run1)
j2=$(run1)
j3=$(run1)
like "$j1 $j2 $j3" '^[0-9]+ [0-9]+ [0-9]+$' "three one-GPU jobs are submitted"
ok "the first job runs" wait_state "$j1" Running 15
ok "the second job runs" wait_state "$j2" Running 15
sleep 0.5
is "$(sluice show "$j3" -o json | json_get state)" Pending \
    "the third job stays pending: the quota is full"

# Table mode: a report for people.
out=$(sluice why "$j3")
is "$?" 0 "why exits 0 for a pending job"
like "$out" "^job $j3 \\(admin, queue research, batch\\) is Pending: quota" \
    "the first line names the job, its user, queue, class and the summary"
like "$out" 'quota: queue research holds 2 of 2 GPUs; this job needs 1, over the limit by 1' \
    "the quota blocker is in words with its numbers"
like "$out" 'Position: 1 of 1 in queue research' "the queue position is given"
like "$out" '^Blocked by:$' "blockers come under 'Blocked by:'"
like "$out" '^Estimated start: unknown \(no reservation\)$' \
    "no reservation: the start is unknown"
like "$out" "^  queue research's jobs release 1 GPU" "what would make it run is listed"

# JSON: the server's object.
json=$(sluice why "$j3" -o json)
is "$(printf '%s' "$json" | json_get blockers.0.kind)" quota "why -o json: blockers[0].kind is quota"
is "$(printf '%s' "$json" | json_get blockers.0.limit)" 2 "why -o json: the limit is 2 GPUs"
is "$(printf '%s' "$json" | json_get job)" "$j3" "why -o json names the job"

# CSV: one row per blocker.
csv=$(sluice why "$j3" -o csv)
is "$(printf '%s\n' "$csv" | head -n 1)" "job,kind,resource,used,limit,short,detail" \
    "why -o csv starts with its header"
like "$(printf '%s\n' "$csv" | sed -n 2p)" "^$j3,quota,gpu,2,2,1,\"queue research holds 2 of 2 GPUs; this job needs 1, over the limit by 1\"" \
    "why -o csv has the quota row with its numbers"
is "$(printf '%s\n' "$csv" | wc -l | tr -d ' ')" 2 "why -o csv has one row per blocker"

# Jobs that can never run are refused at submission, naming the field,
# and nothing is created.
before=$(sluice jobs --state all -o json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
refused() { # FIELD MESSAGE-PATTERN DESCRIPTION -- ARGS...
    f=$1 m=$2 d=$3
    shift 4
    out=$(sluice run --cpus 0.1 --memory 16Mi "$@" -- true 2>&1)
    rc=$?
    is "$rc" 2 "$d: refused (exit 2)"
    like "$out" "$m" "$d: says why"
    like "$out" "$f" "$d: names $f"
}
refused spec.resources.gpus 'cannot run: 64 GPUs per task, the largest node has 4 \(unsatisfiable\)' \
    "64 GPUs per task on 4-GPU nodes" -- --gpus 64
refused spec.resources.gpuModels 'cannot run: no node has a GPU of model B200 \(the models here: H100\)' \
    "a GPU model no node has" -- --gpus 1 --gpu-model B200
refused spec.tasks 'cannot run: 2 tasks of 3 GPUs.* on one node \(topology same-node\), the largest node takes 1' \
    "a same-node gang no node holds" -- --tasks 2 --gpus 3 --topology same-node
refused spec.tasks 'cannot run: 5 tasks of 1 GPU.*, the whole cluster takes 4' \
    "a gang larger than the cluster" -- --tasks 5 --gpus 1
refused spec.resources.gpus 'cannot run: it needs 3 GPUs, and queue research may never hold more than 2 GPUs \(its nominal quota plus its borrowing limit\): over by 1 GPU \(quota_exceeded\)' \
    "3 GPUs in a queue that may hold 2" -- --queue research --gpus 3
cat >"$SLUICE_TMP/be.yaml" <<YAML
apiVersion: sluice/v1
kind: Job
metadata: {name: be}
spec: {queue: research, priorityClass: best-effort, command: ["true"], resources: {gpus: 3, cpus: 0.1, memory: 16Mi}}
YAML
ok "a best-effort job skips the queue's limits (dry run)" \
    sluice submit --dry-run -f "$SLUICE_TMP/be.yaml"
after=$(sluice jobs --state all -o json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
is "$after" "$before" "no refused job was created"
code=$(curl -s -o "$SLUICE_TMP/refused.json" -w '%{http_code}' -X POST \
    -H "Authorization: Bearer $SLUICE_TOKEN" -H 'Content-Type: application/json' \
    --data '{"apiVersion":"sluice/v1","kind":"Job","metadata":{"name":"huge"},"spec":{"command":["true"],"resources":{"gpus":64}}}' \
    "$SLUICE_SERVER/v1/jobs?dry_run=true")
is "$code" 400 "a dry run of a job that cannot run is refused too"
is "$(json_get error.code <"$SLUICE_TMP/refused.json")" unsatisfiable "with code unsatisfiable"
is "$(json_get error.field <"$SLUICE_TMP/refused.json")" spec.resources.gpus "and the field"

# A running job and a finished one.
like "$(sluice why "$j1")" "^job $j1 is Running \\(since [0-9T:.-]+Z, [0-9a-z]+ ago\\): nothing blocks it$" \
    "why of a running job says nothing blocks it"
like "$(sluice why "$j1" -o json | json_get state)" '^Running$' "why -o json of a running job says Running"
is "$(sluice why "$j1" -o csv)" "job,kind,resource,used,limit,short,detail" \
    "why -o csv of a running job is the header alone"

# Queues.
out=$(sluice queues)
is "$?" 0 "queues exits 0"
like "$(printf '%s\n' "$out" | head -n 1)" '^QUEUE +TEAM +COHORT +GPUS +BORROWED +LENT +PENDING +RUNNING +SHARE$' \
    "queues prints its header"
like "$out" '^research +default +pool +2/2 +0 +0 +1 +2 +[0-9]+\.[0-9][0-9]$' "research holds 2/2 GPUs with 1 pending and 2 running"
like "$out" '^default +default +- +0/- ' "the default queue has no GPU quota"
json=$(sluice queues -o json)
got=$(printf '%s' "$json" | python3 -c 'import json, sys
q = [q for q in json.load(sys.stdin) if q["name"] == "research"][0]
print(q["used"]["gpus"], q["nominal"]["gpus"], q["pending"], q["running"], q["cohort"])')
is "$got" "2.0 2.0 1 2 pool" "queues -o json has research's numbers"
is "$(sluice queues --team nosuch -o json)" "[]" "queues --team filters"
is "$(sluice queues --team default -o json | json_get 1.name)" research \
    "queues --team default keeps the team's queues"
csv=$(sluice queues -o csv)
like "$(printf '%s\n' "$csv" | head -n 1)" '^name,team,cohort,nominal_gpus,nominal_cpus,nominal_memory,nominal_gpus_by_model,used_gpus,' \
    "queues -o csv starts with its header"
like "$csv" '^research,default,pool,2,,,,2,0\.2,33554432,H100=2,(0,){3},' "queues -o csv has research's full numbers"

# Errors.
err=$(sluice why 999999 2>&1)
is "$?" 2 "why of an unknown job exits 2"
is "$err" "sluice: job 999999 not found (not_found)" "and says so in one line"
err=$(sluice why abc 2>&1)
is "$?" 1 "why abc is a usage error"
like "$err" "^sluice: .*abc" "the usage error names the bad id"
sluice why >/dev/null 2>&1
is "$?" 1 "why without a job is a usage error"
sluice queues extra >/dev/null 2>&1
is "$?" 1 "queues takes no argument"
is "$(sluice help | grep -c 'Not available.*\(why\|queues\)')" 0 \
    "why and queues are no longer listed as unavailable"
like "$(sluice help why)" '^usage: sluice why JOB' "help why prints its usage"

# A finished job: cancel the pending one.
sluice cancel "$j3" >/dev/null
ok "the pending job is cancelled" wait_state "$j3" Cancelled 10
like "$(sluice why "$j3")" "^job $j3 is not pending: it has finished \\(Cancelled\\)$" \
    "why of a finished job says it is not pending"

cancel_quiet() { sluice cancel "$@" >/dev/null; }
ok "cancel the other jobs" cancel_quiet "$j1" "$j2"
ok "the second running job stops" wait_state "$j2" Cancelled 15
ok "the first running job stops" wait_state "$j1" Cancelled 15

# A backfill reservation gives an estimated start: 3 of the 4 GPUs are
# busy until a maxRuntime ends, and a 4-GPU job waits for them.
short=$(sluice run --gpus 3 --cpus 0.1 --memory 16Mi --max-runtime 60s -- sleep 30)
ok "a 3-GPU job with a maxRuntime runs" wait_state "$short" Running 15
wide=$(sluice run --gpus 4 --cpus 0.1 --memory 16Mi -- sleep 30)
i=0
while [ "$i" -lt 50 ] && [ "$(sluice why "$wide" -o json | json_get eta)" = null ]; do
    sleep 0.1
    i=$((i + 1))
done
like "$(sluice why "$wide")" '^Estimated start: [0-9T:.-]+Z \(in [0-9a-z]+; backfill reservation on [^ )]+\)$' \
    "a reserved job has an estimated start on its reserved node"
# A job behind the reservation has an estimate from the running jobs'
# maxRuntime, said to be one.
third=$(sluice run --gpus 2 --cpus 0.1 --memory 16Mi -- sleep 30)
i=0
while [ "$i" -lt 50 ] && [ "$(sluice why "$third" -o json | json_get eta_basis)" != max_runtime ]; do
    sleep 0.1
    i=$((i + 1))
done
is "$(sluice why "$third" -o json | json_get eta_basis)" max_runtime \
    "a job without a reservation is estimated from the running jobs' maxRuntime"
like "$(sluice why "$third")" '^Estimated start: [0-9T:.-]+Z \(in [0-9a-z]+; the earliest its request fits as running jobs end by their maxRuntime; jobs ahead of it may start first\)$' \
    "why says how the estimate was made"
ok "cancel the last jobs" cancel_quiet "$short" "$wide" "$third"

# A job that waits when its queue's quota shrinks below it cannot run:
# why says so, and what an admin would change, not what others release.
blocker=$(sluice run --gpus 4 --cpus 0.1 --memory 16Mi -- sleep 300)
ok "a 4-GPU job holds the node" wait_state "$blocker" Running 15
two=$(sluice run --queue research --gpus 2 --cpus 0.1 --memory 16Mi -- sleep 300)
cat >"$SLUICE_TMP/shrink.yaml" <<YAML
apiVersion: sluice/v1
kind: Queue
metadata: {name: research}
spec: {team: default, cohort: pool, nominal: {gpus: 1}, borrowingLimit: {gpus: 0}}
YAML
ok "research's quota shrinks to 1 GPU" sluice apply -f "$SLUICE_TMP/shrink.yaml"
out=$(sluice why "$two")
like "$out" "^job $two .* is Pending: cannot run: it needs 2 GPUs, and queue research may never hold more than 1 GPU" \
    "the waiting 2-GPU job cannot run: said in the summary"
like "$out" '^  an admin raises the limit it is over' "what would change it is an admin's"
is "$(sluice why "$two" -o json | json_get blockers.0.cause)" limit "its blocker's cause is the limit"
ok "cancel them" cancel_quiet "$two" "$blocker"
done_testing
