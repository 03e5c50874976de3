#!/bin/sh
# slurm_lab.t - what the Slurm executor relies on, checked against a real
# Slurm (three slurmd on this machine, tests/slurm/lab.sh) configured by
# `sluice slurm gres-conf`: the generator's lines are what Slurm runs;
# --gres=gpu:gI pins exact GPU indices; shard:gI takes a fraction of
# exactly GPU I (500 + 400 of 1000 run together, 200 more waits, and a
# whole GPU and its shards never overlap); gangs on the same indices of
# several nodes and heterogeneous jobs with other indices per node start
# all together; sbatch --uid runs the job as that user; scancel --signal
# --full reaches the batch script's children; drain, resume and down read
# as docs/slurm.md says, a job on a node set DOWN ends NODE_FAIL (and is
# requeued unless --no-requeue); a finished job's state and exit code stay
# in the jobcomp file after squeue forgets it. Skips when not root or when
# Slurm or munge is not installed. About 30 s.

. "$(dirname "$0")/../lib.sh"
. "$SLUICE_REPO/tests/slurm/lab.sh"

LAB=$(mktemp -d "${TMPDIR:-/tmp}/sluice-slurm.XXXXXX") || bail "mktemp"
# lib.sh's EXIT trap reads $? first; keep it across lab_stop.
trap '_rc=$?; lab_stop "$LAB" >/dev/null 2>&1; (exit $_rc); _sl_cleanup' EXIT

lab_start "$LAB"
case $? in
0) ;;
2) rm -rf "$LAB"; skip_all "$LAB_SKIP" ;;
*) bail "the lab starts: three idle nodes" ;;
esac
pass "the lab starts: three idle nodes"
cd "$LAB_SHARED" || bail "cd $LAB_SHARED"

# sb ARGS...: sbatch --parsable with memory (else a job takes the whole
# node's) and output in the shared directory; prints the job id.
sb() { sbatch --parsable --mem=100 -o "$LAB_SHARED/%j.out" "$@"; }

# out JOB: the job's output so far.
out() { cat "$LAB_SHARED/$1.out" 2>/dev/null; }

# wait_out JOB ERE [TIMEOUT_S]: until the job's output matches.
wait_out() {
    _wo_end=$(($(date +%s) + ${3:-15}))
    until out "$1" | grep -Eq -- "$2"; do
        if [ "$(date +%s)" -ge "$_wo_end" ]; then
            diag "job $1 ($(lab_state "$1")): output does not match '$2' after ${3:-15} s:" \
                "$(out "$1")"
            return 1
        fi
        sleep 0.1
    done
}

# waits JOB: the job is PENDING once Slurm's scheduler has looked at it
# (its reason is no longer None), for want of resources: Resources, or
# Priority when an earlier job waits for them.
waits() {
    _w_i=0
    while [ "$(squeue -h -j "$1" -o %r)" = None ] && [ "$_w_i" -lt 50 ]; do
        sleep 0.1
        _w_i=$((_w_i + 1))
    done
    squeue -h -j "$1" -o '%T %r' | grep -Eq '^PENDING (Resources|Priority)$' ||
        { diag "job $1: $(squeue -h -t all -j "$1" -o '%T %r')"; return 1; }
}

