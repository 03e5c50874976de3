#!/bin/sh
# slurm_stage.t - staged successors on a real Slurm (tests/slurm/lab.sh),
# sluiced --slurm-stage on (docs/decisions/0010): while one queue's jobs
# fill the cluster, its next jobs wait in Slurm behind them, pinned to
# their GPUs with --dependency=afterok, and `sluice why` says so; a job
# that completes hands its GPUs to its successor inside Slurm (the same
# Slurm job runs, on the same node and GPUs); a predecessor that fails or
# is stopped hands nothing over (its successor is placed anew and runs
# once); a staged job cannot be updated; one cancelled never runs;
# another team's job revokes the staging, and fair share decides as
# without it; sluiced killed with -9 while a successor starts adopts it.
# Skips when not root or without Slurm and munge. About 2 minutes.

. "$(dirname "$0")/../lib.sh"
. "$SLUICE_REPO/tests/slurm/lab.sh"

lab_test_start stg

FAKE_GPUS=none
start_sluiced --executor slurm --slurm-partition main --slurm-output-dir "$LAB_SHARED" \
    --slurm-jobcomp "$LAB_JOBCOMP" --slurm-poll 250ms --slurm-stage on ||
    bail "sluiced starts with --slurm-stage on"
S=$LAB_SHARED

# sids JOB: the Slurm job ids of a Sluice job's first attempt, oldest first.
sids() {
    squeue -h -t all --name="sluice-$1-0" -o %i 2>/dev/null | sed 's/+.*//' | sort -n -u |
        tr '\n' ' ' | sed 's/ $//'
}

# placed JOB: "node:gpu,gpu" of its task, from Sluice.
placed() {
    sluice show "$1" -o json | python3 -c 'import json, sys
p = json.load(sys.stdin)["placement"][0]
print("%s:%s" % (p["node"], ",".join(str(g) for g in p["gpus"])))'
}

# behind JOB: the job it is staged behind, from sluice why ("" when none).
behind() {
    sluice why "$1" 2>/dev/null | sed -n 's/.*staged behind job \([0-9]*\).*/\1/p' | head -1
}

# wait_behind JOB: until it is staged (10 s).
wait_behind() {
    _wb=0
    while [ -z "$(behind "$1")" ] && [ "$_wb" -lt 100 ]; do
        sleep 0.1
        _wb=$((_wb + 1))
    done
    [ -n "$(behind "$1")" ]
}

# runs NAME: how many times job NAME's command ran.
runs() {
    [ -f "$S/$1.runs" ] && wc -l <"$S/$1.runs" | tr -d ' ' || echo 0
}

# hold NAME: a job of 8 GPUs (a node) that waits for $S/NAME.go, exits
# with the code in that file; counts its runs.
hold() {
    sluice run --name "$1" --gpus 8 --cpus 1 --memory 64Mi -- sh -c \
        "echo ran >> '$S/$1.runs'; while [ ! -e '$S/$1.go' ]; do sleep 0.1; done; exit \$(cat '$S/$1.go')"
}

go() { echo "${2:-0}" >"$S/$1.tmp" && mv "$S/$1.tmp" "$S/$1.go"; }

# ---- staged behind the running jobs, handed over on completion ------------
p1=$(hold p1); p2=$(hold p2); p3=$(hold p3)
ok "three 8-GPU jobs fill the lab" wait_state "$p3" Running 30
s1=$(hold s1); s2=$(hold s2); s3=$(hold s3)
ok "the queue's next job is staged" wait_behind "$s1"
ok "..." wait_behind "$s2"
ok "..." wait_behind "$s3"
is "$(sluice show "$s1" -o json | json_get state)" Pending "a staged job is Pending in Sluice"
b1=$(behind "$s1")
like "$b1" "^($p1|$p2|$p3)\$" "sluice why: staged behind one of the running jobs ($b1)"
like "$(sluice why "$s1")" "starts on its resources the moment it completes" \
    "and says what that means"
is "$(printf '%s\n' "$(behind "$s1")" "$(behind "$s2")" "$(behind "$s3")" | sort -u | wc -l | tr -d ' ')" 3 \
    "each behind a different job"
