# lab.sh - a real Slurm cluster of three nodes on this one machine, for the
# tests of the Slurm executor and of `sluice slurm gres-conf`.
#
#   . tests/slurm/lab.sh
#   lab_start "$dir" || exit 1     # returns 2 when this host cannot run it
#   sbatch -w n2 -N1 --mem=100 --gres=gpu:g3:1,gpu:g5:1 -o "$LAB_SHARED/%j.out" job.sh
#   lab_stop "$dir"
#
# POSIX sh; run as root (slurmd starts jobs as their users). Nothing under
# /etc is read or written: SLURM_CONF points at DIR/etc/slurm.conf and
# Slurm reads gres.conf and cgroup.conf beside it.
#
# The cluster: slurmctld and three slurmd (nodes n1, n2, n3; NodeHostname
# is this host, each on a port of its own, picked free, as is
# SlurmctldPort, so that two labs do not collide). Each node has
# LAB_GPUS=8 GPUs: character devices DIR/dev/nvidiaN (195:N, as the
# driver's; no driver is needed, so opening one says ENXIO, or EPERM when
# Slurm's device cgroup denies it). Every GPU index I is the GRES type gI
# with LAB_SHARDS=1000 shards, the node features are gpu_H100 and
# domain_rack1 (n1, n2) or domain_rack2 (n3): all of it is the output of
# `sluice slurm gres-conf` (docs/slurm.md), so the lab tests the generator.
# Jobs that name no --mem get the whole node's memory (Slurm's default,
# kept here as on most clusters): pass --mem.
#
# munge: a running munged on the default socket is used; otherwise the lab
# starts its own (DIR/munge, own key, AuthInfo=socket=...) and stops it.
# cgroups: with cgroup v1 devices and freezer hierarchies (and no other
# lab's slurm_nN groups in them) the lab runs task/cgroup with
# ConstrainDevices=yes and proctrack/cgroup (LAB_CGROUP=1), else
# task/none and proctrack/linuxproc (LAB_CGROUP=0); set LAB_CGROUP=0 or 1
# before lab_start to choose.
#
# Benchmarks may set, before lab_start: LAB_PRIORITY (PriorityType,
# default priority/basic) and LAB_SLURM_CONF_EXTRA (lines appended to
# slurm.conf, for keys it does not already set, e.g. AuthAltTypes).
#
# lab_start exports, and writes to DIR/lab.env (KEY='VALUE' lines, for
# tests in other languages; no value holds a quote): SLURM_CONF, LAB_DIR, LAB_NODES ("n1 n2 n3"),
# LAB_GPUS, LAB_SHARDS, LAB_MODEL, LAB_SHARED (mode 1777: job output; the
# tests' files for job users), LAB_DEV (the device files), LAB_JOBCOMP
# (jobcomp/filetxt: one line per finished job), LAB_MIN_JOB_AGE, LAB_CGROUP,
# LAB_HOST, LAB_SLUICE (the generator used). It prints them as TAP
# comments ("# lab: ...").
#
# lab_stop cancels every job, waits for them, stops the daemons it started
# by their pids (TERM, then KILL after 10 s), kills by pid any process left
# with its working directory inside DIR (a job's, a slurmstepd's), stops
# its own munged, removes the cgroups its slurmd made, and removes DIR
# (kept when LAB_KEEP=1 or SLUICE_KEEP_TMP=1).
#
# Helpers for tests: lab_wait_state JOB 'RUNNING|PENDING' [TIMEOUT_S];
# lab_state JOB; lab_jobcomp JOB (its jobcomp line); lab_wait_idle
# [TIMEOUT_S]; lab_log_tail [N] (the daemons' logs as TAP comments).

LAB_GPUS=8
LAB_SHARDS=1000
LAB_MODEL=H100
LAB_NODES="n1 n2 n3"
LAB_MIN_JOB_AGE=5

# _lab_say TEXT...: a TAP comment line.
_lab_say() { printf '# lab: %s\n' "$*"; }

# _lab_alive PID: running and not a zombie.
_lab_alive() {
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
    _la_st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$_la_st" ] && [ "$_la_st" != Z ] && [ "$_la_st" != X ]
}

