#!/bin/sh
# slurm_rest.sh - durable job submissions per second through Sluice's API
# against Slurm's REST API, in one run on the three-node Slurm lab of
# tests/slurm/lab.sh:
#
#   A. Sluice: `POST /v1/jobs` to sluiced --executor slurm on the lab, with
#      wrk and bench/submit.lua. Every node is cordoned in Sluice
#      (bench/cordon_all.sh), so Sluice accepts each job (201, Pending) and
#      none ever reaches Slurm: the figure is submission alone (parse,
#      admit, commit to disk, answer).
#   B. slurmrestd: `POST /slurm/v0.0.38/job/submit` with held jobs
#      ("hold": true) through wrk and bench/slurm_rest.lua, as an
#      unprivileged user with a JWT from `scontrol token`.
#
# Both with BENCH_REST_CONNECTIONS (64) keep-alive connections and
# BENCH_REST_THREADS (2) wrk threads. The sides alternate, A B A B A B:
# BENCH_REST_ROUNDS (3) rounds of BENCH_REST_SECONDS (10) s each, every
# side warmed up for BENCH_REST_WARMUP (1) s first; the summary gives the
# median per side and their ratio, p50/p99 latency (medians of the
# rounds) and the errors (sums). Counted are only answers that are real
# submissions: 201 from Sluice, a 200 with a job id and no error but
# "Job is in held state" from slurmrestd.
#
# After each side: Sluice's count of Pending jobs (its /metrics) and, after
# a clean stop, the rows of its store must hold what was acknowledged plus
# at most what was in flight when wrk stopped, and Slurm must hold none of
# them; on Slurm's side, squeue must hold as many held jobs as were
# acknowledged (plus those in flight), then `scancel -p main` empties the
# partition. Each Sluice round has a fresh sluiced and data dir, each
# Slurm round an empty partition, so no side carries the other's backlog.
# A 201 from Sluice is on disk (--sync BENCH_SYNC, default full: fdatasync
# before the answer). slurmctld answers once it has written the job's
# script and environment to files under StateSaveLocation, unflushed, and
# saves the job records in the background (seen here with strace: ~3
# openat per submission, 2 fsync in 3 s): a crash may lose what it acked.
#
# slurmrestd refuses to run as root or as SlurmUser: it runs as the system
# user BENCH_REST_USER (sluice-bench, made with useradd --system when
# missing), who also submits the jobs (cwd /tmp). Needs the packages
# slurm-wlm munge slurmrestd slurm-wlm-jwt-plugin wrk (scripts/deps.sh).
# Run as root from the repository root with the binaries built (make):
#
#   bench/slurm_rest.sh            # or: make bench-slurm (with slurm_e2e.sh)
#   BENCH_REST_SECONDS=3 BENCH_REST_ROUNDS=1 bench/slurm_rest.sh   # a smoke run
#
# Prints figures, never fails on speed; exit 1 when something is wrong (a
# daemon does not start, a side submits nothing, a count does not match),
# 0 with a SKIP line when this host cannot run it. Raw wrk output lands in
# bench/out/slurm_rest/. About 30 + ROUNDS x 2 x (SECONDS + 8) s.
# Settings also: BENCH_REST_PRIME (10: seconds of held jobs submitted to
# slurmrestd, then cancelled, before the first round; a fresh slurmctld
# is slower for its first few thousand jobs), BENCH_REST_SLURMRESTD_THREADS
# (slurmrestd -t, 4), BENCH_SYNC (full), SLUICE_BIN (build).
set -u

cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
BIN=${SLUICE_BIN:-$REPO/build}
DUR=${BENCH_REST_SECONDS:-10}
ROUNDS=${BENCH_REST_ROUNDS:-3}
CONNS=${BENCH_REST_CONNECTIONS:-64}
THREADS=${BENCH_REST_THREADS:-2}
WARMUP=${BENCH_REST_WARMUP:-1}
PRIME=${BENCH_REST_PRIME:-10}
REST_T=${BENCH_REST_SLURMRESTD_THREADS:-4}
RUSER=${BENCH_REST_USER:-sluice-bench}
SYNC=${BENCH_SYNC:-full}
API=v0.0.38
OUT=$REPO/bench/out/slurm_rest

say() { printf '%s\n' "$*"; }
skip() { say "SKIP slurm_rest: $*"; exit 0; }
fail() { say "slurm_rest: $*"; exit 1; }

