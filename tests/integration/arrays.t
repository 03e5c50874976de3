#!/bin/sh
# Job arrays (spec.array, sluice run --array) on a real sluiced: one
# submission, N jobs; each element sees SLUICE_ARRAY_INDEX (and the array's
# id and size); %N keeps at most N running; `jobs` shows an array as one
# line and --expand each element; cancel of one element (ID_INDEX) and of
# the whole array (its id, one request: DELETE /v1/arrays/ID, all or
# nothing, audited); an array with a dependency (each element carries it;
# with %N both hold) and a singleton array; refusals name spec.array.
. "$(dirname "$0")/../lib.sh"

start_sluiced || bail "sluiced starts"
R="--cpus 0.1 --memory 64Mi"
field() { sluice show "$1" -o json | json_get "$2"; }
G=$(mktemp -d /tmp/sluice-arrays.XXXXXX)
chmod 755 "$G"

# An array of 10, at most 2 running; each element waits for its gate file.
a=$(sluice run $R --name arr --array '0-9%2' -- \
    sh -c "echo index=\$SLUICE_ARRAY_INDEX array=\$SLUICE_ARRAY_JOB_ID count=\$SLUICE_ARRAY_TASK_COUNT; while [ ! -e $G/go ]; do sleep 0.2; done")
like "$a" '^[0-9]+$' "run --array prints the array's id"
is "$(field "$a" array_job_id)" "$a" "the array's id is its first element's id"
is "$(field "$a" array_index)" 0 "whose index is 0"
is "$(field "$((a + 9))" array_index)" 9 "the elements have consecutive ids: the last is index 9"
is "$(field "$((a + 9))" spec.spec.array)" "0-9%2" "each keeps spec.array"
ok "element 0 runs" wait_state "$a" Running 20
ok "element 1 runs" wait_state "$((a + 1))" Running 20
running() {
    sluice jobs -o json | python3 -c "import json,sys; print(sum(1 for j in json.load(sys.stdin) if j['array_job_id']==$a and j['state']=='Running'))"
}
max=0
for _ in 1 2 3 4 5; do
    r=$(running)
    [ "$r" -gt "$max" ] && max=$r
    sleep 0.3
done
is "$max" 2 "never more than 2 elements run at once"
like "$(field "$((a + 2))" reason)" "array throttle: at most 2 elements of array $a run at once \\(%2\\)" \
    "the others wait, saying why"
tbl=$(sluice jobs)
like "$tbl" "${a}_\\[0-9%2\\] +arr .*Running:2,Pending:8" "jobs shows the array as one line, counted by state"
ok "and not its elements" test "$(printf '%s\n' "$tbl" | grep -c "^${a}_")" -eq 1
exp=$(sluice jobs --expand)
like "$exp" "${a}_9 +arr" "jobs --expand shows each element as ID_INDEX"
is "$(printf '%s\n' "$exp" | grep -c "^${a}_")" 10 "ten lines"
is "$(sluice jobs -r | grep -c "^${a}_")" 10 "-r is --expand"

# cancel one element, then let the rest finish.
ok "cancel ID_INDEX of a pending element" sluice cancel "${a}_7"
ok "element 7 is Cancelled" wait_state "$((a + 7))" Cancelled 10
is "$(field "$((a + 8))" state)" Pending "element 8 is not"
touch "$G/go"
for k in 0 1 2 3 4 5 6 8 9; do
    ok "element $k succeeds" wait_state "$((a + k))" Succeeded 60
done
for k in 0 3 9; do
    is "$(sluice logs "$((a + k))")" "index=$k array=$a count=10" "element $k sees its SLUICE_ARRAY_INDEX"
done

# cancel of the array's id cancels every element still waiting or running.
rm -f "$G/go"
b=$(sluice run $R --name arr2 --array '1,3,5-7%2' -- sh -c "while [ ! -e $G/go ]; do sleep 0.2; done")
ok "array b's first element runs" wait_state "$b" Running 20
is "$(field "$((b + 4))" array_index)" 7 "1,3,5-7: the fifth element is index 7"
ok "and its second" wait_state "$((b + 1))" Running 20

# ... but not by a member of another team: 404, all or nothing.
etok=$(other_team_member eve)
ok "team other and its member eve" test -n "$etok"
del() { # TOKEN PATH: the status of a DELETE, its body in $SLUICE_TMP/del.json
    curl -s -o "$SLUICE_TMP/del.json" -w '%{http_code}' -H "Authorization: Bearer $1" \
        -X DELETE "$SLUICE_SERVER$2"
}
is "$(del "$etok" "/v1/arrays/$b")" 404 "eve may not cancel team default's array: 404"
is "$(SLUICE_TOKEN=$etok sluice cancel "$b" >/dev/null 2>&1; echo $?)" 2 "nor through the CLI (exit 2)"
is "$(field "$b" state)/$(field "$((b + 2))" state)" "Running/Pending" "nothing of the array changed"
is "$(del "$SLUICE_TOKEN" "/v1/arrays/$a")" 409 "an array that has finished: 409"
like "$(cat "$SLUICE_TMP/del.json")" "array $a has already finished" "saying so"
is "$(del "$SLUICE_TOKEN" "/v1/arrays/$((b + 1))")" 404 "an element's own id is not an array's: 404"
out=$(sluice cancel "$b")
is "$(printf '%s\n' "$out" | grep -c '^cancel')" 5 "cancel ID of the array: one line per element"
like "$out" "cancelling $b \\(Running\\)" "a running element is told to stop"
like "$out" "cancelled $((b + 4))" "a pending one ends at once"
for k in 0 1 2 3 4; do
    ok "element $k of b ends Cancelled" wait_state "$((b + k))" Cancelled 20
