#!/bin/sh
# The CLI's habits against a real sluiced: `sluice jobs` filtered by user,
# queue, priority class, submission time and count; -o wide and -o yaml
# (which loads to the very document -o json prints) for jobs, nodes and
# queues; --watch and --interval for jobs, nodes and queues, refused for
# anything else before it does anything.
. "$(dirname "$0")/../lib.sh"

FAKE_GPUS=4xH100
start_sluiced || bail "sluiced starts"

cat >"$SLUICE_TMP/cat.yaml" <<YAML
apiVersion: sluice/v1
kind: Queue
metadata: {name: research}
spec: {team: default, nominal: {gpus: 2}}
---
apiVersion: sluice/v1
kind: User
metadata: {name: erin}
spec: {team: default, role: member}
YAML
ok "a queue and a member" sluice apply -f "$SLUICE_TMP/cat.yaml"
etok=$(sluice token create --user erin)

run() { sluice run --gpus 1 --cpus 0.1 --memory 16Mi "$@" -- sleep 120; }
j1=$(run)
j2=$(run --queue research --priority best-effort)
j3=$(SLUICE_TOKEN=$etok run --queue research)
like "$j1 $j2 $j3" '^[0-9]+ [0-9]+ [0-9]+$' "three jobs: admin's, admin's best-effort in research, erin's"
ok "the last one runs" wait_state "$j3" Running 15

ids() { sluice jobs "$@" -o json | python3 -c 'import json, sys; print(" ".join(str(j["id"]) for j in json.load(sys.stdin)))'; }
is "$(ids)" "$j1 $j2 $j3" "sluice jobs lists all three"
is "$(ids --user erin)" "$j3" "--user erin: erin's job only"
is "$(ids --queue research)" "$j2 $j3" "--queue research: the two in research"
is "$(ids -p best-effort)" "$j2" "--priority best-effort: that class's job only"
is "$(ids --queue research --user admin)" "$j2" "filters combine"
is "$(ids --limit 2)" "$j2 $j3" "--limit 2: the newest two, oldest first"
is "$(ids -n 1 --queue research)" "$j3" "--limit after the other filters"
is "$(ids --since 1h)" "$j1 $j2 $j3" "--since 1h: all of them"
is "$(ids --since 2099-01-01)" "" "--since a future date: none"
since=$(sluice show "$j2" -o json | json_get submitted_at)
is "$(ids --since "$since")" "$j2 $j3" "--since a job's submission time: it and the later ones"
is "$(sluice jobs --queue research -o csv | wc -l | tr -d ' ')" 3 "the filters hold for -o csv too"
out=$(sluice jobs --since yesterday-ish 2>&1)
is "$?" 1 "a bad --since is a usage error"
like "$out" "^sluice: --since: must be a time" "that names the option"
is "$(sluice jobs --limit 0 >/dev/null 2>&1; echo $?)" 1 "--limit 0 is a usage error"

# -o wide
wide=$(sluice jobs -o wide)
like "$(printf '%s\n' "$wide" | head -n 1)" "^ID +NAME +TEAM +USER +QUEUE +PRIORITY +STATE +GPUS +SUBMITTED +TIME +NODES +EXIT +REASON" \
    "jobs -o wide adds the user, priority class, submission time and nodes"
like "$(printf '%s\n' "$wide" | grep "^$j3 ")" "^$j3 +sleep +default +erin +research +batch +Running +1 +20[0-9-]+T" \
    "a row of -o wide"
like "$(sluice nodes -o wide | head -n 1)" "^NODE +STATE +CPUS" "nodes -o wide is its table"
like "$(sluice queues -o wide | head -n 1)" "^QUEUE +TEAM" "queues -o wide is its table"

# -o yaml: the same document as -o json
same() { # COMMAND...: -o yaml loads to what -o json prints
    sluice "$@" -o json >"$SLUICE_TMP/a.json" && sluice "$@" -o yaml >"$SLUICE_TMP/a.yaml" &&
        python3 -c 'import json, sys, yaml
a = json.load(open(sys.argv[1])); b = yaml.safe_load(open(sys.argv[2]))
for d in (a, b):
    for x in (d if isinstance(d, list) else [d]):
        for k in ("cpu_milli_allocated", "mem_bytes_allocated", "share"):
            if isinstance(x, dict):
                x.pop(k, None)
sys.exit(0 if a == b else 1)' "$SLUICE_TMP/a.json" "$SLUICE_TMP/a.yaml"
}
if python3 -c 'import yaml' 2>/dev/null; then
    ok "jobs -o yaml is the document of jobs -o json" same jobs --state all
    ok "nodes -o yaml is the document of nodes -o json" same nodes
    ok "queues -o yaml is the document of queues -o json" same queues
    ok "show -o yaml is the document of show -o json" same show "$j1"
else
    diag "python3-yaml is not installed: -o yaml not compared with -o json"
fi
like "$(sluice jobs -o yaml | head -n 2)" "^-
  id: $j1" "jobs -o yaml is a block list of job mappings"
is "$(sluice jobs -o xml >/dev/null 2>&1; echo $?)" 1 "an unknown format is a usage error"

# --watch, --interval
count() { timeout "$1" "$SLUICE_BIN/sluice" "$2" --watch --interval 300ms -o json | grep -c '^\['; }
n=$(count 1.6 nodes)
ok "nodes --watch prints the list again and again ($n times in 1.6 s)" test "$n" -ge 3
n=$(count 1.6 queues)
ok "queues --watch too ($n times)" test "$n" -ge 3
n=$(timeout 1.6 "$SLUICE_BIN/sluice" jobs --interval 300ms --user erin | grep -c '^ID ')
ok "jobs --interval alone watches, with the filters ($n tables)" test "$n" -ge 3
before=$(ids --state all)
out=$(sluice run --watch -- true 2>&1)
is "$?" 1 "run --watch is a usage error"
like "$out" "--watch: only for jobs, nodes and queues, not run" "that says which commands watch"
is "$(sluice --watch cancel "$j1" >/dev/null 2>&1; echo $?)" 1 "--watch before a command that is not watched is refused"
is "$(ids --state all)" "$before" "and nothing was submitted or cancelled"
is "$(sluice jobs --interval 5ms >/dev/null 2>&1; echo $?)" 1 "an interval under 100ms is refused"

sluice cancel "$j1" "$j2" "$j3" >/dev/null
done_testing