for v in "$DUR" "$ROUNDS" "$CONNS" "$THREADS" "$WARMUP" "$REST_T" "$PRIME"; do
    case $v in
    '' | *[!0-9]* | 0) [ "$v" = 0 ] && [ "$v" = "$PRIME" ] ||
        fail "BENCH_REST_* settings are whole numbers above 0 (BENCH_REST_PRIME may be 0), got '$v'" ;;
    esac
done
[ -x "$BIN/sluiced" ] && [ -x "$BIN/sluice" ] || fail "build first (make)"
[ "$(id -u)" -eq 0 ] || skip "needs root (the Slurm lab, a system user for slurmrestd)"
for c in wrk slurmrestd setpriv curl python3; do
    command -v "$c" >/dev/null 2>&1 ||
        skip "$c is not installed (scripts/deps.sh installs wrk slurmrestd slurm-wlm-jwt-plugin)"
done
jwt_plugin=
for f in /usr/lib/*/slurm*/auth_jwt.so /usr/lib*/slurm*/auth_jwt.so; do
    [ -f "$f" ] && jwt_plugin=$f
done
[ -n "$jwt_plugin" ] ||
    skip "Slurm's JWT plugin is not installed (apt-get install slurm-wlm-jwt-plugin)"
if ! id "$RUSER" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$RUSER" >/dev/null 2>&1 ||
        skip "no user $RUSER for slurmrestd, and useradd could not make one"
fi

. "$REPO/tests/slurm/lab.sh"
WORK=$(mktemp -d /tmp/sluice-rest.XXXXXX) || exit 1
chmod 0755 "$WORK"
LAB=$WORK/lab
PID=
RPID=
mkdir -p "$OUT" || exit 1
rm -f "$OUT"/*.txt
cleanup() {
    [ -z "$PID" ] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }
    [ -z "$RPID" ] || { kill "$RPID" 2>/dev/null; wait "$RPID" 2>/dev/null; }
    lab_stop "$LAB" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The JWT key: 32 random bytes, read by slurmctld (SlurmUser, root here).
mkdir -p "$LAB" || exit 1
(umask 077 && head -c 32 /dev/urandom >"$LAB/jwt.key") || exit 1
# A round submits a few thousand jobs a second to Slurm; its default
# MaxJobCount (10,000) would refuse them.
LAB_SLURM_CONF_EXTRA="AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$LAB/jwt.key
MaxJobCount=$(((DUR + WARMUP) * 10000 + 50000))"
LAB_SLUICE=$BIN/sluice
export LAB_SLUICE
lab_start "$LAB" >"$WORK/lab.log" 2>&1
case $? in
0) ;;
2) skip "$LAB_SKIP" ;;
*) cat "$WORK/lab.log"; fail "the lab did not start" ;;
esac
SLURM_VERSION=$(sinfo -V | cut -d' ' -f2)
GPUS=1  # every node is cordoned in Sluice: the job stays Pending

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- slurmrestd -------------------------------------------------------------
RPORT=$(free_port)
RURL=http://127.0.0.1:$RPORT/slurm/$API
env SLURM_JWT=daemon SLURM_CONF="$SLURM_CONF" \
    setpriv --reuid="$RUSER" --regid="$(id -g "$RUSER")" --init-groups \
    slurmrestd -a rest_auth/jwt -s "openapi/$API" -t "$REST_T" "127.0.0.1:$RPORT" \
    </dev/null >"$WORK/slurmrestd.log" 2>&1 &
RPID=$!
RTOKEN=$(scontrol token username="$RUSER" lifespan=$((ROUNDS * (DUR + WARMUP) * 4 + 3600)) |
    sed -n 's/^SLURM_JWT=//p')
[ -n "$RTOKEN" ] || fail "scontrol token gave no token (is AuthAltTypes=auth/jwt in effect?)"
i=0
until code=$(curl -s -o "$WORK/ping.json" -w '%{http_code}' -H "X-SLURM-USER-NAME: $RUSER" \
    -H "X-SLURM-USER-TOKEN: $RTOKEN" "$RURL/ping") && [ "$code" = 200 ]; do
    i=$((i + 1))
    if [ "$code" = 404 ]; then
        skip "this slurmrestd ($SLURM_VERSION) does not serve openapi/$API"
    fi
    if [ $i -gt 100 ] || ! kill -0 "$RPID" 2>/dev/null; then
        tail -20 "$WORK/slurmrestd.log"
        fail "slurmrestd did not answer /ping (last status '$code')"
    fi
    sleep 0.1
done
say "== slurm_rest: lab at $LAB (3 nodes x $LAB_GPUS GPUs), Slurm $SLURM_VERSION, $(nproc) CPUs"
say "== slurmrestd -t $REST_T as $RUSER on $RURL; $ROUNDS round(s) x ${DUR}s per side (warm-up ${WARMUP}s), wrk -t$THREADS -c$CONNS"

# ---- Sluice -----------------------------------------------------------------
# start_sluiced: a fresh data dir, the Slurm executor on the lab.
start_sluiced() {
    PORT=$(free_port)
    DATA=$WORK/data.$PORT
    "$BIN/sluiced" --dev --listen "127.0.0.1:$PORT" --data-dir "$DATA" --executor slurm \
        --slurm-partition main --slurm-output-dir "$LAB_SHARED" --slurm-poll 1s \
        --sync "$SYNC" >"$WORK/sluiced.$PORT.log" 2>&1 &
    PID=$!
    URL=http://127.0.0.1:$PORT
    i=0
    until curl -sf -o /dev/null "$URL/healthz"; do
        i=$((i + 1))
        if [ $i -gt 300 ] || ! kill -0 "$PID" 2>/dev/null; then
            tail -20 "$WORK/sluiced.$PORT.log"
            fail "sluiced did not start"
        fi
        sleep 0.1
    done
    SLUICE_TOKEN=$(cat "$DATA/admin.token")
    sh bench/cordon_all.sh "$URL" "$SLUICE_TOKEN" || fail "cannot cordon Sluice's nodes"
}

# stop_sluiced: SIGTERM and wait; STOP_RC is its exit status.
stop_sluiced() {
    kill "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    STOP_RC=$?
    PID=
}

# sluice_gauge STATE: sluice_jobs{state="STATE"} from /metrics.
sluice_gauge() {
    curl -sf -H "Authorization: Bearer $SLUICE_TOKEN" "$URL/metrics" |
        sed -n "s/^sluice_jobs{state=\"$1\"} \\([0-9]*\\).*/\\1/p"
}

