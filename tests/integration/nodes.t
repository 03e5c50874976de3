#!/bin/sh
# An admin's node states on a real sluiced with three fake nodes of one GPU
# each: drain with a running job (it keeps running and finishes, no new job
# lands there, draining -> drained), cordon, `sluice why` naming both, the
# state and reason surviving a restart, the audit records, a member refused,
# the body checks of the API, and uncordon returning the node to service.
. "$(dirname "$0")/../lib.sh"

FAKE_GPUS=none
make_tmp
printf 'sn,cpu_milli,memory_mib,gpu,model\nn1,8000,16384,1,H100\nn2,8000,16384,1,H100\nn3,8000,16384,1,H100\n' \
    >"$SLUICE_TMP/nodes.csv"
start_sluiced --fake-nodes "$SLUICE_TMP/nodes.csv" || bail "sluiced starts with three fake nodes"

node_field() { # NODE KEY[.KEY]: the member of node NODE in `sluice nodes -o json`
    sluice nodes -o json | python3 -c 'import json, sys
nodes = {n["name"]: n for n in json.load(sys.stdin)}
v = nodes[sys.argv[1]]
for k in sys.argv[2].split("."):
    v = v[k]
print(json.dumps(v) if isinstance(v, (bool, dict, list)) or v is None else v)' "$1" "$2"
}

is "$(node_field n1 admin.state) $(node_field n2 admin.state) $(node_field n3 admin.state)" \
    "active active active" "every node starts active"
is "$(node_field n1 admin.at)" null "a node never set has no time"

# A job that runs until it is told to stop, on whichever node it lands.
held() { sluice run --gpus 1 --cpus 0.1 --memory 16Mi -- sh -c \
    "while [ ! -e $SLUICE_JOBS/go.$1 ]; do sleep 0.1; done"; }
j1=$(held 1)
ok "the first job runs" wait_state "$j1" Running 15
busy=$(sluice show "$j1" -o json | json_get placement.0.node)
like "$busy" '^n[123]$' "the first job is placed on a node ($busy)"
other=$(for n in n1 n2 n3; do [ "$n" = "$busy" ] || echo "$n"; done)
cord=$(echo "$other" | sed -n 1p)
free=$(echo "$other" | sed -n 2p)

# drain: the job keeps running, the node says draining.
out=$(sluice drain "$busy" --reason "disk swap")
is "$?" 0 "an admin drains $busy"
is "$out" "node $busy: draining (was active)" "drain says what it did"
is "$(node_field "$busy" admin.state)" draining "$busy is draining while its job runs"
is "$(node_field "$busy" admin.reason)" "disk swap" "the reason is shown"
is "$(node_field "$busy" admin.by)" admin "who drained it is shown"
like "$(node_field "$busy" admin.at)" '^20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T' "when is shown"
is "$(node_field "$busy" schedulable)" false "a draining node takes no new work"
is "$(node_field "$busy" state)" up "the executor's state is kept apart (up)"
is "$(sluice show "$j1" -o json | json_get state)" Running "the job on the drained node keeps running"
out=$(sluice drain "$busy" --reason "disk swap")
is "$?:$out" "0:node $busy: draining (unchanged)" "draining again changes nothing (idempotent)"
at1=$(node_field "$busy" admin.at)

# cordon the second node; a new job lands on the third only.
is "$(sluice cordon "$cord" -r "bad fan")" "node $cord: cordoned (was active)" "an admin cordons $cord"
j2=$(held 2)
ok "a second job runs" wait_state "$j2" Running 15
is "$(sluice show "$j2" -o json | json_get placement.0.node)" "$free" \
    "the second job lands on $free, the only node in service"
j3=$(held 3)
sleep 0.5
is "$(sluice show "$j3" -o json | json_get state)" Pending \
    "a third job waits: the other nodes are drained or cordoned"
why=$(sluice why "$j3")
like "$why" "$busy draining by admin \\(reason: disk swap\\) since 20" \
    "sluice why names the draining node, who, why and since when"
like "$why" "$cord cordoned by admin \\(reason: bad fan\\)" "and the cordoned node"

# The job on the draining node finishes; the node is then drained.
touch "$SLUICE_JOBS/go.1"
ok "the job on the draining node finishes" wait_state "$j1" Succeeded 15
is "$(node_field "$busy" admin.state)" drained "with its last job ended the node is drained"
sleep 0.5
is "$(sluice show "$j3" -o json | json_get state)" Pending "no new job lands on the drained node"
like "$(sluice why "$j3")" "$busy drained by admin \\(reason: disk swap\\)" \
    "sluice why now says drained"

# The table and CSV forms.
like "$(sluice nodes | grep "^$busy ")" "^$busy +drained .*disk swap \\(by admin since 20" \
    "sluice nodes shows the state, reason, who and when"
like "$(sluice nodes | grep "^$free ")" "^$free +up " "a node in service shows the executor's state"
is "$(sluice nodes -o csv | head -n 1 | cut -d, -f11-)" "admin_state,admin_reason,admin_by,admin_at" \
    "sluice nodes -o csv has the admin's columns"
