#!/bin/sh
# The simulated executor (--executor simulated): a task "runs" for its
# label sim-duration and ends with code 0; cancel, maxRuntime and a gang
# member's end work as with processes; the events are those of a real run;
# many jobs with different durations each end once, none early; a restart
# ends the jobs that were running. No timing is asserted beyond "ended
# within a generous bound" and "not before its duration".
. "$(dirname "$0")/../lib.sh"

FAKE_GPUS=8xH100
start_sluiced --executor simulated || bail "sluiced starts with the simulated executor"

# job NAME DURATION [EXTRA SPEC LINES]: submit a 1-GPU job with the label.
job() {
    _f=$SLUICE_TMP/$1.yaml
    {
        printf 'apiVersion: sluice/v1\nkind: Job\n'
        printf 'metadata: {name: %s, labels: {sim-duration: "%s"}}\n' "$1" "$2"
        printf 'spec:\n  command: [sleep, "3600"]\n  resources: {gpus: %s}\n' "${GPUS:-1}"
        [ $# -lt 3 ] || printf '%s\n' "$3"
    } >"$_f"
    sluice submit -f "$_f"
}

quiet() { "$@" >/dev/null; }

events() {
    curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$1/events" |
        python3 -c 'import json,sys
print(" ".join(e["type"] + ":" + str(e["from"]) + ">" + str(e["to"]) for e in json.load(sys.stdin)["events"]))'
}

# --- one short job -------------------------------------------------------
id=$(job short 1s)
like "$id" '^[0-9]+$' "a simulated job is submitted"
ok "it succeeds" wait_state "$id" Succeeded 30
is "$(events "$id")" \
    "state:None>Pending state:Pending>Running launched:Running>Running state:Running>Succeeded" \
    "its events: Pending, Running, launched, Succeeded"
is "$(sluice show "$id" -o json | json_get message)" \
    "simulated executor: the command is not run" "its message says nothing ran"
is "$(sluice show "$id" -o json | json_get exit_code)" 0 "it ends with code 0"
ran=$(sluice show "$id" -o json | python3 -c 'import json, sys
from datetime import datetime
j = json.load(sys.stdin)
f = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
print(int((f(j["finished_at"]) - f(j["started_at"])).total_seconds() * 1000))')
ok "it ran at least its sim-duration (${ran} ms)" test "$ran" -ge 1000
curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$SLUICE_SERVER/v1/jobs/$id/events" |
    python3 -c 'import json, sys
e = json.load(sys.stdin)["events"]
assert e[2]["message"] == "simulated executor: the command is not run", e
assert e[1]["message"] is None, e' 2>/dev/null
ok "the launched event carries the note, the Running event none" test $? -eq 0

# --- many jobs, different durations: each ends once, in duration order ---
ids=""
for d in 2s 0s 1500ms 500ms 1s 0s 2s 250ms; do
    ids="$ids $(job "many-$(echo "$d" | tr -d 's')" "$d")"
done
all=1
for i in $ids; do wait_state "$i" Succeeded 30 || all=0; done
is "$all" 1 "eight jobs of 0 to 2 s all succeed"
bad=""
for i in $ids; do
    n=$(events "$i" | tr ' ' '\n' | grep -c '>Succeeded$')
    [ "$n" = 1 ] || bad="$bad $i:$n"
done
is "$bad" "" "each has exactly one Succeeded event"
order=$(for i in $ids; do
    sluice show "$i" -o json | python3 -c 'import json, sys
from datetime import datetime
j = json.load(sys.stdin)
f = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
d = {"many-2": 2000, "many-0": 0, "many-1500m": 1500, "many-500m": 500,
     "many-1": 1000, "many-250m": 250}[j["name"]]
print(int((f(j["finished_at"]) - f(j["started_at"])).total_seconds() * 1000) >= d)'
done | sort -u | tr '\n' ' ')
is "$order" "True " "none of them ended before its sim-duration"

# --- cancel of a running simulated job -----------------------------------
idc=$(job cancelme 1h)
ok "a one-hour job runs" wait_state "$idc" Running 30
ok "cancel is accepted" quiet sluice cancel "$idc"
ok "it ends Cancelled well before its hour" wait_state "$idc" Cancelled 20
like "$(events "$idc")" '^state:None>Pending state:Pending>Running launched:Running>Running cancel:None>None state:Running>Cancelled$' \
    "its events: Pending, Running, launched, cancel, Cancelled"

# --- maxRuntime ----------------------------------------------------------
idt=$(job overrun 1h '  maxRuntime: 1s
  checkpoint: {signal: SIGUSR1, grace: 1s}')
ok "a job past its maxRuntime ends Timeout" wait_state "$idt" Timeout 30
like "$(sluice show "$idt" -o json | json_get message)" 'maxRuntime' "its message names maxRuntime"
like "$(events "$idt")" 'launched:Running>Running timeout:None>None state:Running>Timeout$' \
    "its events end with timeout, then Timeout"

# --- a gang of two -------------------------------------------------------
idg=$(job gang 1s '  tasks: 2')
ok "a gang of two simulated tasks succeeds" wait_state "$idg" Succeeded 30
is "$(sluice show "$idg" -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["placement"]))')" 2 \
    "both tasks were placed"

# --- restart: a job that was running ends with the daemon's run ------------
idr=$(job across-restart 1h)
ok "a one-hour job runs before the restart" wait_state "$idr" Running 30
ok "sluiced stops" stop_sluiced
ok "sluiced starts again" restart_sluiced
ok "the re-adopted simulated job ends" wait_state "$idr" "Succeeded|Failed|Lost" 30
idn=$(job after-restart 0s)
ok "a job submitted after the restart succeeds" wait_state "$idn" Succeeded 30

done_testing