# settled CMD...: run CMD (it prints a number) until two readings 0.3 s
# apart agree, at most 10 s: what was in flight at wrk's stop has landed.
settled() {
    _s_prev=$("$@")
    _s_i=0
    while [ $_s_i -lt 33 ]; do
        sleep 0.3
        _s_now=$("$@")
        [ "$_s_now" != "$_s_prev" ] || break
        _s_prev=$_s_now
        _s_i=$((_s_i + 1))
    done
    printf '%s\n' "$_s_prev"
}

# bench_field FILE KEY: a value from the SLUICE_BENCH line of a wrk run.
bench_field() {
    sed -n 's/^SLUICE_BENCH //p' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
created() { _c=$(bench_field "$1" created); printf '%s\n' "${_c:-0}"; }
sock_errors() {
    sed -n 's/^SLUICE_BENCH //p' "$1" | tr ' ' '\n' |
        sed -n 's/^sock_[a-z]*=//p' | awk '{ s += $1 } END { print s + 0 }'
}

# in_range N LOW: LOW <= N <= LOW + 2 x CONNS (what wrk's stops left in
# flight, one per connection per run, may have been committed unanswered).
in_range() {
    [ -n "$1" ] && [ "$1" -ge "$2" ] && [ "$1" -le $(($2 + 2 * CONNS)) ]
}

slurm_pending() { squeue -h -p main -t PD -o %i 2>/dev/null | wc -l; }
slurm_any() { squeue -h -p main -o %i 2>/dev/null | wc -l; }

# record SIDE ROUND FILE: the measured run's figures, one line in $WORK/figures.
record() {
    _r_created=$(bench_field "$3" created)
    _r_dur=$(bench_field "$3" duration_us)
    _r_bad=$(bench_field "$3" "$4")
    printf '%s %s rate=%s p50_us=%s p99_us=%s requests=%s created=%s bad=%s codes=%s sock=%s\n' \
        "$1" "$2" \
        "$(awk -v c="${_r_created:-0}" -v d="${_r_dur:-0}" 'BEGIN { printf "%.1f", (d > 0) ? c / (d / 1e6) : 0 }')" \
        "$(bench_field "$3" p50_us)" "$(bench_field "$3" p99_us)" \
        "$(bench_field "$3" requests)" "${_r_created:-0}" "${_r_bad:-0}" \
        "$(bench_field "$3" codes)" "$(sock_errors "$3")" >>"$WORK/figures"
}

# show: the last figures line, for people.
show() {
    tail -1 "$WORK/figures" | awk '{
        for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        printf "%.0f/s, p50 %.1f ms, p99 %.1f ms; %d of %d answers real submissions, %d not (%s), %d socket errors\n",
            f["rate"], f["p50_us"] / 1000, f["p99_us"] / 1000, f["created"], f["requests"], f["bad"], f["codes"], f["sock"] }'
}

