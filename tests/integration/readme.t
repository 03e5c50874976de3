#!/bin/sh
# The README's quickstart, as written and in order: the commands between
# <!-- quickstart:begin --> and <!-- quickstart:end --> in README.md run
# against a sluiced started as `make run` starts it (scripts/run-dev.sh:
# the demo's fake GPUs and examples/demo-teams.yaml), in a directory where
# build/, examples/ and .sluice/ are this build, the repository's examples
# and the daemon's data directory. Each command is checked against what
# its comment says; a command this test does not know fails it, so the
# README cannot change without the test.
. "$(dirname "$0")/../lib.sh"

REPO=$(cd "$(dirname "$0")/../.." && pwd)
FAKE_GPUS=4xH100,4xA100-80GB
start_sluiced || bail "sluiced starts"
sluice apply -f "$REPO/examples/demo-teams.yaml" >/dev/null || bail "the demo teams apply"

W=$SLUICE_TMP/quickstart
mkdir -p "$W" || bail "scratch directory"
ln -s "$SLUICE_BIN" "$W/build" && ln -s "$REPO/examples" "$W/examples" &&
    ln -s "$SLUICE_TMP/data" "$W/.sluice" || bail "scratch links"
URL=$SLUICE_SERVER
unset SLUICE_SERVER SLUICE_TOKEN

