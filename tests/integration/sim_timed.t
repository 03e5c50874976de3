#!/bin/sh
# `sluice sim` timed mode: the Philly and Helios job subsets with their
# virtual clusters' quotas, and the openb pods with --time-scale, through
# the scheduler on a virtual clock. Every job finishes; the FIFO baseline
# and the scheduler see the same jobs and teams; the scheduler's figures
# beat FIFO's where it must (these are deterministic runs, not timings);
# runs repeat by seed; bad options and VC files get a clear error.
. "$(dirname "$0")/../lib.sh"

SHARED=$(shared_dir) || skip_all "no ../shared/traces next to the repository (set SLUICE_SHARED)"
PH=$SHARED/traces/msr-philly
HE=$SHARED/traces/sensetime-helios
OB=$SHARED/traces/alibaba-gpu-v2023
make_tmp
D=$SLUICE_TMP

# sim NAME ARGS...: run, the summary in $D/NAME.json
sim() {
    _n=$1
    shift
    if sluice sim --no-progress "$@" >"$D/$_n.json" 2>"$D/$_n.err"; then
        pass "$_n: sluice sim runs"
    else
        fail "$_n: sluice sim runs"
        diag "$(cat "$D/$_n.err")"
    fi
}
get() { json_get "$2" <"$D/$1.json"; }
# cmp_ok A OP B NAME (numbers)
cmp_ok() {
    if python3 -c "import sys; a=float(sys.argv[1]); b=float(sys.argv[3]); sys.exit(0 if eval('a '+sys.argv[2]+' b') else 1)" "$1" "$2" "$3" 2>/dev/null; then
        pass "$4 ($1 $2 $3)"
    else
        fail "$4"
        diag "expected $1 $2 $3"
    fi
}

# ---- Philly: 11 VCs of 8-GPU nodes, users dealt to them ----------------
sim philly-sluice --workload "$PH/philly_data_training.csv" --vcs "$PH/philly_vc.csv" --time-scale 4
sim philly-fifo --workload "$PH/philly_data_training.csv" --vcs "$PH/philly_vc.csv" --time-scale 4 \
    --scheduler fifo
is "$(get philly-sluice mode)" timed "a job list runs in timed mode"
is "$(get philly-sluice gpu_capacity)" 2816 "the cluster is the VCs' 352 nodes of 8 GPUs"
is "$(get philly-sluice jobs_finished)" 15000 "every one of the 15,000 jobs finishes"
is "$(get philly-fifo jobs_finished)" 15000 "under FIFO too"
is "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["teams"]))' "$D/philly-sluice.json")" 11 \
    "one team per VC"
is "$(python3 -c 'import json,sys; print(int(sum(t["nominal_gpus"] for t in json.load(open(sys.argv[1]))["teams"])))' "$D/philly-sluice.json")" \
    2816 "whose quotas add up to the cluster"
is "$(python3 -c 'import json,sys; print([t["jobs"] for t in json.load(open(sys.argv[1]))["teams"]])' "$D/philly-sluice.json")" \
    "$(python3 -c 'import json,sys; print([t["jobs"] for t in json.load(open(sys.argv[1]))["teams"]])' "$D/philly-fifo.json")" \
    "FIFO sees the same teams with the same jobs"
is "$(get philly-fifo preemptions)" 0 "FIFO preempts nothing"
cmp_ok "$(get philly-sluice preemptions)" '>' 0 "the scheduler reclaims lent quota"
cmp_ok "$(get philly-sluice preemptions)" '<' 15000 "without a preemption storm"
cmp_ok "$(get philly-sluice queueing_delay_s.mean)" '<' "$(get philly-fifo queueing_delay_s.mean)" \
    "mean queueing delay below FIFO's"
cmp_ok "$(get philly-sluice queueing_delay_s.p95)" '<' "$(get philly-fifo queueing_delay_s.p95)" \
    "p95 queueing delay below FIFO's"