# sluice_round R: side A, round R.
sluice_round() {
    _n=$(slurm_any)
    [ "$_n" -eq 0 ] || fail "round $1: Slurm's partition still holds $_n jobs before Sluice's side"
    start_sluiced
    _w=$OUT/sluice-r$1-warmup.txt
    _m=$OUT/sluice-r$1.txt
    SLUICE_TOKEN=$SLUICE_TOKEN SLUICE_BENCH_GPUS=$GPUS SLUICE_BENCH_RUN=w$1 \
        wrk -t"$THREADS" -c"$CONNS" -d"${WARMUP}s" -s bench/submit.lua \
        "$URL/v1/jobs" >"$_w" 2>&1
    SLUICE_TOKEN=$SLUICE_TOKEN SLUICE_BENCH_GPUS=$GPUS SLUICE_BENCH_RUN=m$1 \
        wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency -s bench/submit.lua \
        "$URL/v1/jobs" >"$_m" 2>&1
    grep -q '^SLUICE_BENCH ' "$_m" || { cat "$_m"; fail "round $1: wrk against Sluice printed no figures"; }
    _acked=$(($(created "$_w") + $(created "$_m")))
    _pending=$(settled sluice_gauge Pending)
    _running=$(sluice_gauge Running)
    _inslurm=$(slurm_any)
    stop_sluiced
    _rows=$(sqlite3 "$DATA/sluice.db" 'select count(*) from jobs' 2>/dev/null || echo "?")
    record sluice "$1" "$_m" non201
    _msg="Pending $_pending for $_acked acknowledged, store $_rows rows after stop (exit $STOP_RC), Running ${_running:-?}, in Slurm $_inslurm"
    say "   A Sluice round $1: $(show)"
    say "     check: $_msg"
    [ "$_acked" -gt 0 ] || fail "round $1: Sluice acknowledged no job ($(bench_field "$_m" codes))"
    in_range "$_pending" "$_acked" || fail "round $1: Sluice's Pending count does not match: $_msg"
    [ "$_rows" = "?" ] || [ "$_rows" -eq "$_pending" ] ||
        fail "round $1: Sluice's store does not hold its jobs: $_msg"
    [ "${_running:-x}" = 0 ] && [ "$_inslurm" -eq 0 ] ||
        fail "round $1: a Sluice job left Pending: $_msg"
    [ "$STOP_RC" -eq 0 ] || fail "round $1: sluiced exited $STOP_RC on SIGTERM"
    rm -rf "$DATA"
}

# slurm_round R: side B, round R.
slurm_round() {
    _w=$OUT/slurmrestd-r$1-warmup.txt
    _m=$OUT/slurmrestd-r$1.txt
    SLURM_REST_USER=$RUSER SLURM_REST_TOKEN=$RTOKEN SLURM_REST_PARTITION=main \
        SLURM_REST_CWD=/tmp SLUICE_BENCH_RUN=w$1 \
        wrk -t"$THREADS" -c"$CONNS" -d"${WARMUP}s" -s bench/slurm_rest.lua \
        "$RURL/job/submit" >"$_w" 2>&1
    SLURM_REST_USER=$RUSER SLURM_REST_TOKEN=$RTOKEN SLURM_REST_PARTITION=main \
        SLURM_REST_CWD=/tmp SLUICE_BENCH_RUN=m$1 \
        wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency -s bench/slurm_rest.lua \
        "$RURL/job/submit" >"$_m" 2>&1
    grep -q '^SLUICE_BENCH ' "$_m" || { cat "$_m"; fail "round $1: wrk against slurmrestd printed no figures"; }
    _acked=$(($(created "$_w") + $(created "$_m")))
    _held=$(settled slurm_pending)
    _nothold=$(squeue -h -p main -t PD -o %r 2>/dev/null | grep -vc '^JobHeldUser$')
    record slurmrestd "$1" "$_m" failed
    say "   B slurmrestd round $1: $(show)"
    _t0=$(date +%s)
    empty_partition "round $1"
    _msg="squeue held $_held for $_acked acknowledged ($_nothold pending for another reason); scancel -p main emptied it in $(($(date +%s) - _t0)) s"
    say "     check: $_msg"
    [ "$_acked" -gt 0 ] || fail "round $1: slurmrestd acknowledged no job: $(grep '^first failed' "$_m")"
    in_range "$_held" "$_acked" || fail "round $1: Slurm's held count does not match: $_msg"
    [ "$_nothold" -eq 0 ] || fail "round $1: jobs submitted with hold are not held: $_msg"
}

