#!/usr/bin/env python3
"""pg_harness.t - tests/pg/pg.sh, the throwaway PostgreSQL server that the
PostgreSQL store's tests and benchmarks start (docs/ha.md once that store
exists).

A server in a directory of the test's own: it refuses a directory its
account cannot reach, naming it; it starts on a loopback port as an
unprivileged account (never root), its cluster 0700 and the password file
0600; the role logs in with its SCRAM password only (none given: refused);
commits are durable (fsync, synchronous_commit, full_page_writes on); a
committed row survives a restart; stop leaves no server behind. Skipped
when PostgreSQL's server programs are not installed."""

import os
import socket
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import pg_sh as pg, tap  # noqa: E402


def psql(d, port, sql, password=True):
    env = dict(os.environ, PGPASSFILE=os.path.join(d, "pgpass") if password else "/dev/null",
               PGCONNECT_TIMEOUT="10")
    return subprocess.run(["psql", "-X", "-w", "-A", "-t", "-h", "127.0.0.1", "-p", str(port),
                           "-U", "sluice", "-d", "sluice", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, env=env, timeout=60)


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


top = tempfile.mkdtemp(prefix="sluice-pgh.")
os.chmod(top, 0o700)
d = os.path.join(top, "pg")
try:
    r = pg("start", d)
    if r.returncode == 2:
        tap.skip_all("PostgreSQL's server programs are not installed: " + r.stderr.strip())
    if os.geteuid() == 0:
        tap.ok(r.returncode == 1 and "cannot reach" in r.stderr and d in r.stderr,
               "a directory the server's account cannot reach is refused, named", r.stderr)
    else:
        tap.skip(1, "not root: the server runs as the caller")
        pg("stop", d)
    subprocess.run(["rm", "-rf", d])
    os.chmod(top, 0o711)

    r = pg("start", d)
    tap.is_(r.returncode, 0, "pg.sh start")
    url = r.stdout.strip()
    port = int(open(os.path.join(d, "port")).read())
    tap.is_(url, "postgres://sluice@127.0.0.1:%d/sluice" % port,
            "it prints the URL, with no password in it")
    tap.is_(pg("url", d).stdout.strip(), url, "pg.sh url prints it again")

    st = os.stat(os.path.join(d, "data"))
    tap.is_(stat.S_IMODE(st.st_mode), 0o700, "the cluster is 0700")
    if os.geteuid() == 0:
        tap.ok(st.st_uid != 0, "the cluster belongs to an account that is not root",
               "uid %d" % st.st_uid)
    else:
        tap.skip(1, "not root")
    tap.is_(stat.S_IMODE(os.stat(os.path.join(d, "pgpass")).st_mode), 0o600,
            "the password file is 0600")
    tap.ok(not os.path.exists(os.path.join(d, "pwfile")), "initdb's password file is gone")

    r = psql(d, port, "SELECT 1", password=False)
    tap.ok(r.returncode != 0 and "password" in r.stderr,
           "without the password the role is refused (no trust)", r.stderr)
    r = psql(d, port, "SELECT current_user || ' ' || current_database()")
    tap.is_(r.stdout.strip(), "sluice sluice", "with PGPASSFILE the role logs in to its database")
    r = psql(d, port, "SELECT setting FROM pg_settings WHERE name IN "
             "('fsync', 'synchronous_commit', 'full_page_writes', 'listen_addresses') ORDER BY name")
    tap.is_(r.stdout.split(), ["on", "on", "127.0.0.1", "on"],
            "fsync, full_page_writes, listen_addresses 127.0.0.1, synchronous_commit")
    if os.geteuid() == 0:
        ps = subprocess.run(["ps", "-o", "user=", "-C", "postgres"], capture_output=True, text=True)
        tap.ok("root" not in ps.stdout.split(), "no postgres process runs as root", ps.stdout)
    else:
        tap.skip(1, "not root")

    r = psql(d, port, "CREATE TABLE t(v text); INSERT INTO t VALUES ('kept')")
    tap.ok(r.returncode == 0, "a committed row", r.stderr)
    r = pg("restart", d)
    tap.ok(r.returncode == 0, "pg.sh restart", r.stderr)
    tap.is_(psql(d, port, "SELECT v FROM t").stdout.strip(), "kept",
            "the row is there after the restart")

    r = pg("stop", d)
    tap.is_(r.returncode, 0, "pg.sh stop")
    tap.ok(not os.path.exists(os.path.join(d, "data", "postmaster.pid")) and not port_open(port),
           "no server is left: no postmaster.pid, the port closed")
    tap.is_(pg("stop", d).returncode, 0, "a second stop changes nothing")
finally:
    pg("stop", d)
    subprocess.run(["rm", "-rf", top])
tap.done_testing()
