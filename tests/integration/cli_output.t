#!/bin/sh
# What the CLI prints, against a real sluiced: `audit log` newest first,
# one line per record, --limit and --before/--after paging; figures as
# people read them (no exponent in CSV, no 0.26250000000000001 in JSON).
. "$(dirname "$0")/../lib.sh"

FAKE_GPUS=2xH100
start_sluiced || bail "sluiced starts"

# Some records: three teams made one by one.
for t in red green blue; do
    printf 'apiVersion: sluice/v1\nkind: Team\nmetadata: {name: %s}\nspec: {}\n' "$t" |
        sluice apply -f - >/dev/null || fail "team $t"
done
seqs() { python3 -c 'import json,sys; print(" ".join(str(r["seq"]) for r in json.load(sys.stdin)["records"]))'; }
s=$(sluice audit log -o json | seqs)
is "$s" "$(printf '%s\n' $s | sort -rn | tr '\n' ' ' | sed 's/ $//')" "audit log: newest first"
newest=$(printf '%s\n' $s | head -1)
out=$(sluice audit log --limit 2 2>/dev/null); rc=$?
is "$rc" 0 "audit log --limit 2 exits 0"
is "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 3 "a header and two lines"
like "$(printf '%s\n' "$out" | sed -n 2p)" "^$newest " "the first line is the newest record"
like "$(printf '%s\n' "$out" | sed -n 1p)" "^SEQ +TIME +ACTOR +ACTION +OBJECT +OUTCOME +DETAILS$" "the columns"
long=$(sluice audit log | awk 'length($0) > 200' | wc -l | tr -d ' ')
is "$long" 0 "every record on one short line"
more=$(sluice audit log -n 1 2>&1 >/dev/null)
like "$more" "^\(more: --before $newest\)$" "the next page: --before the last seq"
older=$(sluice audit log -n 1 --before "$newest" -o json | seqs)
is "$older" "$(printf '%s\n' $s | sed -n 2p)" "--before SEQ: the one before it"
first=$(printf '%s\n' $s | tail -1)
is "$(sluice audit log -n 2 --after "$first" -o json | seqs)" \
    "$(printf '%s\n' $s | tail -3 | head -2 | sort -n | tr '\n' ' ' | sed 's/ $//')" \
    "--after SEQ: the next ones, oldest first"
sluice audit log --after 1 --before 5 >/dev/null 2>&1
is "$?" 1 "--after with --before is a usage error"

# Figures: a job that ran a moment has GPU-hours of the order of 1e-5.
j=$(sluice run --gpus 1 --cpus 0.1 --memory 16Mi -- sleep 0.3)
ok "a short job runs to the end" wait_state "$j" Succeeded 30
csv=$(sluice report --by job -o csv); rc=$?
is "$rc" 0 "report -o csv exits 0"
like "$csv" "^$j," "a row for the job"
is "$(printf '%s\n' "$csv" | grep -c '[0-9][eE][-+]\?[0-9]')" 0 "no exponent in the CSV"
# the reals with more than 15 significant digits
long_reals() {
    python3 -c 'import re,sys
print(" ".join(m for m in re.findall(r"-?[0-9]+\.[0-9]+(?:[eE][-+]?[0-9]+)?", sys.stdin.read())
               if len(re.sub(r"[eE].*", "", m).replace("-", "").replace(".", "").lstrip("0")) > 15))'
}
json=$(sluice report --by job -o json)
like "$json" "[0-9]\.[0-9]" "report -o json has reals"
is "$(printf '%s\n' "$json" | long_reals)" "" "JSON reals in at most 15 significant digits"
raw=$(curl -fsS -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/report?by=job")
is "$(printf '%s\n' "$raw" | long_reals)" "" "and in the server's answer"
gh=$(printf '%s' "$json" | python3 -c 'import json,sys; print([r for r in json.load(sys.stdin) if r["key"] == sys.argv[1]][0]["gpu_hours"])' "$j")
cgh=$(printf '%s\n' "$csv" | awk -F, -v j="$j" '$1 == j {print $4}')
ok "the CSV's GPU-hours read back as the JSON's ($cgh, $gh)" \
    python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if b > 0 and abs(a - b) <= 5e-10 else 1)' "$cgh" "$gh"

# Relative dates in reports.
keys() { python3 -c 'import json,sys; print(" ".join(r["key"] for r in json.load(sys.stdin)))'; }
like "$(sluice report --by job --from yesterday -o json | keys)" "(^| )$j( |$)" \
    "report --from yesterday: the job of a moment ago"
like "$(sluice report --by job --from -7d --to now -o json | keys)" "(^| )$j( |$)" \
    "report --from -7d --to now: it too"
is "$(sluice report --by job --from -2d --to -1d -o json | keys)" "" \
    "report --from -2d --to -1d: nothing from today"
sluice report --from 7d >/dev/null 2>"$SLUICE_TMP/re"
is "$?" 1 "a bare duration is a usage error"
like "$(cat "$SLUICE_TMP/re")" "--from: must be .*yesterday or a duration ago \(-7d, -12h\), got '7d'" \
    "that names the forms"

# logs: a job that has not started says so.
hog=$(sluice run --gpus 2 --cpus 0.1 --memory 16Mi -- sleep 120)
ok "a job holds both GPUs" wait_state "$hog" Running 30
pend=$(sluice run --gpus 1 --cpus 0.1 --memory 16Mi -- echo hello)
sleep 0.5
is "$(sluice show "$pend" -o json | json_get state)" Pending "a second one waits"
sluice logs "$pend" >"$SLUICE_TMP/lo" 2>"$SLUICE_TMP/le"; rc=$?
is "$rc" 0 "logs of a pending job exits 0"
is "$(cat "$SLUICE_TMP/lo")" "" "and prints no output"
like "$(cat "$SLUICE_TMP/le")" "job $pend has not started yet \(Pending; sluice why $pend says why\)" \
    "it says the job has not started yet"
sluice cancel "$hog" "$pend" >/dev/null
ok "the GPUs are free again" wait_state "$hog" Cancelled 30

# logs -f goes on across a restart of sluiced, from where it was.
j=$(sluice run --gpus 1 --cpus 1 --memory 64Mi -- \
    sh -c 'for i in $(seq 1 40); do echo "line $i"; sleep 0.5; done')
ok "a job that prints a line every 0.5 s runs" wait_state "$j" Running 30
sluice logs -f "$j" >"$SLUICE_TMP/fo" 2>"$SLUICE_TMP/fe" &
lp=$!
i=0
while [ "$(cat "$SLUICE_TMP/fo" 2>/dev/null | wc -l)" -lt 1 ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
ok "logs -f has printed its first lines" test "$(wc -l <"$SLUICE_TMP/fo")" -ge 1 ||
    diag "logs -f: $(cat "$SLUICE_TMP/fo" "$SLUICE_TMP/fe")" "logs: $(sluice logs "$j" 2>&1)"
stop_sluiced
sleep 1.5
ok "sluiced restarts" restart_sluiced
i=0
while kill -0 "$lp" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
wait "$lp"; rc=$?
is "$rc" 0 "logs -f ends with the job, exit 0"
is "$(cat "$SLUICE_TMP/fo")" "$(seq 1 40 | sed 's/^/line /')" \
    "every line once, in order, across the restart"
like "$(cat "$SLUICE_TMP/fe")" "job $j: lost the server .*; reconnecting, from byte [1-9][0-9]*" \
    "it says it lost the server and from where it resumes"
like "$(cat "$SLUICE_TMP/fe")" "job $j: reconnected" "and that it reconnected"
stop_sluiced
done_testing