# empty_partition WHAT: scancel -p main, wait until nothing is pending
# (again every 2 s: a submission that slurmrestd still had queued may land
# after scancel's list), then (up to 60 s) until the cancelled jobs have
# left after MinJobAge.
empty_partition() {
    scancel -p main 2>"$WORK/scancel.err"
    _e=0
    while [ "$(slurm_pending)" -gt 0 ]; do
        _e=$((_e + 1))
        [ $_e -lt 600 ] || fail "$1: held jobs still pending 120 s after scancel -p main ($(head -1 "$WORK/scancel.err"))"
        [ $((_e % 10)) -ne 0 ] || scancel -p main 2>"$WORK/scancel.err"
        sleep 0.2
    done
    _e=0
    while [ "$(slurm_any)" -gt 0 ] && [ $_e -lt 300 ]; do
        _e=$((_e + 1))
        sleep 0.2
    done
}

# prime: slurmrestd and slurmctld fresh from their start took held jobs
# at about half their later rate here for the first few thousand jobs;
# a long-running Slurm is past that, so the first BENCH_REST_PRIME
# seconds are submitted and cancelled, not counted.
prime() {
    _p=$OUT/slurmrestd-prime.txt
    SLURM_REST_USER=$RUSER SLURM_REST_TOKEN=$RTOKEN SLURM_REST_PARTITION=main \
        SLURM_REST_CWD=/tmp SLUICE_BENCH_RUN=p \
        wrk -t"$THREADS" -c"$CONNS" -d"${PRIME}s" -s bench/slurm_rest.lua \
        "$RURL/job/submit" >"$_p" 2>&1
    _held=$(settled slurm_pending)
    say "-- priming slurmrestd for ${PRIME}s (not counted): $(created "$_p") held jobs ($_held in squeue), then scancel"
    empty_partition "priming"
}

: >"$WORK/figures"
[ "$PRIME" -eq 0 ] || prime
r=1
while [ $r -le "$ROUNDS" ]; do
    say "-- round $r of $ROUNDS"
    sluice_round $r
    slurm_round $r
    r=$((r + 1))
done
kill "$RPID" 2>/dev/null
wait "$RPID" 2>/dev/null
RPID=
cp "$WORK/figures" "$OUT/figures.txt"

# ---- summary ----------------------------------------------------------------
# col SIDE KEY: the values of KEY over the rounds of SIDE, one per line.
col() { awk -v s="$1" -v k="$2" '$1 == s { for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$WORK/figures"; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
sum() { awk '{ s += $1 } END { print s + 0 }'; }
rounds() { col "$1" rate | awk '{ printf "%s%.0f", (NR > 1 ? ", " : ""), $1 }'; }
ms() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1000 }'; }
codes() { col "$1" codes | grep -v '^-$' | tr '\n' ',' | sed 's/,$//'; }

A_RATE=$(col sluice rate | median)
B_RATE=$(col slurmrestd rate | median)
say ""
say "== summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, Slurm $SLURM_VERSION; median of $ROUNDS alternated round(s) of ${DUR}s; one host, noisy)"
say "submissions/s  Sluice POST /v1/jobs           : $(printf '%.0f' "$A_RATE")  (rounds: $(rounds sluice); 201 only, --sync $SYNC)"
say "submissions/s  slurmrestd $API job/submit  : $(printf '%.0f' "$B_RATE")  (rounds: $(rounds slurmrestd); held, 200 with a job id only)"
say "ratio Sluice / slurmrestd                     : $(awk -v a="$A_RATE" -v b="$B_RATE" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }')"
say "latency p50 / p99  Sluice                     : $(ms "$(col sluice p50_us | median)") / $(ms "$(col sluice p99_us | median)") ms"
say "latency p50 / p99  slurmrestd                 : $(ms "$(col slurmrestd p50_us | median)") / $(ms "$(col slurmrestd p99_us | median)") ms"
say "errors  Sluice (non-201; socket)              : $(col sluice bad | sum)$(c=$(codes sluice); [ -z "$c" ] || printf ' (%s)' "$c"); $(col sluice sock | sum)"
say "errors  slurmrestd (not submitted; socket)    : $(col slurmrestd bad | sum)$(c=$(codes slurmrestd); [ -z "$c" ] || printf ' (%s)' "$c"); $(col slurmrestd sock | sum)"
say "checks                                        : ok (every acknowledged job held by Sluice's store or Slurm's queue, $ROUNDS round(s))"
exit 0