i=0
while [ -z "$(sids "$s1")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
st1=$(sids "$s1")
like "$st1" '^[0-9]+$' "it has one Slurm job ($st1)"
is "$(squeue -h -j "$st1" -o '%T %r' 2>/dev/null)" "PENDING Dependency" \
    "pending in Slurm on its dependency"
like "$(scontrol show job -o "$st1" 2>/dev/null)" "Dependency=afterok:" "afterok on its predecessor"
where1=$(placed "$b1")
name1=$(sluice show "$b1" -o json | json_get name)
go "$name1" 0
ok "its predecessor ($name1) succeeds" wait_state "$b1" Succeeded 30
ok "the staged job runs" wait_state "$s1" Running 30
is "$(placed "$s1")" "$where1" "on its predecessor's node and GPUs ($where1)"
is "$(sids "$s1")" "$st1" "as the Slurm job staged ($st1): nothing submitted again"
go s1 0
ok "and succeeds" wait_state "$s1" Succeeded 30
is "$(runs s1)" 1 "having run once"

# ---- a predecessor that fails hands nothing over ---------------------------
b2=$(behind "$s2")
name2=$(sluice show "$b2" -o json | json_get name)
st2=$(sids "$s2")
go "$name2" 3
ok "a predecessor ($name2) fails" wait_state "$b2" Failed 30
i=0
while [ -n "$(behind "$s2")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
is "$(behind "$s2")" "" "sluice why no longer says staged"
ok "it runs, placed anew" wait_state "$s2" Running 30
like "$(sids "$s2")" "^$st2 [0-9]+\$" "as a new Slurm job (the staged one, $st2, never started)"
like "$(lab_jobcomp "$st2")" "JobState=CANCELLED" "the staged one was cancelled"
go s2 0
ok "it succeeds" wait_state "$s2" Succeeded 30
is "$(runs s2)" 1 "having run once"

# ---- a staged job cancelled never runs ---------------------------------------
b3=$(behind "$s3")
name3=$(sluice show "$b3" -o json | json_get name)
st3=$(sids "$s3")
out=$(sluice update "$s3" --gpus 4 2>&1)
is "$?" 2 "an update of a staged job's GPUs is refused (exit 2)"
like "$out" "staged in the executor behind job $b3" "it says it is staged: cancel it instead"
ok "cancel a staged job" sluice cancel "$s3"
ok "it is Cancelled" wait_state "$s3" Cancelled 10
i=0
while squeue -h -j "$st3" -t pending 2>/dev/null | grep -q . && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
is "$(squeue -h -j "$st3" -t pending 2>/dev/null)" "" "its Slurm job ($st3) no longer waits"
go "$name3" 0
ok "its predecessor succeeds" wait_state "$b3" Succeeded 30
sleep 1
is "$(runs s3)" 0 "the cancelled job never ran"

# ---- another team's job revokes the staging --------------------------------
cat >"$S/other.yaml" <<'YAML'
apiVersion: sluice/v1
kind: Team
metadata: {name: other}
spec: {defaultQueue: other}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: other}
spec: {team: other, nominal: {gpus: 24}}
YAML
ok "apply a second team" sluice apply -f "$S/other.yaml"
q1=$(hold q1); q2=$(hold q2); q3=$(hold q3)
ok "three jobs fill the lab again" wait_state "$q3" Running 30
r1=$(hold r1)
ok "the queue's next is staged" wait_behind "$r1"
str1=$(sids "$r1")
o1=$(sluice run --team other --name o1 --gpus 8 --cpus 1 --memory 64Mi -- sh -c \
    "while [ ! -e '$S/o1.go' ]; do sleep 0.1; done")
i=0
while [ -n "$(behind "$r1")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
is "$(behind "$r1")" "" "another team's job waiting: the staging is revoked"
i=0
while [ -z "$(lab_jobcomp "$str1")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
like "$(lab_jobcomp "$str1")" "JobState=CANCELLED" "its Slurm job ($str1) cancelled before it ran"
go q1 0
ok "when a job ends, the other team's job runs first (its share is 0)" wait_state "$o1" Running 30
is "$(sluice show "$r1" -o json | json_get state)" "Pending" "the revoked one waits its turn"
go o1; go q2; go q3
ok "then it runs" wait_state "$r1" Running 30
go r1 0
ok "and succeeds" wait_state "$r1" Succeeded 30
is "$(runs r1)" 1 "having run once"

# ---- sluiced killed with -9 while a successor starts --------------------------
k1=$(hold k1); k2=$(hold k2); k3=$(hold k3)
ok "three jobs fill the lab once more" wait_state "$k3" Running 30
t1=$(hold t1)
ok "a job is staged behind one of them" wait_behind "$t1"
bt=$(behind "$t1")
namet=$(sluice show "$bt" -o json | json_get name)
i=0
while [ -z "$(sids "$t1")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
stt1=$(sids "$t1")
kill9_sluiced
go "$namet" 0
lab_wait_state "$stt1" RUNNING 30 || fail "Slurm starts the staged job while sluiced is down"
i=0
while [ "$(runs t1)" = 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
restart_sluiced || bail "sluiced restarts"
ok "the successor that started meanwhile is Running" wait_state "$t1" Running 20
is "$(sids "$t1")" "$stt1" "as the Slurm job staged ($stt1)"
like "$(sluice show "$t1" -o json | json_get message)" "started behind job $bt while sluiced was down" \
    "saying so"
ok "its predecessor succeeded" wait_state "$bt" Succeeded 20
go t1 0
ok "it succeeds" wait_state "$t1" Succeeded 30
is "$(runs t1)" 1 "having run once"
go k1; go k2; go k3

stop_sluiced
is "$?" 0 "sluiced stops cleanly"
done_testing
