#!/bin/sh
# pg.sh - a throwaway PostgreSQL server for the tests and benchmarks: its
# own cluster (initdb) in a directory of the caller's, owned by an
# unprivileged account, listening on one loopback port, stopped and gone
# when the caller is done. Nothing of the system's own PostgreSQL (Debian's
# "main" cluster, port 5432) is used or touched.
#
#   tests/pg/pg.sh start DIR [PORT]   print the server's URL
#   tests/pg/pg.sh stop DIR           stop it (fast shutdown), keep DIR
#   tests/pg/pg.sh restart DIR        stop it (fast) and start it again
#   tests/pg/pg.sh url DIR            print the URL again
#
# DIR must not exist or be empty, and its parents be searchable by the
# server's account (a `mktemp -d` parent is 0700: chmod 0711 it); it gets data/ (the cluster, 0700), run/
# (the Unix socket), pgpass (0600: the password of the role, for
# PGPASSFILE), port and log. The server runs as the account in
# SLUICE_PG_USER (default sluice-pgtest, made on first use when run as
# root: PostgreSQL refuses to run as root), or as the caller when not root.
# The role `sluice` owns the database `sluice`; it logs in over TCP with a
# SCRAM-SHA-256 password (no trust), as a deployment would. Durability is
# PostgreSQL's default and what sluiced relies on: fsync and
# synchronous_commit on, full_page_writes on.
#
# The URL printed, postgres://sluice@127.0.0.1:PORT/sluice, carries no
# password: clients take it from PGPASSFILE=DIR/pgpass.
#
# PORT: default a free one the kernel gives. Needs PostgreSQL's server
# programs (Debian: postgresql); exits 2 with a message when they are
# absent, so a caller can skip.
set -eu

usage() {
    echo "usage: pg.sh start DIR [PORT] | stop DIR | restart DIR | url DIR" >&2
    exit 64
}

# The newest installed server's bin directory (initdb, pg_ctl, postgres).
pg_bindir() {
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
        [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { printf '%s\n' "$d"; return 0; }
    done
    if command -v pg_config >/dev/null 2>&1; then
        d=$(pg_config --bindir)
        [ -x "$d/initdb" ] && { printf '%s\n' "$d"; return 0; }
    fi
    return 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Run a command as the server's account (root: through runuser).
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$owner" -- "$@"
    else
        "$@"
    fi
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
owner=${SLUICE_PG_USER:-sluice-pgtest}
[ "$(id -u)" = 0 ] || owner=$(id -un)

case $cmd in
start)
    bin=$(pg_bindir) || { echo "pg.sh: no PostgreSQL server programs (apt-get install postgresql)" >&2; exit 2; }
    port=${3:-$(free_port)}
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
        echo "pg.sh: $dir is not empty" >&2
        exit 1
    fi
    if [ "$(id -u)" = 0 ] && ! id "$owner" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$owner"
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # The account must reach DIR (its parents searchable: a mktemp -d
    # parent is 0700, make it 0711); nobody else may read what is in it.
    chmod 0711 "$dir"
    if ! as_owner test -x "$dir"; then
        echo "pg.sh: account $owner cannot reach $dir: make its parent directories searchable (chmod o+x)" >&2
        exit 1
    fi
    umask 077
    pw=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
    printf '%s\n' "$pw" > "$dir/pwfile"
    printf '127.0.0.1:%s:*:sluice:%s\n' "$port" "$pw" > "$dir/pgpass"
    printf '%s\n' "$port" > "$dir/port"
    mkdir -p "$dir/data" "$dir/run"
    [ "$(id -u)" = 0 ] && chown "$owner" "$dir/data" "$dir/run" "$dir/pwfile"
    as_owner "$bin/initdb" -D "$dir/data" -U sluice --pwfile="$dir/pwfile" \
        --auth-local=scram-sha-256 --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
        echo "pg.sh: initdb failed:" >&2
        cat "$dir/initdb.log" >&2
        exit 1
    }
    rm -f "$dir/pwfile"
    cat >>"$dir/data/postgresql.conf" <<EOF
# pg.sh: one loopback port, the socket in DIR/run, durable commits.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/run'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
EOF
    touch "$dir/log"
    [ "$(id -u)" = 0 ] && chown "$owner" "$dir/log"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 start >/dev/null || {
        echo "pg.sh: the server did not start:" >&2
        cat "$dir/log" >&2
        exit 1
    }
    PGPASSFILE="$dir/pgpass" "$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U sluice \
        -d postgres -v ON_ERROR_STOP=1 -c 'CREATE DATABASE sluice' >/dev/null
    printf 'postgres://sluice@127.0.0.1:%s/sluice\n' "$port"
    ;;
stop)
    [ -d "$dir/data" ] || exit 0
    bin=$(pg_bindir) || exit 0
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
            as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    ;;
restart)
    [ -d "$dir/data" ] || { echo "pg.sh: no server in $dir" >&2; exit 1; }
    bin=$(pg_bindir) || { echo "pg.sh: no PostgreSQL server programs" >&2; exit 2; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -m fast -w -t 60 restart >/dev/null || {
        echo "pg.sh: the server did not start again:" >&2
        tail -20 "$dir/log" >&2
        exit 1
    }
    ;;
url)
    [ -f "$dir/port" ] || { echo "pg.sh: no server in $dir" >&2; exit 1; }
    printf 'postgres://sluice@127.0.0.1:%s/sluice\n' "$(cat "$dir/port")"
    ;;
*)
    usage
    ;;
esac
