#!/usr/bin/env python3
"""pg_copy.t - sluiced copy-store: a live SQLite store copied into an empty
PostgreSQL one (docs/ha.md, "Moving an SQLite store to PostgreSQL"). The
copy reads one snapshot while the daemon goes on, verifies rows and the
audit chain before it commits, and a sluiced started on the copy answers as
the old one did: the same jobs, a token made before still works, the audit
log verifies. Refusals leave the target unchanged: a target that is not
empty, bad arguments, a tampered audit record in the source. Also sluiced
migrate. A server of the test's own; skipped without PostgreSQL."""

import os
import shutil
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, PgServer, Sluiced, job_doc, tap, team_yaml  # noqa: E402

pgs = PgServer()
if not pgs.start():
    tap.skip_all(pgs.missing)
os.environ["PGPASSFILE"] = os.path.join(pgs.dir, "pgpass")
base = "postgres://sluice@127.0.0.1:%d/" % pgs.port
SLUICED = os.path.join(SLUICE_BIN, "sluiced")


def newdb(name):
    r = pgs.psql("-c", "CREATE DATABASE " + name)
    assert r.returncode == 0, r.stderr
    return base + name


def copy(src, dst):
    return subprocess.run([SLUICED, "copy-store", "--from", src, "--to", dst],
                          capture_output=True, text=True, timeout=300)


# An SQLite store with some of everything, its daemon left running.
d = Sluiced()
d.start()
r, toks = d.users([("ann", "nlp", "member")], team_yaml("nlp"))
tap.ok(r.status == 200 and toks.get("ann"), "a team, a user and her token")
ids = []
for i in range(20):
    st, js = d.json_req("POST", "/v1/jobs", job_doc("j%d" % i, ("true",), team="nlp"),
                        token=toks["ann"])
    if st == 201:
        ids.append(js["id"])
tap.is_(len(ids), 20, "twenty jobs submitted")
for _ in range(300):
    states = {(d.request("GET", "/v1/jobs/%d" % j).json or {}).get("state") for j in ids}
    if states <= {"Succeeded"}:
        break
    time.sleep(0.1)
before = d.json_req("GET", "/v1/jobs?state=all&limit=1000")[1]["jobs"]
src = os.path.join(d.data, "sluice.db")

# the copy, while the daemon runs
url = newdb("copy1")
p = copy(src, url)
tap.ok(p.returncode == 0 and "verified" in p.stdout, "the live store is copied and verified",
       p.stdout + p.stderr)
tap.ok("jobs" in p.stdout and "audit" in p.stdout, "table by table, with rows and times",
       p.stdout)
tap.diag(p.stdout)

# a sluiced on the copy answers as the old one did
d.stop()
e = Sluiced(args=["--store", url])
os.makedirs(e.data, mode=0o700, exist_ok=True)
shutil.copy(os.path.join(d.data, "audit.key"), os.path.join(e.data, "audit.key"))
with open(os.path.join(d.data, "admin.token")) as f:
    admin = f.read().strip()
e.start()
e.token = admin
after = e.json_req("GET", "/v1/jobs?state=all&limit=1000")[1]["jobs"]
tap.is_([(j["id"], j["name"], j["state"]) for j in after],
        [(j["id"], j["name"], j["state"]) for j in before],
        "the copy holds the same jobs, ids and states")
tap.is_(e.request("GET", "/v1/whoami", token=toks["ann"]).status, 200,
        "a token made before the copy still works")
st, v = e.json_req("GET", "/v1/audit/verify")
tap.ok(st == 200 and v.get("ok") is True, "the copied audit log verifies", v)
st, js = e.json_req("POST", "/v1/jobs", job_doc("next", ("true",), team="nlp"),
                    token=toks["ann"])
tap.ok(st == 201 and js["id"] == max(ids) + 1, "and the next job takes the next id", js)
e.stop()

# refusals
p = copy(src, url)
tap.ok(p.returncode == 1 and "not empty" in p.stderr, "a target that is not empty is refused",
       p.stderr)
p = copy(src, "sqlite:/tmp/x.db")
tap.ok(p.returncode != 0 and "--to" in p.stderr, "a target that is not PostgreSQL is refused",
       p.stderr)
p = copy(url, newdb("copy2"))
tap.ok(p.returncode != 0 and "--from" in p.stderr, "a source that is not SQLite is refused",
       p.stderr)
tampered = os.path.join(d.tmp, "tampered.db")
shutil.copy(src, tampered)
db = sqlite3.connect(tampered)
db.execute("UPDATE audit SET line = replace(line, 'j3', 'jX') WHERE seq = "
           "(SELECT min(seq) FROM audit WHERE line LIKE '%j3%')")
db.commit()
db.close()
url3 = newdb("copy3")
p = copy(tampered, url3)
tap.ok(p.returncode == 1 and "audit" in p.stderr and "nothing was committed" in p.stderr,
       "a tampered audit record in the source stops the copy", p.stderr)
r = pgs.psql("-d", "copy3", "-c", "SELECT count(*) FROM jobs")
tap.is_(r.stdout.strip(), "0", "and the target is left empty")

# sluiced migrate
p = subprocess.run([SLUICED, "migrate", "--store", newdb("fresh")], capture_output=True,
                   text=True, timeout=60)
tap.ok(p.returncode == 0 and "schema version" in p.stdout, "sluiced migrate brings a new "
       "store to this build's schema", p.stdout + p.stderr)
p = subprocess.run([SLUICED, "migrate"], capture_output=True, text=True, timeout=60)
tap.ok(p.returncode == 2 and "usage" in p.stderr, "and says how to call it without --store")
p = subprocess.run([SLUICED, "copy-store", "--from", src, "--to", url, "--force"],
                   capture_output=True, text=True, timeout=60)
tap.ok(p.returncode == 2 and "unknown argument '--force'" in p.stderr,
       "an argument copy-store does not know is refused, named", p.stderr)
tap.done_testing()
