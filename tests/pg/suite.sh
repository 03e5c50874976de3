#!/bin/sh
# suite.sh - the PostgreSQL pass of make test: the whole integration suite
# again, each daemon on a database of its own on one PostgreSQL server.
#
#   tests/pg/suite.sh start DIR   start the server in DIR/pg and write, for
#                                 each tests/integration/*.t but pg_*.t
#                                 (which start servers of their own) and
#                                 those that start no daemon on the
#                                 harnesses' store (listed below), a
#                                 wrapper DIR/t/NAME.t that runs it with
#                                 SLUICE_TEST_STORE=postgres
#   tests/pg/suite.sh stop DIR    stop the server and remove DIR
#
# The wrappers go to the same prove run as the SQLite pass, so make test
# prints one summary. The harnesses (tests/lib.sh, sltest.py) give every
# daemon a database of its own (--store postgres://.../t_...) and drop it
# at exit. Without PostgreSQL's server programs, start writes no wrappers
# and says so: the pass is skipped, never faked.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: suite.sh start|stop DIR" >&2; exit 64; }

case $cmd in
start)
    rm -rf "$dir"
    mkdir -p "$dir/t"
    chmod 0711 "$dir"
    rc=0
    url=$(sh "$here/pg.sh" start "$dir/pg") || rc=$?
    if [ "$rc" -eq 2 ]; then
        echo "suite.sh: PostgreSQL is not installed: the PostgreSQL pass is skipped" >&2
        exit 0
    fi
    [ "$rc" -eq 0 ] || { echo "suite.sh: the PostgreSQL server did not start" >&2; exit 1; }
    for t in "$repo"/tests/integration/*.t; do
        name=${t##*/}
        # pg_*.t start servers of their own; these start no daemon (or, as
        # browser.t's harness, one of their own on SQLite), so a second run
        # would test nothing new
        case $name in
        pg_* | fuzz_replay.t | cli_help.t | client.t | sim.t | sim_timed.t | slurm_lab.t | \
            web_unit.t | browser.t | oidc_idp.t) continue ;;
        esac
        cat >"$dir/t/$name" <<WRAP
#!/bin/sh
# $name on PostgreSQL (tests/pg/suite.sh)
SLUICE_TEST_STORE=postgres SLUICE_TEST_PG_URL='$url' PGPASSFILE='$dir/pg/pgpass' \\
    exec '$t' "\$@"
WRAP
        chmod +x "$dir/t/$name"
    done
    echo "suite.sh: PostgreSQL at $url for $(ls "$dir/t" | wc -l) tests"
    ;;
stop)
    [ -d "$dir/pg" ] && sh "$here/pg.sh" stop "$dir/pg" >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: suite.sh start|stop DIR" >&2
    exit 64
    ;;
esac
