#!/bin/sh
# Job dependencies (spec.dependency, sluice run -d/--dependency) on a real
# sluiced: afterok, afternotok, afterany and singleton with real jobs; the
# reason and `why` of a waiting job; refusals at submission; a dependency
# that can never be satisfied ends the job Cancelled with the reason (or,
# with --kill-invalid-depend off, keeps it Pending); a restart keeps a
# waiting job, which still starts when its dependency succeeds. An array's
# id names every element (Slurm's meaning: judged once all have ended),
# ID_INDEX one element.
. "$(dirname "$0")/../lib.sh"

start_sluiced || bail "sluiced starts"
R="--cpus 0.1 --memory 64Mi"
# Jobs that run until the test lets them end: gate NAME waits for file NAME.
G=$(mktemp -d /tmp/sluice-depend.XXXXXX)
chmod 755 "$G"
gate() { printf 'while [ ! -e %s/%s ]; do sleep 0.2; done; exit %s' "$G" "$1" "${2:-0}"; }
open_gate() { touch "$G/$1"; }
field() { sluice show "$1" -o json | json_get "$2"; }

# afterok: waits while its dependency runs, then starts once it succeeded.
a=$(sluice run $R -- sh -c "$(gate a)")
ok "job a runs" wait_state "$a" Running 15
b=$(sluice run $R -d "afterok:$a" -- true)
like "$b" '^[0-9]+$' "run -d afterok:ID prints the job id"
c=$(sluice run $R --dependency "afterok:$b" -- true)
ok "b waits Pending" wait_state "$b" Pending 5
is "$(field "$b" reason)" "waiting for dependency afterok:$a (job $a is Running)" \
    "b's reason names the dependency and a's state"
is "$(field "$c" reason)" "waiting for dependency afterok:$b (job $b is Pending)" \
    "c (afterok on b) waits for b, Pending"
is "$(sluice why "$b" -o json | json_get blockers.0.kind)" dependency "why: a blocker of kind dependency"
like "$(sluice why "$b")" "dependency: waiting for dependency afterok:$a" "why says so in words"
is "$(field "$b" spec.spec.dependency)" "afterok:$a" "the stored spec keeps the dependency"
open_gate a
ok "a succeeds" wait_state "$a" Succeeded 20
ok "then b succeeds" wait_state "$b" Succeeded 20
ok "then c, the end of the chain" wait_state "$c" Succeeded 20
b_start=$(field "$b" started_at)
a_end=$(field "$a" finished_at)
ok "b started after a finished ($a_end <= $b_start)" test "$(printf '%s\n%s\n' "$a_end" "$b_start" | sort | head -n 1)" = "$a_end"

# afternotok / afterok / afterany on a job that fails.
f=$(sluice run $R -- sh -c "$(gate f 3)")
g=$(sluice run $R -d "afternotok:$f" -- true)
h=$(sluice run $R -d "afterok:$f" -- true)
k=$(sluice run $R -d "afterany:$f,afterok:$a" -- true)
is "$(field "$h" reason)" "waiting for dependency afterok:$f (job $f is Running)" "h waits for f"
open_gate f
ok "f fails" wait_state "$f" Failed 20
ok "afternotok on the failed job: it runs and succeeds" wait_state "$g" Succeeded 20
ok "afterok on the failed job: it ends Cancelled" wait_state "$h" Cancelled 20
is "$(field "$h" message)" "dependency afterok:$f can never be satisfied: job $f ended Failed" \
    "with the reason as its message"
ok "afterany (and afterok on a success): it runs" wait_state "$k" Succeeded 20
m=$(sluice run $R -d "afternotok:$a" -- true 2>&1)
is "$?" 2 "afternotok on a job that succeeded is refused at submission (exit 2)"
like "$m" "spec.dependency.*afternotok:$a can never be satisfied: job $a ended Succeeded" \
    "naming the field and why"

# Refusals at submission: unknown job, bad syntax, '?'.
out=$(sluice run $R -d afterok:999999 -- true 2>&1)
is "$?" 2 "a dependency on an unknown job is refused"
like "$out" 'spec.dependency.*job 999999 does not exist' "saying it does not exist"
out=$(sluice run $R -d "afterok:$a?afterany:$f" -- true 2>&1)
like "$out" "spec.dependency.*'\\?' \\(any of\\) is not supported" "'?' is refused, clearly"
out=$(sluice run $R -d "after:$a" -- true 2>&1)
like "$out" "spec.dependency.*'after'" "'after' is refused, clearly"
out=$(sluice run $R -d "afterok:0$a" -- true 2>&1)
like "$out" 'spec.dependency.*is not a job id' "a leading zero is refused"
n0=$(sluice jobs --state all -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo x)
out=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SLUICE_TOKEN" \
    -H 'Content-Type: application/json' -X POST "$SLUICE_SERVER/v1/jobs" \
    --data '{"apiVersion":"sluice/v1","kind":"Job","spec":{"command":["true"],"dependency":"afterok:1:1"}}')
is "$out" 400 "the API refuses a pair given twice with 400"
n1=$(sluice jobs --state all -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo y)
is "$n1" "$n0" "refused submissions add no job"

# A job of another team is not visible: as if it did not exist.
etok=$(other_team_member eve)
ok "team other and its member eve" test -n "$etok"
out=$(SLUICE_TOKEN=$etok sluice run $R -d "afterany:$a" -- true 2>&1)
like "$out" "spec.dependency.*job $a does not exist" "eve may not depend on a job of team default"