cmp_ok "$(get philly-sluice jct_s.mean)" '<' "$(get philly-fifo jct_s.mean)" "mean JCT below FIFO's"
cmp_ok "$(get philly-sluice jain_fairness)" '>' "$(get philly-fifo jain_fairness)" \
    "fairer across teams than FIFO (Jain's index)"
for k in jct_s queueing_delay_s; do
    for p in mean p50 p95 p99; do
        v=$(get philly-sluice "$k.$p")
        cmp_ok "$v" '>=' 0 "$k.$p is reported"
    done
done
cmp_ok "$(get philly-sluice gpu_utilization_arrivals)" '>' 0 "GPU utilisation over the arrivals"
cmp_ok "$(get philly-sluice gpu_utilization_arrivals)" '<=' 1 "is a fraction"
sim philly-again --workload "$PH/philly_data_training.csv" --vcs "$PH/philly_vc.csv" --time-scale 4
is "$(grep -v wall_seconds "$D/philly-again.json" | md5sum)" "$(grep -v wall_seconds "$D/philly-sluice.json" | md5sum)" \
    "a second run gives the same summary"
sim philly-noest --workload "$PH/philly_data_training.csv" --vcs "$PH/philly_vc.csv" --time-scale 4 \
    --estimate none --max-jobs 3000
is "$(get philly-noest estimates)" none "--estimate none: jobs declare no run time"
is "$(get philly-noest jobs)" 3000 "--max-jobs replays only the first 3000"
is "$(get philly-noest jobs_finished)" 3000 "which all finish"

# ---- Philly with manifests instead of the VCs --------------------------
cat >"$D/q.yaml" <<'EOF'
apiVersion: sluice/v1
kind: Queue
metadata: {name: big}
spec: {team: t, cohort: philly, nominal: {gpus: 2000}, userLimit: {gpus: 400}}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: small}
spec: {team: t, cohort: philly, nominal: {gpus: 816}, borrowingLimit: {gpus: 400}}
---
apiVersion: sluice/v1
kind: Scheduler
metadata: {name: default}
spec: {placement: bestfit, reservations: 4, preemption: {minRuntime: 10m}}
EOF
sim philly-config --workload "$PH/philly_data_training.csv" --vcs "$PH/philly_vc.csv" --time-scale 4 \
    --config "$D/q.yaml" --max-jobs 5000
is "$(get philly-config teams.0.name)/$(get philly-config teams.1.name)" big/small "--config's queues are the teams"
is "$(get philly-config teams.1.nominal_gpus)" 816 "with their nominal quotas"
is "$(get philly-config policy)" bestfit "and its Scheduler manifest's placement"
is "$(get philly-config jobs_finished)" 5000 "every job finishes"

# ---- Helios: the per-day VC table's last row ---------------------------
sim helios-sluice --workload "$HE/helios_data_training.csv" --vcs "$HE/Earth_gpu_number.csv" --time-scale 2
sim helios-fifo --workload "$HE/helios_data_training.csv" --vcs "$HE/Earth_gpu_number.csv" --time-scale 2 \
    --scheduler fifo
is "$(get helios-sluice gpu_capacity)" 1208 "Helios Earth: the last day's 1,208 GPUs"
is "$(get helios-sluice jobs_finished)" 15000 "every job finishes"
cmp_ok "$(get helios-sluice queueing_delay_s.mean)" '<' "$(get helios-fifo queueing_delay_s.mean)" \
    "mean queueing delay below FIFO's"
cmp_ok "$(get helios-sluice queueing_delay_s.p95)" '<' "$(get helios-fifo queueing_delay_s.p95)" \
    "p95 queueing delay below FIFO's"

# ---- openb pods: QoS teams, resampled, arrivals compressed -------------
sim openb-sluice --nodes "$OB/openb_node_list_gpu_node.csv" --workload "$OB/openb_pod_list_default.csv" \
    --mode timed --time-scale 10000 --target 1.3
