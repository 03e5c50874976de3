#!/bin/sh
# After a daemon restart (clean or kill -9), running jobs are re-adopted when
# their process is alive, and Lost (then retried) when it vanished.
. "$(dirname "$0")/../lib.sh"

conf=$(mktemp /tmp/sluice-conf.XXXXXX)
printf 'retryBackoff: 1s\n' >"$conf"
start_sluiced --config "$conf" || bail "sluiced starts"

mark=$((300000 + $$))
# It runs until the test lets it go, however slow the machine.
id=$(sluice run --gpus 1 --cpus 0.1 --memory 64Mi -- \
    sh -c "i=0; while [ ! -e '$SLUICE_JOBS/go' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done; echo survived-$mark")
ok "a job runs" wait_state "$id" Running 30
ok "sluiced stops cleanly with a job running" stop_sluiced
ok "sluiced restarts" restart_sluiced
is "$(sluice show "$id" -o json | json_get state)" Running "the job is still Running after a clean restart"
touch "$SLUICE_JOBS/go"
ok "the re-adopted job completes" wait_state "$id" Succeeded 30
like "$(sluice logs "$id")" "survived-$mark" "its output is complete"

id2=$(sluice run --gpus 1 --cpus 0.1 --memory 64Mi -- sh -c "sleep 3; exit 5")
ok "a second job runs" wait_state "$id2" Running 30
kill9_sluiced
ok "sluiced restarts after kill -9" restart_sluiced
ok "the job re-adopted after kill -9 finishes with its own exit code" wait_state "$id2" Failed 30
is "$(sluice show "$id2" -o json | json_get exit_code)" 5 "exit code 5 was recorded across the crash"

# A job whose processes vanish while the daemon is down is Lost, then retried.
id3=$(sluice run --retries 1 --cpus 0.1 --memory 64Mi -- sh -c "echo run-\$SLUICE_ATTEMPT; sleep $mark")
ok "a third job runs" wait_state "$id3" Running 30
kill9_sluiced
for f in "$SLUICE_TMP"/data/run/"$id3".*.pid; do
    read -r tpid _start shim _gpus <"$f"
    kill -KILL "$shim" "$tpid" 2>/dev/null
done
pkill -KILL -f "sleep $mark" 2>/dev/null
ok "sluiced restarts" restart_sluiced
ev=$(curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$id3/events" |
    python3 -c 'import json,sys; print(" ".join(str(e["to"]) for e in json.load(sys.stdin)["events"]))')
like "$ev" 'Running Lost Pending' "the vanished job went Lost and was requeued"
ok "the retry runs" wait_state "$id3" Running 30
like "$(sluice logs "$id3")" 'run-1' "the retry is attempt 1"
ok "cancel the retry" sluice cancel "$id3"
ok "it ends Cancelled" wait_state "$id3" Cancelled 30

done_testing
