#!/bin/sh
# Bad specs get precise 400s naming the field; nothing is created.
. "$(dirname "$0")/../lib.sh"

start_sluiced || bail "sluiced starts"

# check NAME BODY FIELD: POST BODY as YAML, expect 400 naming FIELD.
check() {
    printf '%s\n' "$2" >"$SLUICE_TMP/bad.yaml"
    out=$(sluice submit -f "$SLUICE_TMP/bad.yaml" 2>&1)
    rc=$?
    is "$rc" 2 "$1: sluice exits 2"
    like "$out" "$3" "$1: the error names $3"
    field=$(curl -s -H "Authorization: Bearer $SLUICE_TOKEN" -H 'Content-Type: application/yaml' \
        --data-binary @"$SLUICE_TMP/bad.yaml" "$SLUICE_SERVER/v1/jobs" |
        python3 -c 'import json,sys; e=json.load(sys.stdin)["error"]; print(e["code"], e.get("field",""))')
    is "$field" "invalid $3" "$1: the API answers code invalid with field $3"
}

head='apiVersion: sluice/v1
kind: Job
metadata: {name: bad}'
check "too many GPUs" "$head
spec: {command: [/bin/true], resources: {gpus: 65}}" 'spec.resources.gpus'
check "unknown field" "$head
spec: {command: [/bin/true], resources: {gpu: 1}}" 'spec.resources.gpu'
check "missing command" "$head
spec: {tasks: 1}" 'spec.command'
check "bad name" "apiVersion: sluice/v1
kind: Job
metadata: {name: Bad_Name}
spec: {command: [/bin/true]}" 'metadata.name'
check "bad duration" "$head
spec: {command: [/bin/true], maxRuntime: soon}" 'spec.maxRuntime'
check "unknown queue" "$head
spec: {command: [/bin/true], queue: nope}" 'spec.queue'
check "unknown team" "apiVersion: sluice/v1
kind: Job
metadata: {name: bad, team: nope}
spec: {command: [/bin/true]}" 'metadata.team'

is "$(sluice jobs --state all -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0 \
    "no refused request created a job"

# Body cap and malformed documents.
code=$(head -c 2000000 /dev/zero | tr '\0' 'a' | curl -s -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer $SLUICE_TOKEN" --data-binary @- "$SLUICE_SERVER/v1/jobs")
is "$code" 413 "a 2 MB body is refused with 413"
code=$(printf '{"apiVersion": ' | curl -s -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer $SLUICE_TOKEN" -H 'Content-Type: application/json' \
    --data-binary @- "$SLUICE_SERVER/v1/jobs")
is "$code" 400 "truncated JSON is refused with 400"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer nope" "$SLUICE_SERVER/v1/jobs")
is "$code" 401 "a wrong token gets 401"
out=$(sluice run --tasks x -- true 2>&1)
is "$?" 1 "a bad flag value is a usage error (exit 1)"
like "$out" '--tasks' "and names the flag"
out=$(SLUICE_SERVER=http://127.0.0.1:1 sluice jobs 2>&1)
is "$?" 3 "an unreachable server is exit 3"
ok "the daemon is still healthy" curl -sf -o /dev/null "$SLUICE_SERVER/healthz"

done_testing