like "$(sluice nodes -o csv | grep "^$cord,")" ",cordoned,bad fan,admin,20" \
    "and the cordoned node's row fills them"
is "$(sluice cordon "$cord" -o csv | head -n 1)" "node,state,previous,changed,reason,by,at" \
    "cordon -o csv starts with its header"
is "$(sluice cordon "$cord" -o json | json_get changed)" false "cordon -o json says nothing changed"

# Refusals: unknown node, bad bodies, a member; none changes anything.
out=$(sluice drain n9 2>&1)
is "$?" 2 "draining an unknown node is refused (exit 2)"
like "$out" "node n9 not found" "and says the node is not found"
api() { # METHOD PATH BODY: prints the status, then the body
    curl -s -o "$SLUICE_TMP/ans" -w '%{http_code}\n' -X "$1" -H "Authorization: Bearer $SLUICE_TOKEN" \
        -H 'Content-Type: application/json' --data-binary "$3" "$SLUICE_SERVER$2"
    cat "$SLUICE_TMP/ans"
}
out=$(api POST "/v1/nodes/$free/drain" '{"reason":"tab\there"}')
like "$out" '^400' "a reason with a control character is refused (400)"
like "$out" '"field": *"reason"' "the error names the field reason"
out=$(api POST "/v1/nodes/$free/cordon" "{\"reason\":\"$(printf '%0257d' 0)\"}")
like "$out" '^400' "a reason of 257 characters is refused"
out=$(api POST "/v1/nodes/$free/cordon" '{"why":"x"}')
like "$out" '^400' "an unknown field is refused"
like "$out" '"field": *"why"' "and named"
out=$(api POST "/v1/nodes/$free/cordon" '{"reason":7}')
like "$out" '^400' "a reason that is not a string is refused"
out=$(api POST "/v1/nodes/n9/uncordon" '')
like "$out" '^404' "uncordon of an unknown node is 404"
is "$(node_field "$free" admin.state)" active "the refused requests changed nothing"

cat >"$SLUICE_TMP/user.yaml" <<YAML
apiVersion: sluice/v1
kind: User
metadata: {name: dave}
spec: {team: default, role: member}
YAML
ok "apply a member" sluice apply -f "$SLUICE_TMP/user.yaml"
mtok=$(sluice token create --user dave)
out=$(SLUICE_TOKEN=$mtok sluice drain "$free" 2>&1)
is "$?" 2 "a member may not drain a node (exit 2)"
like "$out" "forbidden" "the refusal says forbidden"
is "$(SLUICE_TOKEN=$mtok sluice uncordon "$cord" >/dev/null 2>&1; echo $?)" 2 \
    "a member may not uncordon a node"
is "$(SLUICE_TOKEN=$mtok sluice nodes -o json | python3 -c 'import json,sys; print(sorted(n["admin"]["state"] for n in json.load(sys.stdin)))')" \
    "['active', 'cordoned', 'drained']" "a member sees the nodes' states"

# The audit log: every change and refusal, with old and new states.
aud=$(sluice audit log --action node.drain -o json)
is "$(printf '%s' "$aud" | python3 -c 'import json,sys
r = [x for x in json.load(sys.stdin)["records"] if x["outcome"] == "ok" and x["details"].get("changed")]
print(len(r), r[0]["object"], r[0]["actor"], r[0]["details"]["from"], r[0]["details"]["to"], r[0]["details"]["reason"])')" \
    "1 node:$busy admin active draining disk swap" \
    "the drain is audited: who, node, old -> new, reason"
like "$(sluice audit log --action node.drain --outcome refused -o json)" "\"actor\": *\"dave\"" \
    "the member's refused drain is audited"
like "$(sluice audit log --action node.cordon -o json)" "node:$cord" "the cordon is audited"

# A restart keeps every state, reason, who and when.
ok "sluiced restarts" restart_sluiced
is "$(node_field "$busy" admin.state)" drained "after a restart $busy is still drained"
is "$(node_field "$busy" admin.reason)" "disk swap" "with its reason"
is "$(node_field "$busy" admin.at)" "$at1" "and the time it was drained"
is "$(node_field "$cord" admin.state)" cordoned "and $cord is still cordoned"
sleep 0.5
is "$(sluice show "$j3" -o json | json_get state)" Pending "the waiting job still waits"

# uncordon: the drained node takes work again.
is "$(sluice uncordon "$busy")" "node $busy: active (was drained)" "an admin returns $busy to service"
ok "the waiting job runs" wait_state "$j3" Running 15
is "$(sluice show "$j3" -o json | json_get placement.0.node)" "$busy" "on the node just returned"
is "$(sluice uncordon "$busy")" "node $busy: active (unchanged)" "uncordon again changes nothing"
is "$(node_field "$busy" admin.by)" admin "the node records who returned it"

touch "$SLUICE_JOBS/go.2" "$SLUICE_JOBS/go.3"
ok "the other jobs finish" wait_state "$j3" Succeeded 15
done_testing
