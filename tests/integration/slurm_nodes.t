#!/bin/sh
# slurm_nodes.t - an admin's node states with the Slurm executor on a real
# Slurm (tests/slurm/lab.sh: n1, n2, n3, 8 GPUs each): a Sluice drain stays
# in Sluice (Slurm's state of the node is untouched) and survives the
# refresh of Slurm's nodes that a Slurm-side change brings; a node Slurm
# drains stays out of service when a Sluice admin uncordons it; a job
# placed meanwhile goes to the one node both allow, the next waits and
# `sluice why` names both nodes with their reasons, and runs when Slurm
# resumes its node. Skips when not root or without Slurm and munge.
# About a minute.

. "$(dirname "$0")/../lib.sh"
. "$SLUICE_REPO/tests/slurm/lab.sh"

lab_test_start sln

FAKE_GPUS=none
# sbatch for every job here (slurm_executor.t and slurm_stage.t use
# Slurm's C API)
start_sluiced --executor slurm --slurm-partition main --slurm-output-dir "$LAB_SHARED" \
    --slurm-jobcomp "$LAB_JOBCOMP" --slurm-poll 250ms --slurm-api tools ||
    bail "sluiced starts with the Slurm executor"
ok "--slurm-api tools: jobs are submitted with sbatch" \
    grep -q "jobs are submitted with sbatch" "$SLUICE_TMP/sluiced.log"
S=$LAB_SHARED

# node NODE KEY[.KEY]: a member of node NODE in `sluice nodes -o json`
node() {
    sluice nodes -o json | python3 -c 'import json, sys
v = {n["name"]: n for n in json.load(sys.stdin)}[sys.argv[1]]
for k in sys.argv[2].split("."):
    v = v[k]
print(json.dumps(v) if isinstance(v, bool) else v)' "$1" "$2"
}
# until_node NODE KEY VALUE: wait up to 20 s for it
until_node() {
    _i=0
    while [ "$(node "$1" "$2")" != "$3" ] && [ $_i -lt 200 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    [ "$(node "$1" "$2")" = "$3" ]
}
slurm_state() { scontrol show node "$1" | sed -n 's/.* State=\([^ ]*\).*/\1/p'; }

is "$(sluice drain n1 --reason 'sluice only')" "node n1: drained (was active)" \
    "an admin drains the idle n1 in Sluice"
is "$(slurm_state n1)" IDLE "Slurm's state of n1 is untouched (a Sluice drain stays in Sluice)"

# A change in Slurm refreshes Sluice's view of every node.
scontrol update nodename=n2 state=drain reason="slurm drain" || fail "scontrol drain n2"
ok "Sluice sees n2 drained in Slurm" until_node n2 state draining
is "$(node n1 admin.state) $(node n1 schedulable)" "drained false" \
    "the refresh of Slurm's nodes (n1 idle) keeps n1 drained in Sluice"
is "$(node n2 admin.state)" active "Slurm's drain is not an admin's state of Sluice"
is "$(sluice cordon n2 && sluice uncordon n2)" "node n2: cordoned (was active)
node n2: active (was cordoned)" "an admin cordons and uncordons n2 in Sluice"
is "$(node n2 schedulable)" false "n2 stays out of service while Slurm drains it"

# A job goes to n3, the one node both allow; the next waits for a node.
run8() { sluice run --gpus 8 --cpus 1 --memory 64Mi -- sh -c "while [ ! -e '$S/go.$1' ]; do sleep 0.1; done"; }
j=$(run8 1)
ok "an 8-GPU job runs" wait_state "$j" Running 30
is "$(sluice show "$j" -o json | json_get placement.0.node)" n3 "on n3"
w=$(run8 2)
sleep 1
is "$(sluice show "$w" -o json | json_get state)" Pending "a second 8-GPU job waits"
why=$(sluice why "$w")
like "$why" "n1 drained by admin \\(reason: sluice only\\) since 20" \
    "sluice why names n1 with the admin's reason"
like "$why" "n2 draining: slurm drain" "and n2 with Slurm's"

scontrol update nodename=n2 state=resume || fail "scontrol resume n2"
ok "the waiting job runs once Slurm resumes n2" wait_state "$w" Running 30
is "$(sluice show "$w" -o json | json_get placement.0.node)" n2 "on n2, not on the drained n1"
is "$(sluice uncordon n1)" "node n1: active (was drained)" "an admin returns n1 to service"
ok "n1 takes work again" until_node n1 schedulable true
touch "$S/go.1" "$S/go.2"
ok "the first job finishes" wait_state "$j" Succeeded 30
ok "the second job finishes" wait_state "$w" Succeeded 30
done_testing
