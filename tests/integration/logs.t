#!/bin/sh
# `sluice logs` and a job of several attempts, on a real sluiced: a
# requeued job's log shows each attempt's output under a header line of its
# own (when it started, what it came after); --attempt N shows one attempt
# alone (?attempt=N); logs -f gives a header to an attempt that starts
# while it follows; where each attempt begins is kept across a restart.
. "$(dirname "$0")/../lib.sh"

start_sluiced || bail "sluiced starts"
R="--cpus 0.1 --memory 64Mi"
field() { sluice show "$1" -o json | json_get "$2"; }
# wait_log JOB TEXT: until the job's log holds TEXT (15 s at most)
wait_log() {
    _i=0
    while ! sluice logs "$1" 2>/dev/null | grep -q "$2" && [ $_i -lt 150 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    sluice logs "$1" 2>/dev/null | grep -q "$2"
}
hdr='==> attempt %s \(started [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} UTC%s\) <=='

# A job of one attempt: its output, byte for byte, no header.
# (stderr to /dev/null: sh says "Terminated" of the sleep a SIGTERM ends)
j=$(sluice run $R -- sh -c 'exec 2>/dev/null; echo "out-$SLUICE_ATTEMPT"; trap "exit 0" TERM; while :; do sleep 0.1; done')
ok "the job runs" wait_state "$j" Running 20
ok "and prints its first line" wait_log "$j" out-0
is "$(sluice logs "$j")" "out-0" "one attempt: the log as it is, no header"

# logs -f follows it through a requeue: the second attempt gets its header
# as it starts.
sluice logs -f "$j" >"$SLUICE_TMP/fo" 2>"$SLUICE_TMP/fe" &
lp=$!
sleep 0.5
ok "sluice requeue sends it back in line" sluice requeue "$j"
ok "it runs again as attempt 1" wait_log "$j" out-1
is "$(field "$j" attempt)" 1 "attempt 1"
out=$(sluice logs "$j")
like "$(printf '%s\n' "$out" | sed -n 1p)" "^$(printf "$hdr" 0 '')\$" "attempt 0's header, with its start"
is "$(printf '%s\n' "$out" | sed -n 2p)" "out-0" "then its output"
like "$(printf '%s\n' "$out" | sed -n 3p)" "^$(printf "$hdr" 1 ', after requeue')\$" \
    "attempt 1's header says it came after a requeue"
is "$(printf '%s\n' "$out" | sed -n 4p)" "out-1" "then its output"
is "$(printf '%s\n' "$out" | wc -l)" 4 "and nothing else"
is "$(sluice logs --attempt 0 "$j")" "out-0" "--attempt 0: the first attempt's output alone"
is "$(sluice logs --attempt 1 "$j")" "out-1" "--attempt 1: the second's"
out=$(sluice logs --attempt 2 "$j" 2>&1); rc=$?
is "$rc" 2 "--attempt 2, which has not started, is refused (exit 2)"
like "$out" "attempt.*job $j has no attempt 2 \\(attempts 0 to 1\\)" "saying which there are"
at=$(curl -s -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$j/attempts")
is "$(printf '%s' "$at" | json_get attempts.1.after)" requeue "GET /v1/jobs/ID/attempts: what each came after"
is "$(printf '%s' "$at" | json_get attempts.1.log_offsets.0)" 6 \
    "and where its output begins in the log (after the 6 bytes of 'out-0\\n')"
ok "it is cancelled" sluice cancel "$j"
ok "and ends" wait_state "$j" Cancelled 20
i=0
while kill -0 "$lp" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
wait "$lp"; rc=$?
is "$rc" 0 "logs -f ends with the job"
is "$(sed -n 1p "$SLUICE_TMP/fo")" out-0 "logs -f printed the first attempt as it ran (one attempt then: no header)"
like "$(sed -n 2p "$SLUICE_TMP/fo")" "^$(printf "$hdr" 1 ', after requeue')\$" \
    "then the second attempt's header as it started"
is "$(sed -n 3p "$SLUICE_TMP/fo")" out-1 "then its output"

# The attempts' starts are stored: a restarted sluiced shows the same.
ok "sluiced restarts" restart_sluiced
is "$(sluice logs "$j" | grep -c '^==> attempt')" 2 "after a restart the log still shows two attempts"
is "$(sluice logs --attempt 1 "$j")" "out-1" "and --attempt 1 the second alone"

done_testing
