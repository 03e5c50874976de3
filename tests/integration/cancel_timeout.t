#!/bin/sh
# Cancel kills the whole process tree; maxRuntime sends the checkpoint
# signal, waits the grace period, then kills; retries requeue with backoff.
. "$(dirname "$0")/../lib.sh"

conf=$(mktemp /tmp/sluice-conf.XXXXXX)
printf 'retryBackoff: 1s\ncancelGrace: 2s\n' >"$conf"
start_sluiced --config "$conf" || bail "sluiced starts"
rm -f "$conf"

# A tree of three processes; the marker makes them ours alone.
mark=$((200000 + $$))
id=$(sluice run --cpus 0.1 --memory 64Mi -- sh -c "sleep $mark & sleep $mark & sleep $mark; wait")
ok "the tree job runs" wait_state "$id" Running 30
i=0
while [ "$(pgrep -f "^sleep $mark$" | wc -l)" -lt 3 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
is "$(pgrep -f "^sleep $mark$" | wc -l | tr -d ' ')" 3 "three processes of the tree are alive"
ok "cancel is accepted" sluice cancel "$id"
ok "the job ends Cancelled" wait_state "$id" Cancelled 30
is "$(pgrep -f "^sleep $mark$" | wc -l | tr -d ' ')" 0 "cancel killed every process of the tree"
out=$(sluice cancel "$id" 2>&1)
is "$?" 2 "cancelling a finished job exits 2"
like "$out" 'already finished' "and says the job has already finished"

# A pending job is cancelled at once.
idh=$(sluice run --gpus 4 --cpus 0.1 -- sleep 300)
ok "a job of every GPU runs" wait_state "$idh" Running 15
idp=$(sluice run --gpus 1 --cpus 0.1 -- true)
ok "a job behind it stays Pending" wait_state "$idp" Pending 10
like "$(sluice show "$idp" -o json | json_get reason)" 'resources: no node has 1 GPU' \
    "its reason says it waits for a GPU"
ok "cancel of a pending job" sluice cancel "$idp"
ok "it is Cancelled at once" wait_state "$idp" Cancelled 5
ok "cancel the job of every GPU" sluice cancel "$idh"
ok "it ends" wait_state "$idh" Cancelled 15

# maxRuntime: checkpoint signal, grace, then SIGKILL.
cat >"$SLUICE_TMP/timeout.yaml" <<YAML
apiVersion: sluice/v1
kind: Job
metadata: {name: overrun}
spec:
  command: [sh, -c, 'trap "echo checkpoint-received" USR1; while :; do sleep 0.2; done']
  resources: {cpus: 0.1, memory: 64Mi}
  maxRuntime: 1s
  checkpoint: {signal: SIGUSR1, grace: 2s}
YAML
idt=$(sluice submit -f "$SLUICE_TMP/timeout.yaml")
like "$idt" '^[0-9]+$' "submit -f prints only the job id"
ok "the overrunning job ends Timeout" wait_state "$idt" Timeout 30
like "$(sluice logs "$idt")" 'checkpoint-received' "it received the checkpoint signal first"
like "$(sluice show "$idt" -o json | json_get message)" 'exceeded maxRuntime of 1s; killed' \
    "the message names maxRuntime"
is "$(sluice show "$idt" -o json | json_get exit_code)" 137 "it was killed after the grace period (exit code kept)"

# One that the checkpoint signal (SIGTERM) ends keeps its 143, and a Timeout
# is not retried, whatever its retries say.
idt2=$(sluice run --name overrun2 --retries 2 --max-runtime 1s --cpus 0.1 --memory 64Mi -- sleep 300)
ok "the second overrunning job ends Timeout" wait_state "$idt2" Timeout 30
is "$(sluice show "$idt2" -o json | json_get exit_code)" 143 "with SIGTERM's exit code 143"
is "$(sluice show "$idt2" -o json | json_get attempt)" 0 "and no retry though retries are left"
like "$(sluice show "$idt2")" 'Timeout' "sluice show says Timeout"
out=$(sluice jobs --state Timeout -o json | python3 -c 'import json,sys; print(" ".join(str(j["id"]) + ":" + j["state"] for j in json.load(sys.stdin)))')
is "$out" "$idt:Timeout $idt2:Timeout" "sluice jobs --state Timeout lists both, and only them"
like "$(sluice jobs --state timeout,failed)" "overrun2" "the state is parsed in any case in a list"
is "$(sluice jobs --state Failed -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0 \
    "neither is Failed"
ev=$(curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$idt2/events" |
    python3 -c 'import json,sys; print(" ".join(e["type"] + ":" + str(e["to"]) for e in json.load(sys.stdin)["events"]))')
like "$ev" 'timeout:.* state:Timeout$' "the events end with the timeout, then the state Timeout"
is "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs?state=Timeout")" 200 \
    "the API's state filter takes Timeout"
like "$(curl -sf "$SLUICE_SERVER/metrics")" 'sluice_jobs_finished_total\{state="Timeout"\} 2' \
    "the metrics count both as finished Timeout"

# Retries: one failure, then a requeue with backoff, then the final failure.
idr=$(sluice run --retries 1 --cpus 0.1 --memory 64Mi -- sh -c 'echo attempt-$SLUICE_ATTEMPT; exit 4')
ok "the retried job finally fails" wait_state "$idr" Failed 40
is "$(sluice show "$idr" -o json | json_get attempt)" 1 "it ran a second attempt"
ev=$(curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$idr/events" |
    python3 -c 'import json,sys; print(" ".join(e["type"] + ":" + str(e["to"]) for e in json.load(sys.stdin)["events"]))')
like "$ev" '^state:Pending state:Running .*retry:Pending state:Running .*state:Failed$' \
    "every transition is a stored event (submit, run, retry, run, fail)"
like "$(sluice logs "$idr")" 'attempt-1' "the second attempt ran with SLUICE_ATTEMPT=1"

done_testing