# node_field NODE KEY: a field of `scontrol show node -o NODE`.
node_field() {
    scontrol show node -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# --- a job whose end we read from jobcomp once squeue has forgotten it ---
exit7=$(sb -w n3 --wrap 'exit 7')

# --- the generator's lines are what Slurm runs ----------------------------

gen() {
    "$LAB_SLUICE" slurm gres-conf --nodes 'n[1-3]' --gpus 8 --model H100 \
        --domain 'n[1-2]=rack1' --domain n3=rack2 \
        --device "$LAB_DEV/nvidia%d" --shards 1000 "$@"
}
is "$(gen --only gres.conf)" "$(cat "$LAB/etc/gres.conf")" \
    "the lab's gres.conf is the generator's output"
is "$(gen --only slurm.conf --per-node | grep '^NodeName=')" \
    "$(grep '^NodeName=' "$SLURM_CONF" | sed 's/ NodeHostname=.*$//')" \
    "the lab's NodeName lines are the generator's, plus host, port, CPUs and memory"
grouped=$(gen --only slurm.conf | grep '^NodeName=' | cut -d' ' -f1,3)
is "$grouped" "NodeName=n[1-2] Feature=gpu_H100,domain_rack1
NodeName=n3 Feature=gpu_H100,domain_rack2" \
    "without --per-node, nodes of one domain share a line"
want_gres=$(gen --only slurm.conf --per-node | sed -n 's/^NodeName=n1 Gres=\([^ ]*\) .*/\1/p')
is "$(node_field n1 Gres)" "$want_gres" \
    "Slurm reports n1's Gres as generated: gpu:g0:1..gpu:g7:1 and shard:gI:1000"
is "$(node_field n1 AvailableFeatures) $(node_field n3 AvailableFeatures)" \
    "gpu_H100,domain_rack1 gpu_H100,domain_rack2" \
    "Slurm reports the model and domain features per node"
like "$(scontrol show config | grep -E '^(SchedulerParameters|MinJobAge|ReturnToService|JobCompType) ' | tr -s ' ' | tr '\n' ';')" \
    "JobCompType = jobcomp/filetxt;MinJobAge = $LAB_MIN_JOB_AGE sec;ReturnToService = 2;SchedulerParameters = batch_sched_delay=0,bf_interval=1;" \
    "slurmctld runs with the scheduler settings docs/slurm.md asks for"

# --- exact GPU indices -------------------------------------------------------

pin=$(sb -w n2 -N1 --gres=gpu:g3:1,gpu:g5:1 --wrap \
    "echo JOB_GPUS=\$SLURM_JOB_GPUS CVD=\$CUDA_VISIBLE_DEVICES; for i in 3 4; do head -c1 $LAB_DEV/nvidia\$i 2>&1 | sed \"s/^/dev\$i: /\"; done; sleep 30")
lab_wait_state "$pin" RUNNING
like "$(scontrol show job -d "$pin" | grep 'Nodes=')" \
    'Nodes=n2 .*GRES=gpu:g3:1\(IDX:3\),gpu:g5:1\(IDX:5\)' \
    "--gres=gpu:g3:1,gpu:g5:1 -w n2 holds exactly indices 3 and 5 of n2"
wait_out "$pin" 'dev4'
if [ "$LAB_CGROUP" = 1 ]; then
    like "$(out "$pin" | head -n 1)" '^JOB_GPUS=3,5 CVD=0,1$' \
        "the job sees SLURM_JOB_GPUS=3,5; with ConstrainDevices CUDA_VISIBLE_DEVICES is renumbered 0,1"
    like "$(out "$pin" | tr '\n' ' ')" 'dev3: .*No such device.*dev4: .*Operation not permitted' \
        "its device cgroup lets it open GPU 3 (ENXIO: no driver) and not GPU 4 (EPERM)"
else
    like "$(out "$pin" | head -n 1)" '^JOB_GPUS=3,5 CVD=3,5$' \
        "the job sees SLURM_JOB_GPUS=3,5 and CUDA_VISIBLE_DEVICES=3,5"
fi
busy=$(sb -w n2 -N1 --gres=gpu:g5:1 --wrap true)
ok "a job for a GPU another job holds waits (Resources); it is not moved to another GPU" \
    waits "$busy"
scancel "$pin" "$busy"

# --- fractions: shards of exactly one GPU ---------------------------------------

s500=$(sb -w n1 --gres=shard:g6:500 --wrap 'echo SHARDS=$SLURM_SHARDS_ON_NODE JOB_GPUS=$SLURM_JOB_GPUS; sleep 30')
s400=$(sb -w n1 --gres=shard:g6:400 --wrap 'sleep 30')
lab_wait_state "$s500" RUNNING && lab_wait_state "$s400" RUNNING
s200=$(sb -w n1 --gres=shard:g6:200 --wrap 'sleep 30')
lab_wait_state "$s200" PENDING
is "$(lab_state "$s500") $(lab_state "$s400") $(lab_state "$s200")" \
    "RUNNING RUNNING PENDING" \
    "500 and 400 of GPU 6's 1000 shards run together; 200 more waits"
like "$(scontrol show job -d "$s500" | grep 'Nodes=')" 'GRES=shard:g6:500\(IDX:6\)' \
    "shard:g6:500 is on index 6"
wait_out "$s500" SHARDS
is "$(out "$s500")" "SHARDS=500 JOB_GPUS=6" \
    "a shard job sees SLURM_SHARDS_ON_NODE and the GPU's index in SLURM_JOB_GPUS"
whole=$(sb -w n1 --gres=gpu:g6:1 --wrap true)
ok "the whole GPU waits while any of its shards is held" waits "$whole"
scancel "$s500"
lab_wait_state "$s200" RUNNING
is "$(lab_state "$s200") $(lab_state "$whole")" "RUNNING PENDING" \
    "when 500 shards are freed the 200 start; the whole GPU still waits"
scancel "$s400" "$s200" "$whole"
g7=$(sb -w n1 --gres=gpu:g7:1 --wrap 'sleep 30')
lab_wait_state "$g7" RUNNING
s7=$(sb -w n1 --gres=shard:g7:1 --wrap true)
ok "one shard of a GPU a job holds whole waits" waits "$s7"
scancel "$g7" "$s7"
like "$(sb -w n1 --gres=shard:g5:1001 --wrap true 2>&1)" \
    'Requested node configuration is not available' \
    "more shards than a GPU has is refused at submission"

# --- gangs --------------------------------------------------------------------------

task_env='echo node=$SLURMD_NODENAME procid=$SLURM_PROCID step_gpus=$SLURM_STEP_GPUS job_gpus=$SLURM_JOB_GPUS het_size=$SLURM_HET_SIZE'
same=$(sb -N2 -w n1,n3 --gres=gpu:g0:1,gpu:g2:1 --wrap "srun -l sh -c '$task_env' | sort")
wait_out "$same" '^1:'
is "$(out "$same")" "0: node=n1 procid=0 step_gpus=0,2 job_gpus=0,2 het_size=
1: node=n3 procid=1 step_gpus=0,2 job_gpus=0,2 het_size=" \
    "-N2 -w n1,n3 --gres=gpu:g0:1,gpu:g2:1 runs a task on each node with indices 0 and 2"

# A heterogeneous job: other indices on each node. Its components wait
# together while one of them cannot start.
block=$(sb -w n3 --gres=gpu:g5:1 --wrap 'sleep 30')
lab_wait_state "$block" RUNNING
het=$(sbatch --parsable -o "$LAB_SHARED/%j.out" -w n1 -N1 --mem=100 --gres=gpu:g1:1,gpu:g4:1 \
    : -w n3 -N1 --mem=100 --gres=gpu:g5:1 \
    --wrap "srun --het-group=0,1 -l sh -c '$task_env' | sort")
lab_wait_state "$het" PENDING
is "$(squeue -h -j "$het" -o '%i %T' | sort | tr '\n' ' ')" \
    "$het+0 PENDING $het+1 PENDING " \
    "a heterogeneous job waits whole while one component's GPU is busy"
scancel "$block"
wait_out "$het" '^1:'
is "$(out "$het")" "0: node=n1 procid=0 step_gpus=1,4 job_gpus=1,4 het_size=2
1: node=n3 procid=1 step_gpus=5 job_gpus=1,4 het_size=2" \
    "srun --het-group=0,1 runs one task per component with its own GPUs (SLURM_STEP_GPUS; SLURM_JOB_GPUS is component 0's)"
is "$(squeue -h -t all -j "$het" -o %S | sort -u | wc -l)" 1 \
    "both components started at the same time"

# --- identity -------------------------------------------------------------------

who=$(sb --uid=nobody --gid=nogroup -w n2 --wrap 'echo $(id -u) $(id -g)')
wait_out "$who" '^[0-9]+ [0-9]+$'
is "$(out "$who")" "$(id -u nobody) $(getent group nogroup | cut -d: -f3)" \
    "sbatch --uid=nobody --gid=nogroup runs the job as nobody:nogroup"
is "$(squeue -h -t all -j "$who" -o %u)" nobody "squeue names the job's user"

# --- signals --------------------------------------------------------------------------

cat >"$LAB_SHARED/sig.sh" <<'EOF'
#!/bin/sh
trap 'echo parent-got-USR1' USR1
sh -c 'trap "echo child-got-USR1; exit 0" USR1; echo ready; while :; do sleep 0.1; done' &
child=$!
i=0
while [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
wait "$child"
EOF
sig=$(sb --uid=nobody --gid=nogroup -w n3 "$LAB_SHARED/sig.sh")
wait_out "$sig" ready
scancel --signal=USR1 --full "$sig"
wait_out "$sig" 'child-got-USR1' 10
like "$(out "$sig" | tr '\n' ' ')" 'parent-got-USR1' \
    "scancel --signal=USR1 --full reaches the batch script"
like "$(out "$sig" | tr '\n' ' ')" 'child-got-USR1' \
    "... and the script's children"
scancel "$sig"
lab_wait_state "$sig" "CANCELLED|COMPLETED"

# --- node states ------------------------------------------------------------------------

state_of() { node_field "$1" State; }
# settled NODE: wait until no job on the node is still completing.
settled() {
    _se_i=0
    while state_of "$1" | grep -q COMPLETING && [ "$_se_i" -lt 100 ]; do
        sleep 0.1
        _se_i=$((_se_i + 1))
    done
}
settled n3
run2=$(sb -w n2 --no-requeue --wrap 'sleep 30')
lab_wait_state "$run2" RUNNING
scontrol update NodeName=n2 State=DRAIN Reason=lab_drain
scontrol update NodeName=n3 State=DRAIN Reason=lab_drain
like "$(state_of n2) $(sinfo -h -n n2 -o %T)" '^MIXED\+DRAIN draining$' \
    "a drained node with a job reads State=MIXED+DRAIN, sinfo draining"
like "$(state_of n3) $(sinfo -h -n n3 -o %T)" '^IDLE\+DRAIN drained$' \
    "a drained idle node reads State=IDLE+DRAIN, sinfo drained"
like "$(scontrol show node -o n3)" 'Reason=lab_drain \[root@' \
    "the reason reads Reason=TEXT [USER@TIME]"
is "$(lab_state "$run2")" RUNNING "draining leaves the running job alone"
new3=$(sb -w n3 --wrap true)
lab_wait_state "$new3" PENDING
like "$(squeue -h -j "$new3" -o %r)" 'ReqNodeNotAvail' \
    "a job for a drained node waits (ReqNodeNotAvail)"
scontrol update NodeName=n3 State=RESUME
lab_wait_state "$new3" COMPLETED
like "$(state_of n3)" '^IDLE' "RESUME makes the node IDLE again; the waiting job runs"
scontrol update NodeName=n2 State=RESUME
scontrol update NodeName=n2 State=DOWN Reason=lab_down
lab_wait_state "$run2" NODE_FAIL 10
is "$(squeue -h -t all -j "$run2" -o '%T %r')" "NODE_FAIL NodeDown" \
    "a job on a node set DOWN ends NODE_FAIL (NodeDown)"
like "$(lab_jobcomp "$run2")" 'JobState=NODE_FAIL ' "jobcomp records NODE_FAIL"
# The node's slurmd answered the kill, and with ReturnToService=2 that
# brings the node back by itself.
i=0
while [ "$(state_of n2)" != IDLE ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
is "$(state_of n2)" IDLE \
    "with ReturnToService=2 a DOWN node whose slurmd answers comes back IDLE by itself"
req=$(sb -w n1 --wrap 'sleep 30')
lab_wait_state "$req" RUNNING
scontrol update NodeName=n1 State=DOWN Reason=lab_down
lab_wait_state "$req" PENDING 10
like "$(scontrol show job "$req" | tr ' ' '\n' | grep -E '^(JobState|Restarts)=' | tr '\n' ' ')" \
    '^JobState=PENDING Restarts=1 $' \
    "without --no-requeue Slurm puts the job back to PENDING itself (Restarts=1)"
scancel "$req"
scontrol update NodeName=n3 State=DOWN Reason=lab_down
sleep 1
like "$(state_of n3) $(sinfo -h -n n3 -o %T)" '^DOWN down' \
    "an idle node set DOWN stays State=DOWN (sinfo down)"
scontrol update NodeName=n3 State=RESUME
lab_wait_idle 15
ok "RESUME brings every node back to idle" lab_wait_idle 1

# --- jobcomp after squeue forgets ----------------------------------------------------

i=0
while [ -n "$(lab_state "$exit7")" ] && [ "$i" -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
is "$(lab_state "$exit7")" "" \
    "squeue forgets a finished job (MinJobAge=$LAB_MIN_JOB_AGE s, purged on Slurm's timer)"
like "$(lab_jobcomp "$exit7")" \
    "^JobId=$exit7 UserId=root\\(0\\) .* JobState=FAILED .* NodeList=n3 .* DerivedExitCode=0:0 ExitCode=7:0 \$" \
    "its jobcomp line keeps JobState=FAILED and ExitCode=7:0 (code:signal), last on the line"

# --- start latency of a pinned job (a figure, not a check) -----------------------------

lat=""
for g in 0 1 2 3 4; do
    t0=$(date +%s%N)
    j=$(sb -w n2 --gres=gpu:g$g:1 --wrap 'date +%s%N')
    wait_out "$j" '^[0-9]+$' 10
    lat="$lat $((($(out "$j") - t0) / 1000000))"
done
diag "start latency of a pinned job, sbatch to first instruction (ms):$lat"

done_testing