# singleton: after every earlier job of the same name and user.
s1=$(sluice run $R --name solo -- sh -c "$(gate s1)")
ok "the first solo runs" wait_state "$s1" Running 15
s2=$(sluice run $R --name solo -d singleton -- true)
s3=$(sluice run $R --name other-name -d singleton -- true)
ok "a singleton of another name runs at once" wait_state "$s3" Succeeded 20
is "$(field "$s2" state)" Pending "the second solo waits"
is "$(field "$s2" reason)" "waiting for dependency singleton (job $s1 is Running)" \
    "its reason names the earlier job"
open_gate s1
ok "the first solo ends" wait_state "$s1" Succeeded 20
ok "then the second runs" wait_state "$s2" Succeeded 20

# An array's id: every element, judged once all have ended (Slurm's
# meaning); ID_INDEX: one element. Each element waits for its own gate and
# exits with the code written in it.
A=$(sluice run $R --name sweep --array 0-2 -- \
    sh -c "while [ ! -e $G/A_\$SLUICE_ARRAY_INDEX ]; do sleep 0.2; done; exit \$(cat $G/A_\$SLUICE_ARRAY_INDEX)")
ok "the array's three elements run" wait_state "$((A + 2))" Running 20
d_ok=$(sluice run $R -d "afterok:$A" -- true)
d_any=$(sluice run $R -d "afterany:$A" -- true)
d_not=$(sluice run $R -d "afternotok:$A" -- true)
d_el=$(sluice run $R -d "afterok:${A}_0" -- true)
is "$(field "$d_el" spec.spec.dependency)" "afterok:${A}_0" "ID_INDEX is kept in the stored spec"
is "$(field "$d_el" reason)" "waiting for dependency afterok:${A}_0 (job $A is Running)" \
    "afterok:ID_INDEX waits for that element, naming its job"
out=$(sluice run $R -d "afterok:${A}_7" -- true 2>&1)
like "$out" "spec.dependency.*job ${A}_7 does not exist" "an index the array does not have is refused"
echo 0 >"$G/A_0"
ok "element 0 succeeds" wait_state "$A" Succeeded 20
ok "afterok:ID_0 runs once element 0 succeeded" wait_state "$d_el" Succeeded 20
is "$(field "$d_ok" reason)" \
    "waiting for dependency afterok:$A (array $A: 1 of 3 elements ended; job $((A + 1)) is Running)" \
    "afterok:ARRAY waits for every element, saying how many ended"
echo 3 >"$G/A_1"
ok "element 1 fails" wait_state "$((A + 1))" Failed 20
sleep 0.5
is "$(field "$d_ok" state)" Pending "one element failed, one still runs: afterok:ARRAY still waits (as Slurm)"
like "$(field "$d_not" reason)" "afternotok:$A \\(array $A: 2 of 3 elements ended" \
    "so does afternotok"
echo 0 >"$G/A_2"
ok "element 2 succeeds" wait_state "$((A + 2))" Succeeded 20
ok "afterok:ARRAY with a failed element ends Cancelled" wait_state "$d_ok" Cancelled 20
is "$(field "$d_ok" message)" \
    "dependency afterok:$A can never be satisfied: job $((A + 1)) (${A}_1) ended Failed" \
    "naming the element that failed"
ok "afterany:ARRAY runs once every element ended" wait_state "$d_any" Succeeded 20
ok "afternotok:ARRAY runs: an element failed" wait_state "$d_not" Succeeded 20
B=$(sluice run $R --name sweep-ok --array 0-1 -- true)
ok "array B succeeds whole" wait_state "$((B + 1))" Succeeded 20
ok "and its first element" wait_state "$B" Succeeded 20
out=$(sluice run $R -d "afternotok:$B" -- true 2>&1)
like "$out" "spec.dependency.*every element of array $B ended Succeeded" \
    "afternotok on an array that succeeded whole is refused at submission"
b_ok=$(sluice run $R -d "afterok:$B:${B}_1" -- true)
ok "afterok on it runs" wait_state "$b_ok" Succeeded 20

# A restart keeps a waiting job; it starts when its dependency succeeds.
p=$(sluice run $R -- sh -c "$(gate p)")
ok "p runs" wait_state "$p" Running 15
w=$(sluice run $R -d "afterok:$p" -- true)
ok "w waits" wait_state "$w" Pending 5
ok "sluiced restarts" restart_sluiced
is "$(field "$w" state)" Pending "after the restart w still waits"
like "$(field "$w" reason)" "waiting for dependency afterok:$p" "for p"
open_gate p
ok "p succeeds" wait_state "$p" Succeeded 30
ok "and w starts and succeeds" wait_state "$w" Succeeded 20

# --kill-invalid-depend off: a job that can never run stays Pending.
stop_sluiced
SLUICED_ARGS="$SLUICED_ARGS --kill-invalid-depend off"
ok "sluiced restarts with --kill-invalid-depend off" _sl_launch
x=$(sluice run $R -- sh -c "$(gate x 1)")
y=$(sluice run $R -d "afterok:$x" -- true)
open_gate x
ok "x fails" wait_state "$x" Failed 20
sleep 1
is "$(field "$y" state)" Pending "y stays Pending"
is "$(field "$y" reason)" \
    "DependencyNeverSatisfied: dependency afterok:$x can never be satisfied: job $x ended Failed" \
    "with reason DependencyNeverSatisfied"
ok "it can be cancelled" sluice cancel "$y"
ok "y ends Cancelled" wait_state "$y" Cancelled 10

rm -rf "$G"
done_testing
