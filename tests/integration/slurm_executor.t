#!/bin/sh
# slurm_executor.t - sluiced with the Slurm executor on a real Slurm
# (three slurmd on this machine, tests/slurm/lab.sh, 8 GPU devices each):
# the nodes, their GPUs, models and domains come from Slurm; a job runs as
# one Slurm job pinned to exactly the node and GPU indices Sluice decided
# (Slurm's own allocation read back), a fraction as shards of exactly its
# GPU, a gang on one node and one over two nodes with each task told its
# own GPUs; the job runs as its user, its output followed while it runs
# (sluice logs -f); exit codes, cancel and maxRuntime end
# it as with the local executor; sluiced killed with -9 adopts the Slurm
# job that still runs and learns the exit code of the one that ended
# meanwhile; a drained node takes no new job and `sluice why` names it and
# its reason; a node set DOWN under a job makes the job lost and retried
# elsewhere; preemption sends the checkpoint signal through Slurm; quotas
# and a cohort of two teams hold as with the local executor; a requeue
# with --hold goes through the checkpoint signal and waits held until
# released, then runs as the next attempt, its output in the log under a
# header of its own (sluice logs, --attempt); a pending job updated to
# fewer GPUs runs in Slurm with them; an end comes from the jobcomp file's
# tail without waiting for a poll; an interactive job is refused at
# submission, naming spec.interactive; jobs of one node go through
# Slurm's C API, and one Slurm refuses fails with its words. Skips when
# not root or without Slurm and munge. About 2 minutes.

. "$(dirname "$0")/../lib.sh"
. "$SLUICE_REPO/tests/slurm/lab.sh"

lab_test_start slx

FAKE_GPUS=none
# a variable of sluiced's own environment, which no job may see
SLX_DAEMON_ONLY=daemon-secret
export SLX_DAEMON_ONLY
start_sluiced --executor slurm --slurm-partition main --slurm-output-dir "$LAB_SHARED" \
    --slurm-jobcomp "$LAB_JOBCOMP" --slurm-poll 250ms ||
    bail "sluiced starts with the Slurm executor"
unset SLX_DAEMON_ONLY
S=$LAB_SHARED

# sid JOB [ATTEMPT]: the Slurm job id of a Sluice job's attempt.
sid() {
    squeue -h -t all --name="sluice-$1-${2:-0}" -o %i 2>/dev/null | sed 's/+.*//' | sort -u | head -1
}

# gres SID: the GRES details of a Slurm job, one line per component
# ("n2 gpu:g3:1(IDX:3),gpu:g5:1(IDX:5)").
gres() {
    scontrol show job -d -o "$1" 2>/dev/null |
        sed -n 's/.* Nodes=\([^ ]*\) .* GRES=\([^ ]*\).*/\1 \2/p'
}

# placed JOB: "node:gpu,gpu" of each task, one line each, from Sluice.
placed() {
    sluice show "$1" -o json | python3 -c 'import json, sys
for p in json.load(sys.stdin)["placement"]:
    print("%s:%s" % (p["node"], ",".join(str(g) for g in p["gpus"])))'
}

# explain JOB...: after a failed check, what Sluice and Slurm say of the
# jobs, and the daemon's last lines, as diagnostics.
explain() {
    for _x in "$@"; do
        diag "--- sluice show $_x ---" "$(sluice show "$_x" 2>&1)" \
            "--- sluice why $_x ---" "$(sluice why "$_x" 2>&1)"
    done
    diag "--- squeue ---" "$(squeue -h -t all -o '%i %j %T %R' 2>&1 | tail -20)"
    sluiced_log_tail 40
}

# wait_file PATH [TIMEOUT_S]
wait_file() {
    _wf=0
    while [ ! -s "$1" ] && [ "$_wf" -lt $((${2:-20} * 10)) ]; do
        sleep 0.1
        _wf=$((_wf + 1))
    done
    [ -s "$1" ]
}

# ---- nodes from Slurm ------------------------------------------------------
nodes=$(sluice nodes -o json)
is "$(printf '%s' "$nodes" | python3 -c 'import json, sys
ns = json.load(sys.stdin)
print(" ".join("%s/%d/%s/%s/%s" % (n["name"], len(n["gpus"]), n["gpus"][0]["model"],
      n.get("domain"), n["gpus"][0].get("source", n.get("gpu_source"))) for n in ns))')" \
    "n1/8/H100/rack1/slurm n2/8/H100/rack1/slurm n3/8/H100/rack2/slurm" \
    "sluice nodes: Slurm's three nodes, 8 GPUs each, model and domain from their features"