# _lab_kill PID NAME: TERM, up to 10 s, then KILL; reaps our own children.
_lab_kill() {
    _lab_alive "$1" || { wait "$1" 2>/dev/null; return 0; }
    kill -TERM "$1" 2>/dev/null
    _lk_i=0
    while _lab_alive "$1" && [ "$_lk_i" -lt 100 ]; do
        sleep 0.1
        _lk_i=$((_lk_i + 1))
    done
    if _lab_alive "$1"; then
        _lab_say "$2 (pid $1) did not stop on SIGTERM; killing it"
        kill -KILL "$1" 2>/dev/null
    fi
    wait "$1" 2>/dev/null
    return 0
}

# _lab_generator: the `sluice` that prints the configuration: LAB_SLUICE,
# else $SLUICE_BIN/sluice (tests/lib.sh sets it), else the repository's
# build/sluice ($SLUICE_REPO), else sluice on the PATH.
_lab_generator() {
    for _lg in "${LAB_SLUICE:-}" "${SLUICE_BIN:+$SLUICE_BIN/sluice}" \
        "${SLUICE_REPO:+$SLUICE_REPO/build/sluice}" \
        "$(command -v sluice 2>/dev/null)"; do
        if [ -n "$_lg" ] && [ -x "$_lg" ]; then
            printf '%s\n' "$_lg"
            return 0
        fi
    done
    return 1
}