sim openb-fifo --nodes "$OB/openb_node_list_gpu_node.csv" --workload "$OB/openb_pod_list_default.csv" \
    --mode timed --time-scale 10000 --target 1.3 --scheduler fifo
is "$(get openb-sluice jobs)" "$(get openb-fifo jobs)" "both replay the same resampled pods"
is "$(get openb-sluice jobs_finished)" "$(get openb-sluice jobs)" "every pod finishes"
is "$(get openb-sluice target)" 1.3 "resampled to 1.3 x the GPUs"
team_wait() { python3 -c 'import json,sys; print([t["mean_queueing_delay_s"] for t in json.load(open(sys.argv[1]))["teams"] if t["name"]==sys.argv[2]][0])' "$D/$1.json" "$2"; }
cmp_ok "$(team_wait openb-sluice LS)" '<' "$(team_wait openb-fifo LS)" \
    "latency-sensitive pods (production) wait less than under FIFO"
cmp_ok "$(get openb-sluice preemptions)" '>' 0 "best-effort pods are preempted for them"
cmp_ok "$(get openb-sluice queueing_delay_s.mean)" '<' "$(get openb-fifo queueing_delay_s.mean)" \
    "mean queueing delay below FIFO's"

# ---- bad input ---------------------------------------------------------
out=$(sluice sim --workload "$PH/philly_data_training.csv" 2>&1 >/dev/null); rc=$?
is "$rc" 1 "timed mode without a cluster is a usage error"
like "$out" "needs --nodes FILE or --vcs FILE" "and says what is missing"
out=$(sluice sim --workload "$PH/philly_data_training.csv" --vcs "$D/none.csv" 2>&1 >/dev/null)
like "$out" "--vcs .*none.csv: No such file or directory" "a missing VC file is named"
printf 'vc,node num\nx,-1\n' >"$D/neg.csv"
out=$(sluice sim --workload "$PH/philly_data_training.csv" --vcs "$D/neg.csv" 2>&1 >/dev/null)
like "$out" "neg.csv:2: node num: must be an integer" "a negative VC size names the line and column"
printf 'vc,node num\nx,2\nx,3\n' >"$D/dupvc.csv"
out=$(sluice sim --workload "$PH/philly_data_training.csv" --vcs "$D/dupvc.csv" 2>&1 >/dev/null)
like "$out" "dupvc.csv: vc: 'x' appears twice" "a VC named twice is refused"
printf 'date,a,b,total\n2020-01-01,8,x,16\n' >"$D/tab.csv"
out=$(sluice sim --workload "$PH/philly_data_training.csv" --vcs "$D/tab.csv" 2>&1 >/dev/null)
like "$out" "column 'b': not a GPU count: 'x'" "a bad daily-table cell names its column"
printf 'date,a,b,total\n2020-01-01,8\n' >"$D/short.csv"
out=$(sluice sim --workload "$PH/philly_data_training.csv" --vcs "$D/short.csv" 2>&1 >/dev/null)
like "$out" "the last row has not the header's 4 columns" "a short daily-table row is refused"
printf 'kind: Queue\n' >"$D/bad.yaml"
out=$(sluice sim --workload "$PH/philly_data_training.csv" --vcs "$PH/philly_vc.csv" --config "$D/bad.yaml" 2>&1 >/dev/null); rc=$?
is "$rc" 1 "a bad --config is a usage error"
like "$out" "--config .*bad.yaml: apiVersion: is required" "and names the file and the field"
out=$(sluice sim --workload "$PH/philly_data_training.csv" --vcs "$PH/philly_vc.csv" --estimate maybe 2>&1 >/dev/null)
like "$out" "--estimate: must be exact or none" "--estimate takes exact or none"
out=$(sluice sim --workload "$PH/philly_data_training.csv" --vcs "$PH/philly_vc.csv" --scheduler slurm 2>&1 >/dev/null)
like "$out" "--scheduler: must be sluice or fifo" "--scheduler takes sluice or fifo"

done_testing