# ---- exact placement -------------------------------------------------------
j=$(sluice run --name whole --gpus 2 --cpus 1 --memory 64Mi -- sh -c \
    'echo "uid=$(id -u) gpus=$SLUICE_GPUS cvd=$CUDA_VISIBLE_DEVICES job=$SLURM_JOB_ID"
     echo "home=$HOME user=$USER logname=$LOGNAME shell=$SHELL daemon=${SLX_DAEMON_ONLY:-none} login_env=${SLURM_GET_USER_ENV:-none} export=${SLURM_EXPORT_ENV:-none} own=$(env | grep -c "^SLUICE_TASK_SCRIPT=\|^sl_")"
     for g in 0 1 2 3 4 5 6 7; do
         if cat "'"$LAB_DEV"'/nvidia$g" 2>/dev/null; then :; fi
         cat "'"$LAB_DEV"'/nvidia$g" 2>&1 | grep -q "Operation not permitted" && echo "denied $g"
     done; sleep 2')
like "$j" '^[0-9]+$' "a 2-GPU job is submitted"
ok "it runs" wait_state "$j" Running 20
i=0
while [ -z "$(gres "$(sid "$j")")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
want=$(placed "$j")
got=$(gres "$(sid "$j")")
diag "Sluice placed $want; Slurm holds $got"
node=${want%%:*}
gpus=${want#*:}
g1=${gpus%,*}
g2=${gpus#*,}
is "$got" "$node gpu:g$g1:1(IDX:$g1),gpu:g$g2:1(IDX:$g2)" \
    "Slurm holds exactly the node and GPU indices Sluice decided"
ok "it succeeds" wait_state "$j" Succeeded 20
log=$(sluice logs "$j")
like "$log" "uid=65534 gpus=$gpus " "it ran as nobody (the admin's unmapped account), told SLUICE_GPUS=$gpus"
nobody_home=$(getent passwd nobody | cut -d: -f6)
nobody_shell=$(getent passwd nobody | cut -d: -f7)
like "$log" "home=$nobody_home user=nobody logname=nobody shell=$nobody_shell " \
    "HOME, USER, LOGNAME and SHELL are its account's, as with the local executor"
like "$log" " daemon=none " "sluiced's own environment does not reach the job"
like "$log" " login_env=none export=none" \
    "slurmd is not asked to load a login environment (no su per job: sbatch --export=ALL of a clean environment)"
like "$log" " own=0\$" "none of the batch script's own variables reaches a one-task job (its task runs in the script's shell)"
if [ "$LAB_CGROUP" = 1 ]; then
    like "$log" "cvd=0,1 " "CUDA_VISIBLE_DEVICES is Slurm's renumbering under ConstrainDevices"
    is "$(printf '%s\n' "$log" | grep -c '^denied')" 6 \
        "Slurm's device cgroup denies the node's 6 other GPUs"
else
    like "$log" "cvd=$gpus " "CUDA_VISIBLE_DEVICES names its GPUs"
    pass "# SKIP no device cgroup on this host (LAB_CGROUP=0)"
fi

j=$(sluice run --name half --gpu-milli 500 --cpus 1 --memory 64Mi -- sh -c \
    "echo \"gpus=\$SLUICE_GPUS\"; while [ ! -e '$S/half.done' ]; do sleep 0.1; done")
ok "a half-GPU job runs" wait_state "$j" Running 20
i=0
while ! gres "$(sid "$j")" | grep -q IDX && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
want=$(placed "$j")
is "$(gres "$(sid "$j")")" "${want%%:*} shard:g${want#*:}:500(IDX:${want#*:})" \
    "Slurm holds 500 of the 1000 shards of exactly the GPU Sluice decided"
touch "$S/half.done"
ok "it succeeds" wait_state "$j" Succeeded 20

# ---- gangs ----------------------------------------------------------------
task_line='echo "task=$SLUICE_TASK_INDEX node=$SLURMD_NODENAME gpus=$SLUICE_GPUS cvd=$CUDA_VISIBLE_DEVICES job=$SLUICE_JOB_ID user=$USER"; sleep 1'
j=$(sluice run --name gang1 --tasks 2 --gpus 4 --cpus 1 --memory 64Mi --topology same-node -- sh -c "$task_line")
ok "a gang of two 4-GPU tasks on one node succeeds" wait_state "$j" Succeeded 30
p0=$(placed "$j" | sed -n 1p)
p1=$(placed "$j" | sed -n 2p)
l0=$(sluice logs "$j" --task 0)
l1=$(sluice logs "$j" --task 1)
like "$l0" "task=0 node=${p0%%:*} gpus=${p0#*:} " "task 0 ran on its node, told its own GPUs"
like "$l1" "task=1 node=${p1%%:*} gpus=${p1#*:} " "task 1 too"
like "$l1" " job=$j user=nobody" "srun passes the job's environment to each task of a gang"
c0=$(printf '%s' "$l0" | sed -n 's/.*cvd=\([^ ]*\).*/\1/p')
c1=$(printf '%s' "$l1" | sed -n 's/.*cvd=\([^ ]*\).*/\1/p')
ok "each task's CUDA_VISIBLE_DEVICES holds 4 GPUs, not the other task's" \
    python3 -c 'import sys
a, b = (set(x.split(",")) for x in sys.argv[1:])
sys.exit(0 if len(a) == 4 and len(b) == 4 and not a & b else 1)' "$c0" "$c1"

j=$(sluice run --name gang2 --tasks 2 --gpus 8 --cpus 1 --memory 64Mi -- sh -c "$task_line")
ok "a gang of two 8-GPU tasks, one per node, succeeds" wait_state "$j" Succeeded 30
p0=$(placed "$j" | sed -n 1p)
p1=$(placed "$j" | sed -n 2p)
isnt_same=$([ "${p0%%:*}" != "${p1%%:*}" ] && echo yes)
is "$isnt_same" yes "its tasks were placed on two nodes"
like "$(sluice logs "$j" --task 0)" "task=0 node=${p0%%:*} " "task 0 ran on ${p0%%:*}"
like "$(sluice logs "$j" --task 1)" "task=1 node=${p1%%:*} " "task 1 ran on ${p1%%:*}"

# ---- lifecycle ------------------------------------------------------------
j=$(sluice run --name three --gpus 1 --cpus 1 --memory 64Mi -- sh -c 'exit 3')
ok "a job that exits 3 fails" wait_state "$j" Failed 20
is "$(sluice show "$j" -o json | json_get exit_code)" 3 "with exit code 3, from Slurm"

# ---- interactive jobs: the local executor's alone (docs/slurm.md) -------------
out=$(sluice run -i --name shell --cpus 1 --memory 64Mi -- sh </dev/null 2>&1)
is "$?" 2 "an interactive job (sluice run -i) is refused on the Slurm executor (400)"
like "$out" "spec.interactive: the slurm executor runs no interactive job" \
    "naming spec.interactive and saying why"
is "$(sluice jobs --state all -o json | python3 -c 'import json, sys
print(sum(j["name"] == "shell" for j in json.load(sys.stdin)))')" 0 "and no job was created"

# ---- submission through Slurm's C API ----------------------------------------
# The lab's slurm.conf is a file sluiced can read, and no --slurm-bin is
# given: jobs of one node go through libslurm, a gang over nodes through
# sbatch (above). A job Slurm refuses ends with Slurm's own words.
if [ -f /usr/include/slurm/slurm_version.h ]; then
    ok "jobs of one node are submitted through Slurm's C API (libslurm)" \
        grep -q "jobs are submitted through Slurm's C API" "$SLUICE_TMP/sluiced.log"
else
    diag "built without Slurm's headers (libslurm-dev): jobs are submitted with sbatch"
fi
scontrol update partitionname=main state=inactive
j=$(sluice run --name refused --gpus 1 --cpus 1 --memory 64Mi -- true)
ok "a job Slurm refuses (its partition inactive) fails" wait_state "$j" Failed 20
scontrol update partitionname=main state=up
like "$(sluice show "$j" -o json | json_get message)" "Slurm refused the job: .*[Pp]artition" \
    "with Slurm's reason, from the API"

# ---- job arrays -------------------------------------------------------------
j=$(sluice run --name arr --array '4,6' --cpus 1 --memory 64Mi -- \
    sh -c 'echo "index=$SLUICE_ARRAY_INDEX array=$SLUICE_ARRAY_JOB_ID count=$SLUICE_ARRAY_TASK_COUNT"')
ok "an array's second element succeeds on Slurm" wait_state "$((j + 1))" Succeeded 30
is "$(sluice logs "$((j + 1))")" "index=6 array=$j count=2" \
    "an array element sees SLUICE_ARRAY_INDEX, _JOB_ID and _TASK_COUNT in Slurm's batch script"

j=$(sluice run --name talk --gpus 1 --cpus 1 --memory 64Mi -- sh -c \
    "echo hello; while [ ! -e '$S/bye' ]; do sleep 0.1; done; echo bye")
ok "a job that talks runs" wait_state "$j" Running 20
i=0
until sluice logs "$j" 2>/dev/null | grep -q hello || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
is "$(sluice logs "$j")" hello "sluice logs shows its output while it runs (Slurm writes it to the shared directory)"
timeout 30 "$SLUICE_BIN/sluice" logs -f "$j" >"$S/follow.out" 2>&1 &
fpid=$!
sleep 1
touch "$S/bye"
wait "$fpid"
is "$?" 0 "sluice logs -f ends when the job ends"
is "$(cat "$S/follow.out")" "hello
bye" "having followed its output to the end"

j=$(sluice run --name long --gpus 1 --cpus 1 --memory 64Mi -- sleep 300)
ok "a long job runs" wait_state "$j" Running 20
i=0
while [ -z "$(sid "$j")" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
s=$(sid "$j")
ok "cancel it" sluice cancel "$j"
ok "it ends Cancelled" wait_state "$j" Cancelled 20
# Slurm says CANCELLED, or FAILED when the SIGTERM ended it before the kill
like "$(lab_state "$s")" '^(CANCELLED|FAILED|)$' "and its Slurm job $s ended"

j=$(sluice run --name slow --gpus 1 --cpus 1 --memory 64Mi --max-runtime 2s -- sleep 300)
ok "a job over its 2 s maxRuntime is stopped and ends Timeout" wait_state "$j" Timeout 30
like "$(sluice show "$j" -o json | json_get message)" 'maxRuntime' "saying maxRuntime"
is "$(sluice show "$j" -o json | json_get exit_code)" 143 "its exit code kept (SIGTERM: 143)"

# ---- where and with what a job starts: spec.workdir, --export ---------------
mkdir -p "$S/wd" && chmod 0755 "$S/wd"
printf '#!/bin/sh\necho "pwd=$(pwd) v=${WD_VAR:-unset} home=$HOME"\n' >"$S/wd/run.sh"
chmod 0755 "$S/wd/run.sh"
j=$(cd "$S/wd" && WD_VAR=yes HOME=/client-home sluice run --name wd --gpus 1 --cpus 1 --memory 64Mi -- ./run.sh)
ok "a job run from a directory succeeds under Slurm" wait_state "$j" Succeeded 30
like "$(sluice logs "$j")" "^pwd=$S/wd v=yes home=/" \
    "it starts in its spec.workdir with the exported variable, not the client's HOME"
is "$(sluice logs "$j" | grep -c client-home)" 0 "(the client's HOME stays the client's)"
j=$(sluice run --name nowd --chdir /sluice-no-such-dir --gpus 1 --cpus 1 --memory 64Mi -- pwd)
ok "a job whose workdir does not exist fails under Slurm" wait_state "$j" Failed 30
is "$(sluice show "$j" -o json | json_get exit_code)" 127 "with exit code 127"
like "$(sluice logs "$j")" "sluice: spec.workdir: cannot enter /sluice-no-such-dir as " \
    "and its log names spec.workdir, never running elsewhere"

# ---- sluiced killed with -9 while Slurm runs its jobs ----------------------
a=$(sluice run --name survivor --gpus 1 --cpus 1 --memory 64Mi -- sh -c \
    "while [ ! -e '$S/release' ]; do sleep 0.1; done; exit 4")
b=$(sluice run --name quick --gpus 1 --cpus 1 --memory 64Mi -- sh -c \
    "while [ ! -e '$S/go' ]; do sleep 0.1; done; echo done > '$S/quick.done'; exit 5")
ok "two jobs run" wait_state "$a" Running 20
ok "..." wait_state "$b" Running 20
sa=$(sid "$a")
i=0
while [ -z "$(sid "$b")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sb=$(sid "$b")
kill9_sluiced
go_ms=$(date +%s%3N)
touch "$S/go"
ok "one ends while sluiced is down" wait_file "$S/quick.done" 20
# down until Slurm has forgotten it (MinJobAge $LAB_MIN_JOB_AGE s): its end
# is then only in the jobcomp file
i=0
while squeue -h -t all -j "$sb" 2>/dev/null | grep -q . && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
done
ok "Slurm forgets it while sluiced is down (squeue -j $sb is empty)" \
    [ -z "$(squeue -h -t all -j "$sb" 2>/dev/null)" ]
restart_sluiced || bail "sluiced restarts"
is "$(sluice show "$a" -o json | json_get state)" Running "the one still running is adopted: Running"
is "$(sid "$a")" "$sa" "as the same Slurm job $sa"
ok "the one that ended meanwhile is Failed" wait_state "$b" Failed 20
is "$(sluice show "$b" -o json | json_get exit_code)" 5 "with its exit code (5) from the jobcomp file"
# Its usage interval runs to Slurm's EndTime (whole seconds, counted to
# the end of its second; the job's end and Slurm's teardown take up to
# about a second more), not to when the restarted sluiced learnt of the
# end, MinJobAge and slurmctld's purge (7 s and more) later.
b_start=$(sluice show "$b" -o json | json_get started_at)
ran=$(sluice report --by job --from 2020-01-01 -o json | python3 -c 'import json, sys, datetime
start = datetime.datetime.fromisoformat(sys.argv[2].replace("Z", "+00:00")).timestamp()
row = [r for r in json.load(sys.stdin) if str(r["key"]) == sys.argv[3]] + [{"gpu_hours": 0}]
print("%d %d" % (row[0]["gpu_hours"] * 3600000, int(sys.argv[1]) - start * 1000))' "$go_ms" "$b_start" "$b")
within() { [ "$1" -gt 0 ] && [ "$1" -le "$2" ]; }
ok "its usage ends when Slurm says it ended (${ran% *} ms of GPU time; ${ran#* } ms from start to its end)" \
    within "${ran% *}" $((${ran#* } + 3500))
touch "$S/release"
ok "the adopted one fails when it exits" wait_state "$a" Failed 20
is "$(sluice show "$a" -o json | json_get exit_code)" 4 "with its exit code (4)"

# ---- drain, down -----------------------------------------------------------
# fill n1 and n2, so that the next 8-GPU job can go only to n3
f1=$(sluice run --name fill1 --gpus 8 --cpus 1 --memory 64Mi -- sh -c "while [ ! -e '$S/unfill' ]; do sleep 0.1; done")
f2=$(sluice run --name fill2 --gpus 8 --cpus 1 --memory 64Mi -- sh -c "while [ ! -e '$S/unfill' ]; do sleep 0.1; done")
ok "two 8-GPU jobs run" wait_state "$f1" Running 20
ok "..." wait_state "$f2" Running 20
d=$(sluice run --name ondrained --gpus 8 --cpus 1 --memory 64Mi -- sh -c "while [ ! -e '$S/undrain' ]; do sleep 0.1; done")
ok "a third runs, on the node left" wait_state "$d" Running 20
dn=$(placed "$d" | cut -d: -f1)
i=0
while [ -z "$(sid "$d")" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
lab_wait_state "$(sid "$d")" RUNNING 20 || fail "Slurm starts it"
scontrol update nodename="$dn" state=drain reason="disk swap" || fail "scontrol drain"
i=0
until sluice nodes -o json | python3 -c 'import json, sys
sys.exit(0 if [n for n in json.load(sys.stdin) if n["name"] == sys.argv[1] and n["state"] == "draining"] else 1)' "$dn"; do
    [ $i -lt 100 ] || break
    sleep 0.1
    i=$((i + 1))
done
like "$(sluice nodes)" "$dn +draining .*disk swap" "sluice nodes: $dn draining, with Slurm's reason"
touch "$S/undrain"
ok "the job on the draining node finishes" wait_state "$d" Succeeded 20
w=$(sluice run --name waits --gpus 8 --cpus 1 --memory 64Mi -- true)
sleep 1
is "$(sluice show "$w" -o json | json_get state)" Pending "a new 8-GPU job waits: the free node is drained"
like "$(sluice why "$w")" "unschedulable \\($dn draining: disk swap" "sluice why names $dn and its reason"
like "$(sluice why "$w")" "node $dn takes work again" "and what would let it run"
scontrol update nodename="$dn" state=resume
ok "it runs once $dn is resumed" wait_state "$w" Succeeded 30

# A node drained in Slurm just before Sluice places a job there: Slurm
# holds the job (ReqNodeNotAvail) while Sluice counts it running, until
# the executor sees the node out of service, cancels it and reports it
# lost. When Sluice saw the drain first, the job waits instead.
scontrol update nodename="$dn" state=drain reason="late drain"
r=$(sluice run --name late --gpus 8 --cpus 1 --memory 64Mi -- true)
sleep 0.5
if [ "$(sluice show "$r" -o json | json_get state)" = Pending ]; then
    diag "sluiced saw the drain before it placed the job"
    like "$(sluice why "$r")" "$dn draining: late drain" "the job waits, sluice why names $dn"
    pass "# SKIP the job was not placed on the drained node"
else
    rs=$(sid "$r")
    ok "a job placed on $dn as Slurm drained it ends Lost" wait_state "$r" Lost 20
    like "$(sluice show "$r" -o json | json_get message)" \
        "lost: Slurm did not start it: ReqNodeNotAvail.*$dn" "saying Slurm would not start it on $dn"
    like "$(lab_jobcomp "$rs")" "JobState=CANCELLED" "its Slurm job $rs was cancelled"
fi
scontrol update nodename="$dn" state=resume
touch "$S/unfill"
wait_state "$f1" Succeeded 20 >/dev/null
wait_state "$f2" Succeeded 20 >/dev/null

j=$(sluice submit -f - <<YAML
apiVersion: sluice/v1
kind: Job
metadata: {name: ondown}
spec:
  command: [sh, -c, 'echo "attempt=\$SLUICE_ATTEMPT node=\$SLURMD_NODENAME"; while [ ! -e $S/up.\$SLUICE_ATTEMPT ]; do sleep 0.1; done']
  resources: {gpus: 8, cpus: 1, memory: 64Mi}
  retries: 1
YAML
)
ok "a job with one retry runs" wait_state "$j" Running 20
i=0
while [ -z "$(sid "$j")" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
lab_wait_state "$(sid "$j")" RUNNING 20 || fail "Slurm starts it"
dn=$(placed "$j" | cut -d: -f1)
scontrol update nodename="$dn" state=down reason="power" || fail "scontrol down"
i=0
until [ "$(sluice show "$j" -o json | json_get attempt)" = 1 ] || [ $i -ge 300 ]; do
    sleep 0.1
    i=$((i + 1))
done
ev=$(curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$j/events")
like "$ev" 'NODE_FAIL' "node $dn set DOWN under it: its Slurm job ended NODE_FAIL, said in its events"
is "$(sluice show "$j" -o json | json_get attempt)" 1 "and it was retried (attempt 1)"
scontrol update nodename="$dn" state=resume 2>/dev/null # ReturnToService=2 may have
touch "$S/up.1"
ok "the retry succeeds" wait_state "$j" Succeeded 30

# ---- preemption with a checkpoint signal -----------------------------------
cat >"$S/classes.yaml" <<'YAML'
apiVersion: sluice/v1
kind: PriorityClass
metadata: {name: production}
spec: {value: 1000, preemptible: false}
---
apiVersion: sluice/v1
kind: PriorityClass
metadata: {name: best-effort}
spec: {value: 0, opportunistic: true}
YAML
ok "apply production and best-effort classes" sluice apply -f "$S/classes.yaml"
v=$(sluice submit -f - <<YAML
apiVersion: sluice/v1
kind: Job
metadata: {name: victim}
spec:
  priorityClass: best-effort
  tasks: 3
  command: [sh, -c, 'trap "echo ckpt > $S/ckpt.\$SLUICE_TASK_INDEX" USR1; echo up > $S/vup.\$SLUICE_TASK_INDEX; while :; do sleep 0.1; done']
  resources: {gpus: 8, cpus: 1, memory: 64Mi}
  checkpoint: {signal: SIGUSR1, grace: 3s}
YAML
)
ok "a best-effort gang takes all 24 GPUs" wait_state "$v" Running 30
# Running in Sluice means Slurm has the job; the signal can only be caught
# once each task's shell has set its trap, so wait for all three.
victim_up() { wait_file "$S/vup.0" 30 && wait_file "$S/vup.1" 5 && wait_file "$S/vup.2" 5; }
ok "its three tasks are up, each with its trap set" victim_up
p=$(sluice run --name urgent --priority production --gpus 8 --cpus 1 --memory 64Mi -- sleep 1)
ok "its tasks receive SIGUSR1 through Slurm" wait_file "$S/ckpt.0" 20
ok "a production job preempts it and runs" wait_state "$p" "Running|Succeeded" 30
ok "the victim goes back to Pending" wait_state "$v" "Pending|Running" 5
is "$(sluice show "$v" -o json | json_get preemptions)" 1 "with one preemption counted"
sluice cancel "$v" >/dev/null
wait_state "$v" Cancelled 20 >/dev/null
wait_state "$p" Succeeded 20 >/dev/null

# ---- requeue through the checkpoint signal, then hold and release ------------
rq=$(sluice submit -f - <<YAML
apiVersion: sluice/v1
kind: Job
metadata: {name: rq}
spec:
  command: [sh, -c, 'exec 2>/dev/null; trap "echo ckpt > $S/rqckpt.\$SLUICE_ATTEMPT; exit 0" USR1; echo run-\$SLUICE_ATTEMPT; echo up > $S/rqup.\$SLUICE_ATTEMPT; while :; do sleep 0.1; done']
  resources: {gpus: 1, cpus: 1, memory: 64Mi}
  checkpoint: {signal: SIGUSR1, grace: 10s}
YAML
)
ok "a job to requeue runs" wait_state "$rq" Running 30
ok "its trap is set" wait_file "$S/rqup.0" 30
ok "sluice requeue --hold is accepted" sluice requeue --hold "$rq"
ok "it receives SIGUSR1 through Slurm" wait_file "$S/rqckpt.0" 20
ok "it is back in line, held" wait_state "$rq" Pending 30
is "$(sluice show "$rq" -o json | json_get held)" true "held: Slurm has nothing of it to start"
sleep 2
is "$(sluice show "$rq" -o json | json_get state)" Pending "with GPUs free it stays Pending"
ok "released" sluice release "$rq"
ok "it runs again" wait_state "$rq" Running 30
ok "as attempt 1" wait_file "$S/rqup.1" 30
is "$(sluice show "$rq" -o json | json_get attempt)" 1 "its attempt counter says so"
# both attempts append to OUTDIR/<id>.0.log: each has its own part of it
# (the job's stderr is /dev/null: sh says "User defined signal 1" of its sleep)
is "$(sluice logs --attempt 1 "$rq")" run-1 "logs --attempt 1: the second attempt's output alone"
is "$(sluice logs --attempt 0 "$rq")" run-0 "logs --attempt 0: the first's"
is "$(sluice logs "$rq" | sed 's/started [^,)]*/started T/')" "$(printf '%s\n' \
    '==> attempt 0 (started T) <==' run-0 '==> attempt 1 (started T, after requeue) <==' run-1)" \
    "logs: each attempt under its header, the second after the requeue"
sluice cancel "$rq" >/dev/null
wait_state "$rq" Cancelled 20 >/dev/null

# ---- quotas and a cohort of two teams ---------------------------------------
cat >"$S/teams.yaml" <<'YAML'
apiVersion: sluice/v1
kind: Team
metadata: {name: vision}
spec: {defaultQueue: vision}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: nlp}
spec: {defaultQueue: nlp}
---
apiVersion: sluice/v1
kind: Cohort
metadata: {name: pool}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: vision}
spec: {team: vision, cohort: pool, nominal: {gpus: 8}}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: nlp}
spec: {team: nlp, cohort: pool, nominal: {gpus: 8}, preemption: {reclaimWithinCohort: Any}}
YAML
ok "apply two teams whose queues of 8 GPUs share a cohort" sluice apply -f "$S/teams.yaml"
hold="while [ ! -e '$S/q.done' ]; do sleep 0.1; done"
v1=$(sluice run --team vision --name v1 --gpus 8 --cpus 1 --memory 64Mi -- sh -c "$hold")
ok "vision's first 8-GPU job runs (its nominal)" wait_state "$v1" Running 20
sleep 1.1
v2=$(sluice run --team vision --name v2 --gpus 8 --cpus 1 --memory 64Mi -- sh -c "trap 'exit 0' TERM; $hold")
ok "its second runs on nlp's idle quota (borrowed)" wait_state "$v2" Running 20
v3=$(sluice run --team vision --name v3 --gpus 8 --cpus 1 --memory 64Mi -- sh -c "$hold")
sleep 1
is "$(sluice show "$v3" -o json | json_get state)" Pending \
    "its third waits though 8 GPUs are free: the cohort has 16"
like "$(sluice why "$v3")" '(quota|cohort)' "sluice why says it is the quota"
n1=$(sluice run --team nlp --name n1 --gpus 8 --cpus 1 --memory 64Mi -- sh -c "$hold")
ok "nlp's job runs, reclaiming its quota" wait_state "$n1" Running 30 ||
    explain "$n1" "$v1" "$v2" "$v3"
is "$(sluice show "$v2" -o json | json_get preemptions)" 1 "vision's borrowed job was preempted"
is "$(sluice show "$v1" -o json | json_get state)" Running "its job within nominal kept running"
touch "$S/q.done"
sluice cancel "$v1" "$v2" "$v3" "$n1" >/dev/null 2>&1
for x in "$v1" "$v2" "$v3" "$n1"; do wait_state "$x" 'Cancelled|Succeeded|Failed' 30 >/dev/null; done

# ---- fair share across two teams -------------------------------------------
# Two queues whose quota does not bind (24 GPUs each, no cohort): only their
# dominant shares order them. heavy fills the cluster and queues three more;
# light's one job, submitted last, runs first when a GPU set frees.
cat >"$S/fair.yaml" <<'YAML'
apiVersion: sluice/v1
kind: Team
metadata: {name: heavy}
spec: {defaultQueue: heavy}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: light}
spec: {defaultQueue: light}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: heavy}
spec: {team: heavy, nominal: {gpus: 24}}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: light}
spec: {team: light, nominal: {gpus: 24}}
YAML
ok "apply two teams whose queues' quota does not bind" sluice apply -f "$S/fair.yaml"
for k in 1 2 3 4 5 6; do
    eval "h$k=\$(sluice run --team heavy --name h$k --gpus 8 --cpus 1 --memory 64Mi -- sh -c \
        \"while [ ! -e '$S/h$k.done' ]; do sleep 0.1; done\")"
done
ok "heavy's first three jobs fill the 24 GPUs" wait_state "$h3" Running 30
sleep 1
is "$(sluice show "$h4" -o json | json_get state)" Pending "its fourth waits"
l1=$(sluice run --team light --name l1 --gpus 8 --cpus 1 --memory 64Mi -- sh -c "while [ ! -e '$S/l1.done' ]; do sleep 0.1; done")
sleep 1
is "$(sluice show "$l1" -o json | json_get state)" Pending "light's job waits too"
touch "$S/h1.done"
ok "when heavy's first job ends, light's job runs (its share is 0, heavy's 1)" \
    wait_state "$l1" Running 30
is "$(sluice show "$h4" -o json | json_get state)" Pending \
    "and heavy's fourth, submitted earlier, still waits"
like "$(sluice why "$h4")" '(share|turn|ahead|Resources|GPUs|nodes)' "sluice why explains heavy's wait"
touch "$S/l1.done" "$S/h2.done"
ok "then heavy's fourth runs" wait_state "$h4" Running 30
touch "$S/h3.done" "$S/h4.done" "$S/h5.done" "$S/h6.done"
for x in "$h1" "$h2" "$h3" "$h4" "$h5" "$h6" "$l1"; do wait_state "$x" Succeeded 60 >/dev/null || fail "job $x succeeds"; done

# ---- an update of a pending job: Slurm gets it when the job starts ---------
for n in n1 n2 n3; do sluice cordon "$n" >/dev/null || fail "cordon $n"; done
u=$(sluice run --name upd --gpus 4 --cpus 1 --memory 64Mi -- sh -c \
    "printf '%s\n' \"\$CUDA_VISIBLE_DEVICES\" > '$S/upd.gpus'")
sleep 1
is "$(sluice show "$u" -o json | json_get state)" Pending "a job of 4 GPUs waits: every node is cordoned"
is "$(sid "$u")" "" "Slurm has no job of it"
is "$(sluice update "$u" --gpus 2 --priority-class best-effort)" \
    "updated $u (Pending): priorityClass best-effort, gpus 2" "it is updated to 2 GPUs, best-effort"
for n in n1 n2 n3; do sluice uncordon "$n" >/dev/null || fail "uncordon $n"; done
ok "it runs and succeeds" wait_state "$u" Succeeded 30 || explain "$u"
is "$(tr ',' '\n' <"$S/upd.gpus" | grep -c .)" 2 "its task had 2 GPUs from Slurm"
is "$(placed "$u" | tr ',' '\n' | grep -c .)" 2 "as Sluice placed it"

stop_sluiced
is "$?" 0 "sluiced stops cleanly"

# ---- ends from the jobcomp file's tail ---------------------------------------
# Polled once a minute, a job's end still comes at once: from the line Slurm
# writes to the jobcomp file, which sluiced reads as it grows.
SLUICED_ARGS=$(printf '%s\n' "$SLUICED_ARGS" | sed 's/--slurm-poll 250ms/--slurm-poll 60s/')
restart_sluiced || bail "sluiced restarts with --slurm-poll 60s"
j=$(sluice run --name tail --gpus 1 --cpus 1 --memory 64Mi -- sh -c 'exit 6')
ok "polled once a minute, a job that exits 6 fails within 20 s" wait_state "$j" Failed 20
is "$(sluice show "$j" -o json | json_get exit_code)" 6 "with its exit code, from the jobcomp line"
stop_sluiced
is "$?" 0 "sluiced stops cleanly again"
done_testing
