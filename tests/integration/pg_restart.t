#!/usr/bin/env python3
"""pg_restart.t - the database going away under load (issue 18): a sluiced
on PostgreSQL with four clients submitting; the server restarted (pg_ctl
restart -m fast: every session dropped, commits in flight with them), and
then the daemon's sessions killed under load (pg_terminate_backend), the
writer's in the middle of a group or between two. The daemon never acknowledges a change that was
not committed: it fails what was in flight (503, or no answer), steps down
and exits 75; started again by its supervisor (here, the test) it serves
what was committed. Every acknowledged job is there once; the audit chain
verifies. A server of the test's own; skipped without PostgreSQL."""

import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import HaMember, PgServer, job_doc, pg_sh, tap, wait_for  # noqa: E402

pgs = PgServer()
if not pgs.start():
    tap.skip_all(pgs.missing)
os.environ["PGPASSFILE"] = os.path.join(pgs.dir, "pgpass")
store = "postgres://sluice@127.0.0.1:%d/sluice" % pgs.port
d = HaMember("solo", store, 1500)


def serves():
    return d.running() and d.request("GET", "/healthz", token=None, timeout=3).status == 200


d.launch()
tap.ok(wait_for(serves, 30), "sluiced serves on PostgreSQL", d.log_tail(20))
d._read_token()
token = d.token
acked, unanswered, refused = {}, [0], [0]
lock = threading.Lock()
stop = threading.Event()


def client(k):
    n = 0
    while not stop.is_set():
        n += 1
        name = "c%d-%d" % (k, n)
        try:
            c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
            c.request("POST", "/v1/jobs", body=json.dumps(job_doc(name, ("true",))),
                      headers={"Authorization": "Bearer " + token,
                               "Content-Type": "application/json"})
            r = c.getresponse()
            body = r.read()
            c.close()
        except ConnectionRefusedError:
            time.sleep(0.05)
            continue
        except (OSError, http.client.HTTPException):
            with lock:
                unanswered[0] += 1
            continue
        if r.status == 201:
            with lock:
                acked[name] = json.loads(body.decode())["id"]
        else:
            with lock:
                refused[0] += 1
            time.sleep(0.05)


threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(4)]
for t in threads:
    t.start()


def supervise(what, breaker):
    """Break the database with 'breaker' under load; the daemon must stop
    (75) and, started again, serve."""
    time.sleep(1.5)
    n0 = len(acked)
    breaker()
    try:
        d.proc.wait(30)
    except Exception:
        pass
    rc = d.proc.returncode if d.proc else None
    tap.is_(rc, 75, "%s: sluiced steps down and exits 75" % what)
    d.proc = None
    d.launch()
    tap.ok(wait_for(serves, 60), "%s: started again, it serves" % what, d.log_tail(20))
    time.sleep(1.5)
    tap.ok(len(acked) > n0, "%s: clients are acknowledged again" % what)


supervise("a PostgreSQL restart",
          lambda: tap.is_(pg_sh("restart", pgs.dir).returncode, 0, "PostgreSQL restarts"))


def kill_writer():
    # every session of the daemon, its writer's among them, whatever it
    # is doing: under four clients that is mostly in the middle of a group
    r = pgs.psql("-c", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                 "WHERE application_name = 'sluiced'")
    tap.is_(r.returncode, 0, "the daemon's sessions are terminated under load")


supervise("a dropped connection", kill_writer)
stop.set()
for t in threads:
    t.join(30)

jobs, after = [], 0
while True:
    st, js = d.json_req("GET", "/v1/jobs?state=all&limit=10000&after=%d" % after)
    if st != 200:
        break
    jobs.extend(js["jobs"])
    if js.get("next") is None:
        break
    after = js["next"]
names = {}
for j in jobs:
    names.setdefault(j["name"], []).append(j["id"])
lost = [n for n in acked if n not in names]
dups = [n for n, ids in names.items() if len(ids) > 1]
tap.diag("acknowledged %d, answered 503 %d, no answer %d, jobs in the store %d"
         % (len(acked), refused[0], unanswered[0], len(jobs)))
tap.is_(lost, [], "no acknowledged submission is lost")
tap.is_(dups, [], "none is there twice")
tap.is_([n for n in acked if names.get(n, [acked[n]])[0] != acked[n]], [],
        "each under the id it was acknowledged with")
st, v = d.json_req("GET", "/v1/audit/verify")
tap.ok(st == 200 and v.get("ok") is True, "the audit chain verifies", v)
tap.done_testing(d)