done
rec=$(sluice audit log --action array.cancel --object "array:$b" -o json)
is "$(printf '%s' "$rec" | json_get records.0.outcome)" ok "one array.cancel record for the request"
is "$(printf '%s' "$rec" | python3 -c 'import json,sys; d=json.load(sys.stdin)["records"][0]["details"]; print(sorted(d["cancelled"]+d["stopping"]))')" \
    "[$b, $((b + 1)), $((b + 2)), $((b + 3)), $((b + 4))]" "naming every element it cancelled"
is "$(sluice audit log --action job.cancel --object "job:$((b + 3))" -o json | json_get records.0.details.for)" \
    "array:$b" "and each element's job.cancel record says it was for the array"
is "$(sluice audit log --action array.cancel --actor eve -o json | json_get records.0.outcome)" refused \
    "eve's refused request is recorded"

# Refusals name spec.array; a refused array creates nothing.
n0=$(sluice jobs --state all -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
out=$(sluice run $R --array '0-1000' -- true 2>&1)
like "$out" 'spec.array.*at most 1000 elements' "more than 1000 elements is refused"
out=$(sluice run $R --array '3,3' -- true 2>&1)
like "$out" 'spec.array.*index 3 is given twice' "an index given twice is refused"
out=$(sluice run $R --array '0-3' -d "afterany:999999" -- true 2>&1)
like "$out" 'spec.dependency.*job 999999 does not exist' "an array whose dependency can never hold is refused"
out=$(sluice run $R --array '0-3' -e SLUICE_ARRAY_INDEX=5 -- true 2>&1)
like "$out" 'spec.env.SLUICE_ARRAY_INDEX' "SLUICE_ARRAY_INDEX is reserved"
out=$(sluice run --gpus 64 --array '0-3' -- true 2>&1)
like "$out" 'cannot run' "an array whose elements could never run is refused"
is "$(sluice jobs --state all -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$n0" \
    "refused arrays add no job"

# An array with a dependency: every element waits for it; then %2 holds.
rm -f "$G/go"
p=$(sluice run $R --name gate -- sh -c "while [ ! -e $G/p ]; do sleep 0.2; done")
ok "job p runs" wait_state "$p" Running 20
d=$(sluice run $R --name arrdep --array '0-3%2' -d "afterok:$p" -- sh -c "while [ ! -e $G/go ]; do sleep 0.2; done")
like "$d" '^[0-9]+$' "an array with a dependency is accepted"
is "$(field "$((d + 3))" spec.spec.dependency)" "afterok:$p" "each element carries the dependency"
is "$(field "$d" reason)" "waiting for dependency afterok:$p (job $p is Running)" "element 0 waits for it"
is "$(field "$((d + 3))" reason)" "waiting for dependency afterok:$p (job $p is Running)" \
    "element 3, over the limit too, says the dependency first"
touch "$G/p"
ok "p succeeds" wait_state "$p" Succeeded 20
ok "then element 0 runs" wait_state "$d" Running 20
ok "and element 1" wait_state "$((d + 1))" Running 20
sleep 0.5
like "$(field "$((d + 2))" reason)" "array throttle: at most 2 elements of array $d" \
    "element 2 now waits for the limit alone"
is "$(field "$((d + 3))" state)" Pending "element 3 too"
touch "$G/go"
ok "the array with a dependency ends, every element Succeeded" wait_state "$((d + 3))" Succeeded 60

# singleton on an array: its elements (one name, one user) run one at a time.
rm -f "$G/go"
s=$(sluice run $R --name solo-arr --array '0-1' -d singleton -- sh -c "while [ ! -e $G/go ]; do sleep 0.2; done")
ok "element 0 of the singleton array runs" wait_state "$s" Running 20
for _ in 1 2 3 4 5 6 7 8 9 10; do # its words follow within the engine's next round
    r=$(field "$((s + 1))" reason)
    case "$r" in *Running*) break ;; esac
    sleep 0.3
done
is "$r" "waiting for dependency singleton (job $s is Running)" "element 1 waits for element 0"
touch "$G/go"
ok "element 1 then runs and succeeds" wait_state "$((s + 1))" Succeeded 30
s0_end=$(field "$s" finished_at)
s1_start=$(field "$((s + 1))" started_at)
ok "after element 0 ended ($s0_end <= $s1_start)" \
    test "$(printf '%s\n%s\n' "$s0_end" "$s1_start" | sort | head -n 1)" = "$s0_end"

# Elements are jobs like any: a restart keeps the throttle.
rm -f "$G/go"
c=$(sluice run $R --name arr3 --array '0-3%1' -- sh -c "while [ ! -e $G/go ]; do sleep 0.2; done")
ok "array c's first element runs" wait_state "$c" Running 20
ok "sluiced restarts" restart_sluiced
sleep 1
is "$(sluice jobs -o json | python3 -c "import json,sys; print(sum(1 for j in json.load(sys.stdin) if j['array_job_id']==$c and j['state']=='Running'))")" 1 \
    "after a restart still one element of c runs (%1)"
touch "$G/go"
ok "c's last element succeeds in the end" wait_state "$((c + 3))" Succeeded 60

rm -rf "$G"
done_testing