# _lab_free_ports N: N distinct TCP ports free now, on one line.
_lab_free_ports() {
    python3 -c 'import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

# lab_log_tail [N]: the last N lines (default 15) of each log (and of each
# daemon's own output), as comments.
lab_log_tail() {
    for _lt in "$LAB_DIR"/log/*.log "$LAB_DIR"/log/*.out "$LAB_DIR"/munge/munged.log; do
        [ -s "$_lt" ] || continue
        printf '# --- %s ---\n' "$_lt"
        grep -v 'pmix\|PMIx\|MPI: Cannot create context' "$_lt" |
            tail -n "${1:-15}" | sed 's/^/#   /'
    done
}

# lab_state JOB: the job's state (RUNNING, PENDING, COMPLETED, ...), or
# nothing once Slurm has forgotten it.
lab_state() {
    squeue -h -t all -j "$1" -o %T 2>/dev/null | head -n 1
}

# lab_wait_state JOB 'S1|S2' [TIMEOUT_S]: wait until the job is in one of
# the states (default 20 s). Returns 1 on timeout, saying the last state.
lab_wait_state() {
    _ws_end=$(($(date +%s) + ${3:-20}))
    while :; do
        _ws_s=$(lab_state "$1")
        case "|$2|" in
        *"|$_ws_s|"*) [ -n "$_ws_s" ] && return 0 ;;
        esac
        if [ "$(date +%s)" -ge "$_ws_end" ]; then
            _lab_say "job $1: state '$_ws_s' after ${3:-20} s, wanted $2"
            return 1
        fi
        sleep 0.1
    done
}

# lab_jobcomp JOB: the job's line in the jobcomp file (empty until it ends).
lab_jobcomp() {
    grep "^JobId=$1 " "$LAB_JOBCOMP" 2>/dev/null | tail -n 1
}

# lab_wait_idle [TIMEOUT_S]: wait until every node is idle (default 30 s).
lab_wait_idle() {
    _wi_end=$(($(date +%s) + ${1:-30}))
    while :; do
        _wi=$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u)
        _wi_n=$(printf '%s\n' "$_wi" | grep -c ' idle$')
        [ "$_wi_n" -eq 3 ] && return 0
        if [ "$(date +%s)" -ge "$_wi_end" ]; then
            _lab_say "nodes not idle after ${1:-30} s:" $_wi
            return 1
        fi
        sleep 0.2
    done
}

# _lab_wait_up TIMEOUT_S: wait until the three nodes are idle. Returns 0,
# 1 on timeout, or 3 as soon as one of the daemons has exited.
_lab_wait_up() {
    _wu_end=$(($(date +%s) + $1))
    while :; do
        for _wu in slurmctld slurmd.n1 slurmd.n2 slurmd.n3; do
            if ! _lab_alive "$(cat "$LAB_DIR/run/$_wu.lab.pid" 2>/dev/null)"; then
                _lab_say "$_wu exited"
                return 3
            fi
        done
        lab_wait_idle 1 >/dev/null && return 0
        [ "$(date +%s)" -lt "$_wu_end" ] || return 1
    done
}

# _lab_conf DIR HOST PORTS...: write DIR/etc/{gres,slurm,cgroup}.conf.
_lab_conf() {
    _c_dir=$1 _c_host=$2 _c_ctld=$3 _c_p1=$4 _c_p2=$5 _c_p3=$6
    _c_etc=$_c_dir/etc
    set -- slurm gres-conf --nodes 'n[1-3]' --gpus "$LAB_GPUS" \
        --model "$LAB_MODEL" --domain 'n[1-2]=rack1' --domain n3=rack2 \
        --device "$_c_dir/dev/nvidia%d" --shards "$LAB_SHARDS"
    "$LAB_SLUICE" "$@" --only gres.conf >"$_c_etc/gres.conf" || return 1
    "$LAB_SLUICE" "$@" --only slurm.conf --per-node >"$_c_etc/nodes.conf" ||
        return 1
    if [ "$LAB_CGROUP" = 1 ]; then
        _c_proctrack=proctrack/cgroup _c_task=task/cgroup
        cat >"$_c_etc/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainDevices=yes
ConstrainCores=no
ConstrainRAMSpace=no
EOF
    else
        _c_proctrack=proctrack/linuxproc _c_task=task/none
    fi
    {
        cat <<EOF
# A Slurm lab made by tests/slurm/lab.sh; see docs/slurm.md.
ClusterName=sluicelab
SlurmctldHost=$_c_host
SlurmctldPort=$_c_ctld
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
${LAB_MUNGE_SOCKET:+AuthInfo=socket=$LAB_MUNGE_SOCKET}
CredType=cred/munge
StateSaveLocation=$_c_dir/state
SlurmdSpoolDir=$_c_dir/spool/%n
SlurmctldPidFile=$_c_dir/run/slurmctld.pid
SlurmdPidFile=$_c_dir/run/slurmd.%n.pid
SlurmctldLogFile=$_c_dir/log/slurmctld.log
SlurmdLogFile=$_c_dir/log/slurmd.%n.log
MailProg=/bin/true
MpiDefault=none
ProctrackType=$_c_proctrack
TaskPlugin=$_c_task
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
PriorityType=${LAB_PRIORITY:-priority/basic}
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LAB_JOBCOMP
MinJobAge=$LAB_MIN_JOB_AGE
ReturnToService=2
KillWait=3
EOF
        # The generator's lines, each node with what makes it a node of
        # this machine: its host, its own port, CPUs and memory.
        awk -v h="$_c_host" -v p1="$_c_p1" -v p2="$_c_p2" -v p3="$_c_p3" '
            /^NodeName=n1 / { print $0 " NodeHostname=" h " Port=" p1 " CPUs=16 RealMemory=16000 State=UNKNOWN"; next }
            /^NodeName=n2 / { print $0 " NodeHostname=" h " Port=" p2 " CPUs=16 RealMemory=16000 State=UNKNOWN"; next }
            /^NodeName=n3 / { print $0 " NodeHostname=" h " Port=" p3 " CPUs=16 RealMemory=16000 State=UNKNOWN"; next }
            { print }' "$_c_etc/nodes.conf"
        echo "PartitionName=main Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP"
        [ -z "${LAB_SLURM_CONF_EXTRA:-}" ] || printf '%s\n' "$LAB_SLURM_CONF_EXTRA"
    } >"$_c_etc/slurm.conf"
}

# _lab_munge DIR: use the munged of this host, or start one of our own.
_lab_munge() {
    LAB_MUNGE_SOCKET=
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        _lab_say "using the running munged"
        return 0
    fi
    mkdir -p "$1/munge" && chmod 0755 "$1/munge" || return 1
    if command -v mungekey >/dev/null 2>&1; then
        mungekey -c -k "$1/munge/munge.key" >/dev/null || return 1
    else
        dd if=/dev/urandom of="$1/munge/munge.key" bs=1024 count=1 2>/dev/null ||
            return 1
    fi
    chmod 0600 "$1/munge/munge.key"
    munged --socket="$1/munge/munge.socket" --key-file="$1/munge/munge.key" \
        --pid-file="$1/munge/munged.pid" --log-file="$1/munge/munged.log" \
        --seed-file="$1/munge/munged.seed" || return 1
    LAB_MUNGE_SOCKET=$1/munge/munge.socket
    munge -S "$LAB_MUNGE_SOCKET" -n | unmunge -S "$LAB_MUNGE_SOCKET" >/dev/null
}

# _lab_cgroup_choose: LAB_CGROUP=1 when cgroup v1 devices and freezer are
# there and no lab's slurm_nN groups are (nodes of another lab share the
# names: slurmd calls its group slurm_<node>).
_lab_cgroup_choose() {
    case "${LAB_CGROUP:-auto}" in
    0 | 1) return 0 ;;
    esac
    LAB_CGROUP=0
    for _cc in devices freezer; do
        grep -q " /sys/fs/cgroup/$_cc cgroup " /proc/mounts || return 0
        for _cn in $LAB_NODES; do
            [ ! -e "/sys/fs/cgroup/$_cc/slurm_$_cn" ] || return 0
        done
    done
    LAB_CGROUP=1
}

# lab_start DIR: see the header. Returns 0 with the cluster up, 2 when
# this host cannot run it (LAB_SKIP says why), 1 on failure (after the
# logs' tails and a lab_stop).
lab_start() {
    LAB_SKIP=
    if [ "$(id -u)" -ne 0 ]; then
        LAB_SKIP="needs root (slurmd starts jobs as their users)"
        return 2
    fi
    for _s_cmd in slurmctld slurmd sinfo sbatch squeue scontrol scancel \
        munge unmunge munged python3 mknod; do
        if ! command -v "$_s_cmd" >/dev/null 2>&1; then
            LAB_SKIP="$_s_cmd is not installed (scripts/deps.sh installs slurm-wlm munge)"
            return 2
        fi
    done
    if ! LAB_SLUICE=$(_lab_generator); then
        LAB_SKIP="no sluice binary for the configuration (make, or set LAB_SLUICE)"
        return 2
    fi
    case "$1" in
    /*) ;;
    *) echo "lab_start: DIR must be an absolute path, got '$1'" >&2; return 1 ;;
    esac
    case "$1" in
    *[!A-Za-z0-9/._-]*)
        echo "lab_start: DIR may hold only [A-Za-z0-9/._-] (it goes into slurm.conf), got '$1'" >&2
        return 1 ;;
    esac
    LAB_DIR=$1
    LAB_SHARED=$LAB_DIR/shared
    LAB_DEV=$LAB_DIR/dev
    LAB_JOBCOMP=$LAB_DIR/jobcomp.txt
    LAB_HOST=$(hostname)
    SLURM_CONF=$LAB_DIR/etc/slurm.conf
    export SLURM_CONF LAB_DIR LAB_SHARED LAB_DEV LAB_JOBCOMP LAB_HOST \
        LAB_SLUICE LAB_GPUS LAB_SHARDS LAB_MODEL LAB_NODES LAB_MIN_JOB_AGE

    mkdir -p "$LAB_DIR" || return 1
    # Job users reach their output directory, the devices and munge's
    # socket through DIR.
    chmod 0755 "$LAB_DIR"
    for _s_d in etc dev state log run shared spool/n1 spool/n2 spool/n3; do
        mkdir -p "$LAB_DIR/$_s_d" || return 1
    done
    chmod 1777 "$LAB_SHARED"
    _s_i=0
    while [ "$_s_i" -lt "$LAB_GPUS" ]; do
        if [ ! -c "$LAB_DEV/nvidia$_s_i" ] &&
            ! mknod -m 0666 "$LAB_DEV/nvidia$_s_i" c 195 "$_s_i" 2>/dev/null; then
            LAB_SKIP="cannot make character devices here (mknod: no CAP_MKNOD?)"
            rm -rf "$LAB_DIR"
            return 2
        fi
        _s_i=$((_s_i + 1))
    done

    _lab_cgroup_choose
    export LAB_CGROUP
    : >"$LAB_DIR/run/cgroups"
    if [ "$LAB_CGROUP" = 1 ]; then
        for _cc in devices freezer; do
            for _cn in $LAB_NODES; do
                [ -e "/sys/fs/cgroup/$_cc/slurm_$_cn" ] ||
                    echo "/sys/fs/cgroup/$_cc/slurm_$_cn" >>"$LAB_DIR/run/cgroups"
            done
        done
    fi

    if ! _lab_munge "$LAB_DIR"; then
        echo "lab_start: munge does not work" >&2
        lab_log_tail 20
        lab_stop "$LAB_DIR"
        return 1
    fi
    export LAB_MUNGE_SOCKET

    # A port taken between our probe and the daemon's bind: new ports, and
    # again, up to three times.
    _s_try=0
    while :; do
        _s_try=$((_s_try + 1))
        # shellcheck disable=SC2046
        set -- $(_lab_free_ports 4)
        if ! _lab_conf "$LAB_DIR" "$LAB_HOST" "$@"; then
            echo "lab_start: $LAB_SLUICE slurm gres-conf failed" >&2
            lab_stop "$LAB_DIR"
            return 1
        fi
        slurmctld -D -c -f "$SLURM_CONF" </dev/null >>"$LAB_DIR/log/slurmctld.out" 2>&1 &
        echo $! >"$LAB_DIR/run/slurmctld.lab.pid"
        for _s_n in $LAB_NODES; do
            slurmd -D -N "$_s_n" -f "$SLURM_CONF" </dev/null \
                >>"$LAB_DIR/log/slurmd.$_s_n.out" 2>&1 &
            echo $! >"$LAB_DIR/run/slurmd.$_s_n.lab.pid"
        done
        _lab_wait_up 30
        _s_rc=$?
        [ "$_s_rc" -ne 0 ] || break
        if [ "$_s_try" -lt 3 ] &&
            grep -qi 'address already in use' "$LAB_DIR"/log/* 2>/dev/null; then
            _lab_say "a port was taken; trying new ones"
            _lab_stop_daemons
            rm -f "$LAB_DIR"/log/*
            continue
        fi
        if [ "$_s_rc" -eq 3 ]; then
            echo "lab_start: a Slurm daemon exited while starting:" >&2
        else
            echo "lab_start: the three nodes are not idle after 30 s:" >&2
        fi
        sinfo -N -o '%N %T %E' 2>&1 | sed 's/^/#   /'
        lab_log_tail 20
        lab_stop "$LAB_DIR"
        return 1
    done

    {
        for _s_v in SLURM_CONF LAB_DIR LAB_NODES LAB_GPUS LAB_SHARDS LAB_MODEL \
            LAB_SHARED LAB_DEV LAB_JOBCOMP LAB_MIN_JOB_AGE LAB_CGROUP LAB_HOST \
            LAB_SLUICE LAB_MUNGE_SOCKET; do
            eval "printf \"%s='%s'\\n\" $_s_v \"\$$_s_v\""
        done
    } >"$LAB_DIR/lab.env"
    _lab_say "SLURM_CONF=$SLURM_CONF"
    _lab_say "nodes $LAB_NODES ($LAB_GPUS x $LAB_MODEL each, $LAB_SHARDS shards per GPU; n1 n2 in domain rack1, n3 in rack2)"
    _lab_say "job output in $LAB_SHARED; jobcomp $LAB_JOBCOMP; cgroups $LAB_CGROUP"
    return 0
}

# _lab_stop_daemons: slurmd's, then slurmctld, by the pids we recorded.
_lab_stop_daemons() {
    for _sd in slurmd.n1 slurmd.n2 slurmd.n3 slurmctld; do
        _sd_f=$LAB_DIR/run/$_sd.lab.pid
        [ -f "$_sd_f" ] || continue
        _lab_kill "$(cat "$_sd_f")" "$_sd"
        rm -f "$_sd_f"
    done
}

# lab_stop DIR: see the header. Safe to call twice, and after a failed
# start.
lab_stop() {
    [ -n "$1" ] && [ -d "$1" ] || return 0
    LAB_DIR=$1
    SLURM_CONF=$LAB_DIR/etc/slurm.conf
    export SLURM_CONF
    # What runs with its working directory in DIR is killed below.
    case "$PWD/" in
    "$LAB_DIR"/*) cd / ;;
    esac
    if [ -f "$LAB_DIR/run/slurmctld.lab.pid" ] &&
        _lab_alive "$(cat "$LAB_DIR/run/slurmctld.lab.pid")"; then
        _st_jobs=$(squeue -h -t all -o %A 2>/dev/null | sort -u | tr '\n' ' ')
        # shellcheck disable=SC2086
        [ -z "$_st_jobs" ] || scancel $_st_jobs 2>/dev/null
        _st_i=0
        while [ "$_st_i" -lt 100 ] &&
            squeue -h -t PENDING,RUNNING,COMPLETING,CONFIGURING,SUSPENDED \
                2>/dev/null | grep -q .; do
            sleep 0.1
            _st_i=$((_st_i + 1))
        done
    fi
    _lab_stop_daemons
    # A step whose slurmd is gone waits for it for ever, and ignores
    # SIGTERM; a job's processes keep their working directory in DIR.
    for _st_p in /proc/[0-9]*; do
        _st_pid=${_st_p#/proc/}
        [ "$_st_pid" != "$$" ] || continue
        _st_cwd=$(readlink "$_st_p/cwd" 2>/dev/null) || continue
        case "$_st_cwd/" in
        "$LAB_DIR"/*)
            _lab_say "killing leftover pid $_st_pid ($(tr '\0' ' ' <"$_st_p/cmdline" 2>/dev/null | cut -c1-60))"
            kill -KILL "$_st_pid" 2>/dev/null ;;
        esac
    done
    if [ -f "$LAB_DIR/munge/munged.pid" ]; then
        _lab_kill "$(cat "$LAB_DIR/munge/munged.pid")" munged
        rm -f "$LAB_DIR/munge/munged.pid"
    fi
    if [ -f "$LAB_DIR/run/cgroups" ]; then
        while read -r _st_cg; do
            [ -d "$_st_cg" ] && find "$_st_cg" -depth -type d -exec rmdir {} \; 2>/dev/null
        done <"$LAB_DIR/run/cgroups"
    fi
    if [ "${LAB_KEEP:-0}" = 1 ] || [ "${SLUICE_KEEP_TMP:-0}" = 1 ]; then
        _lab_say "kept $LAB_DIR"
    else
        rm -rf "$LAB_DIR"
    fi
    return 0
}

# lab_test_start NAME: for a TAP test that has sourced tests/lib.sh: a
# lab in a new directory (LAB, /tmp/sluice-NAME.XXXXXX) stopped when the
# test exits, with sluiced killed first; skip_all when this host cannot
# run it, bail (with what the start said) when it fails.
lab_test_start() {
    LAB=$(mktemp -d "${TMPDIR:-/tmp}/sluice-$1.XXXXXX") || bail "mktemp"
    trap '_rc=$?; kill9_sluiced; lab_stop "$LAB" >/dev/null 2>&1; (exit $_rc); _sl_cleanup' EXIT
    lab_start "$LAB" >"$LAB.start" 2>&1
    case $? in
    0) rm -f "$LAB.start" ;;
    2) rm -rf "$LAB" "$LAB.start"; skip_all "$LAB_SKIP" ;;
    *) sed 's/^/# /' "$LAB.start"; rm -f "$LAB.start"; bail "the Slurm lab starts" ;;
    esac
    diag "lab: $LAB (cgroups: $LAB_CGROUP)"
}
