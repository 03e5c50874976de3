#!/bin/sh
# The demo that `make run` loads (examples/demo-teams.yaml) applies to a
# fresh sluiced with the demo's fake GPUs, and its queues share them as its
# comment says: quotas, a cohort, borrowing, the user limit.
. "$(dirname "$0")/../lib.sh"

FAKE_GPUS=4xH100,4xA100-80GB
start_sluiced || bail "sluiced starts"
REPO=$(cd "$(dirname "$0")/../.." && pwd)

out=$(sluice apply -f "$REPO/examples/demo-teams.yaml" 2>&1); rc=$?
is "$rc" 0 "the demo manifests apply"
like "$out" 'cohort/gpu-pool created' "the cohort is made"
like "$out" 'scheduler/default' "and the scheduler settings"
q=$(sluice queues -o json)
nominal() { printf '%s' "$q" | python3 -c 'import json,sys; print(int([x["nominal"]["gpus"] for x in json.load(sys.stdin) if x["name"]==sys.argv[1]][0]))' "$1"; }
is "$(nominal vision)/$(nominal nlp-research)/$(nominal nlp-inference)" 4/3/1 \
    "the queues' nominal GPUs are 4, 3 and 1: the demo's 8"
is "$(printf '%s' "$q" | python3 -c 'import json,sys; print(sorted({x["cohort"] for x in json.load(sys.stdin) if x["name"] in ("vision","nlp-research","nlp-inference")}))')" \
    "['gpu-pool']" "all three in the cohort"

# nlp-research: 3 of its own and 2 borrowed, not a sixth.
ids=""
for i in 1 2 3 4 5 6; do
    ids="$ids $(sluice run --team nlp --queue nlp-research --gpus 1 --cpus 0.1 --memory 16Mi -- sleep 30)"
done
set -- $ids
for id in $1 $2 $3 $4 $5; do
    wait_state "$id" Running 15 >/dev/null || fail "job $id runs"
done
sleep 0.5
is "$(sluice show "$6" -o json | json_get state)" Pending "the sixth nlp-research job waits"
like "$(sluice why "$6")" 'quota: queue nlp-research' "on its queue's quota and borrowing limit"
is "$(sluice queues -o json | python3 -c 'import json,sys; print(int([x["borrowed"]["gpus"] for x in json.load(sys.stdin) if x["name"]=="nlp-research"][0]))')" \
    2 "sluice queues shows it borrowing 2 GPUs"
# vision gets its own back: its jobs preempt the borrowers.
v1=$(sluice run --team vision --queue vision --gpus 1 --cpus 0.1 --memory 16Mi -- sleep 30)
ok "a vision job runs at once on an idle GPU" wait_state "$v1" Running 15
v2=$(sluice run --team vision --queue vision --gpus 1 --cpus 0.1 --memory 16Mi -- sleep 30)
ok "a second one of the same user runs" wait_state "$v2" Running 15
v3=$(sluice run --team vision --queue vision --gpus 1 --cpus 0.1 --memory 16Mi -- sleep 30)
sleep 0.5
is "$(sluice show "$v3" -o json | json_get state)" Pending \
    "a third waits though a GPU is idle: 2 GPUs per user in vision"
is "$(sluice why "$v3" -o json | python3 -c 'import json,sys; print(",".join(b["kind"] for b in json.load(sys.stdin)["blockers"]))')" \
    cohort,user_limit "its blockers: the cohort (its idle quota is lent) and the user limit"
like "$(sluice why "$v3")" "user limit: admin holds 2 of 2 GPUs in queue vision; this job needs 1, over the limit by 1" \
    "sluice why names the user limit with its numbers"
sluice cancel $ids "$v1" "$v2" "$v3" >/dev/null
stop_sluiced
is "$?" 0 "sluiced stops cleanly"
done_testing