# One command per line: continuation lines joined, blank lines dropped.
CMDS=$SLUICE_TMP/quickstart.cmds
awk '/<!-- quickstart:begin -->/ {on = 1; next}
     /<!-- quickstart:end -->/ {on = 0}
     on && /^```/ {next}
     on {
         if (sub(/\\$/, "")) { acc = acc $0; next }
         line = acc $0; acc = ""
         if (line ~ /[^ ]/) print line
     }' "$REPO/README.md" >"$CMDS"
ok "README.md has a quickstart between the markers" test -s "$CMDS"

state() { sluice show "$1" -o json 2>/dev/null | json_get state; }
queue_field() { # QUEUE FIELD: .FIELD.gpus of the queue in `queues -o json`
    sluice queues -o json | python3 -c 'import json,sys
q = [x for x in json.load(sys.stdin) if x["name"] == sys.argv[1]][0]
print(int(q[sys.argv[2]].get("gpus", 0)))' "$1" "$2"
}
wait_for() { # TIMEOUT_S CMD...: until CMD succeeds
    _wf_end=$(($(date +%s) + $1)); shift
    until "$@"; do
        [ "$(date +%s)" -ge "$_wf_end" ] && return 1
        sleep 0.2
    done
}
preempted_back() { # JOB: Pending again, with a preemption counted
    sluice show "$1" -o json | python3 -c 'import json,sys
j = json.load(sys.stdin)
sys.exit(0 if j["state"] == "Pending" and j.get("preemptions", 0) >= 1 else 1)'
}

n=0
while IFS= read -r line; do
    n=$((n + 1))
    cmd=$(printf '%s' "$line" | sed 's/[[:space:]]\{1,\}# .*$//')
    # what must hold before the step (the README's "after a moment")
    case "$cmd" in
    "build/sluice run --team nlp --gpus 4 -- sleep 600")
        ok "the gang of job 2 has finished before job 3" wait_state 2 Succeeded 30 ;;
    "build/sluice show 5")
        ok "job 5 is back in line after its preemption" wait_for 45 preempted_back 5 ;;
    esac
    case "$cmd" in
    export\ SLUICE_SERVER=http://127.0.0.1:8470)
        export SLUICE_SERVER="$URL"
        pass "step $n: SLUICE_SERVER (the test's port instead of 8470)"
        continue ;;
    export*)
        out=$(cd "$W" && eval "$cmd" && printf '%s' "$SLUICE_TOKEN") || out=""
        export SLUICE_TOKEN="$out"
        like "$(sluice whoami 2>&1)" "admin" "step $n: the admin token from .sluice/admin.token works"
        continue ;;
    esac
    out=$(cd "$W" && eval "$cmd" 2>&1); rc=$?
    is "$rc" 0 "step $n exits 0: $cmd" || diag "$out"
    case "$cmd" in
    "build/sluice run --gpus 1 -- sh -c 'echo \"I see GPU \$CUDA_VISIBLE_DEVICES\"; sleep 5'")
        is "$out" 1 "  it prints job id 1" ;;
    "build/sluice jobs")
        like "$out" "^ *1 .*(Pending|Running)" "  job 1 is listed, pending or running" ;;
    "build/sluice show 1")
        like "$out" "State: *(Pending|Running)" "  its state" ;;
    "build/sluice logs 1 -f")
        like "$out" "^I see GPU [0-9]+$" "  the output of job 1, one GPU"
        is "$(state 1)" Succeeded "  and -f returned once it ended" ;;
    "build/sluice submit -f examples/job.yaml")
        is "$out" 2 "  job 2" ;;
    "build/sluice jobs --state all -o json")
        is "$(printf '%s' "$out" | python3 -c 'import json,sys; print(sorted(j["id"] for j in json.load(sys.stdin)))')" \
            "[1, 2]" "  both jobs" ;;
    "build/sluice jobs --user alice --queue vision --since 2h -o wide")
        like "$out" "USER.*PRIORITY" "  the wide columns" ;;
    "build/sluice nodes")
        like "$out" "$(hostname)" "  this host"
        like "$out" "H100" "  and its GPUs" ;;
    "build/sluice drain \$(hostname) --reason \"disk swap\"")
        like "$out" "drain" "  the node drains" ;;
    "build/sluice uncordon \$(hostname)")
        like "$(sluice nodes)" "$(hostname) +up" "  the node is back in service" ;;
    "build/sluice queues")
        like "$out" "nlp-research" "  the demo's queues"
        if [ "$(state 3 2>/dev/null)" = Running ]; then
            is "$(queue_field nlp-research borrowed)/$(queue_field vision used)" 1/2 \
                "  nlp-research borrows 1, vision uses 2"
        fi ;;
    "build/sluice get queues")
        like "$out" "vision" "  the queues as objects" ;;
    "build/sluice describe team default")
        like "$out" "admin" "  its users" ;;
    "build/sluice diff -f examples/demo-teams.yaml")
        like "$out" "unchanged" "  nothing would change" ;;
    "build/sluice run --team nlp --gpus 4 -- sleep 600")
        is "$out" 3 "  job 3"
        ok "  job 3 runs" wait_state 3 Running 30
        is "$(queue_field nlp-research borrowed)" 1 "  nlp-research borrows 1 GPU" ;;
    "build/sluice run --team nlp --gpus 2 -- sleep 600")
        is "$out" 4 "  job 4"
        sleep 1
        is "$(state 4)" Pending "  job 4 waits" ;;
    "build/sluice why 4")
        like "$out" "quota: queue nlp-research holds 4 of 5 GPUs; this job needs 2, over the limit by 1" \
            "  on its queue's quota (3 + 2 borrowable), with numbers" ;;
    "build/sluice hold 4")
        like "$(sluice show 4 -o json | json_get held)" "^(true|True)$" "  job 4 is held"
        is "$(state 4)" Pending "  and still Pending" ;;
    "build/sluice release 4")
        like "$(sluice show 4 -o json | json_get held)" "^(false|False)$" "  job 4 is held no more"
        like "$(sluice why 4)" "quota: queue nlp-research" "  and waits on its quota again" ;;
    "build/sluice update 3 --max-runtime 2h")
        like "$(sluice show 3)" "Max runtime: +2h" "  job 3's limit is 2h" ;;
    "build/sluice run --priority best-effort --gpus 4 -- sleep 600")
        is "$out" 5 "  job 5"
        ok "  job 5 runs on the idle GPUs" wait_state 5 Running 30 ;;
    "build/sluice run --team vision --gpus 2 -- sleep 600")
        is "$out" 6 "  job 6"
        ok "  job 6 runs" wait_state 6 Running 60
        is "$(state 3)" Running "  the borrower job 3 keeps running" ;;
    "build/sluice show 5")
        like "$out" "State: *Pending" "  job 5 is pending"
        like "$out" "preempt" "  its preempt event" ;;
    "build/sluice cancel 3 4 5 6")
        like "$out" "cancel.* 4" "  one line per job"
        for j in 3 4 5 6; do
            ok "  job $j ends cancelled" wait_state "$j" Cancelled 60
        done ;;
    "build/sluice report --by team")
        like "$out" "GPU-HOURS" "  the report's columns"
        like "$out" "nlp" "  a line for nlp" ;;
    "build/sluice report --by user --period day -o csv")
        like "$out" "^key,period,jobs,gpu_hours," "  a CSV header"
        like "$out" "^admin,[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z,[0-9]+," "  a row per user and day" ;;
    "build/sluice report --utilisation")
        like "$out" "CONSERVED" "  allocated + idle = capacity" ;;
    "build/sluice budgets")
        like "$out" "vision-monthly" "  the demo's budgets" ;;
    "build/sluice sim --nodes examples/traces/openb_node_list_gpu_node.sample.csv "*)
        ok "  the trace sample is in the repository" \
            test -f "$REPO/examples/traces/openb_pod_list_default.sample.csv"
        is "$(printf '%s' "$out" | python3 -c 'import json,sys; d = json.load(sys.stdin); print("ok" if d else "")')" \
            ok "  a JSON summary" ;;
    *)
        fail "step $n: no check for this README command (update readme.t): $cmd" ;;
    esac
done <"$CMDS"
ok "every step ran ($n)" test "$n" -ge 20
stop_sluiced
is "$?" 0 "sluiced stops cleanly"
done_testing
