#!/usr/bin/env python3
"""races.t - readers on the HTTP thread while the engine changes the
catalog, under ThreadSanitizer.

One thread applies manifests that add teams and queues, while others
scrape /metrics, list /v1/queues and /v1/nodes, and submit and cancel
jobs. The daemon is the ThreadSanitizer build when make test built one
($SLUICE_TSAN_BIN, halt_on_error: a race kills it), else the usual one.
It must answer every request and exit cleanly; the readers must see each
queue with its team, never a half-grown catalog."""

import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sltest  # noqa: E402
from sltest import Sluiced, job_doc, tap  # noqa: E402

TSAN = os.environ.get("SLUICE_TSAN_BIN")
if TSAN and os.access(os.path.join(TSAN, "sluiced"), os.X_OK):
    sltest.SLUICE_BIN = TSAN
    os.environ.setdefault("TSAN_OPTIONS", "halt_on_error=1 second_deadlock_stack=1")
    tap.diag("daemon: the ThreadSanitizer build in %s" % TSAN)
else:
    tap.diag("daemon: %s (no ThreadSanitizer build)" % sltest.SLUICE_BIN)

d = Sluiced(fake_gpus="4xH100")
d.start()
ROUNDS = 40
stop = threading.Event()
errors = []
counts = {"metrics": 0, "queues": 0, "jobs": 0}


def conn():
    return http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)


def get(c, path):
    c.request("GET", path, headers={"Authorization": "Bearer " + d.token})
    r = c.getresponse()
    return r.status, r.read()


def reader(path, key):
    c = conn()
    while not stop.is_set():
        try:
            st, body = get(c, path)
        except (OSError, http.client.HTTPException) as e:
            errors.append("%s: %s" % (path, e))
            return
        if st != 200:
            errors.append("%s: %d" % (path, st))
            return
        if key == "queues":
            for q in json.loads(body)["queues"]:
                if not q.get("team") or not q.get("name"):
                    errors.append("a queue without its name or team: %r" % q)
        counts[key] += 1


def submitter():
    c = conn()
    while not stop.is_set():
        doc = json.dumps(job_doc("r", ["true"]))
        try:
            c.request("POST", "/v1/jobs", body=doc, headers={
                "Authorization": "Bearer " + d.token, "Content-Type": "application/json"})
            r = c.getresponse()
            body = r.read()
            if r.status != 201:
                errors.append("submit: %d %s" % (r.status, body[:200]))
                return
            jid = json.loads(body)["id"]
            c.request("DELETE", "/v1/jobs/%d" % jid,
                      headers={"Authorization": "Bearer " + d.token})
            r = c.getresponse()
            r.read()
            counts["jobs"] += 1
        except (OSError, http.client.HTTPException) as e:
            errors.append("submit: %s" % e)
            return


threads = [threading.Thread(target=reader, args=("/metrics", "metrics")),
           threading.Thread(target=reader, args=("/v1/queues", "queues")),
           threading.Thread(target=reader, args=("/v1/nodes", "metrics")),
           threading.Thread(target=submitter)]
for t in threads:
    t.start()
applied = 0
for i in range(ROUNDS):
    docs = ("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t%d}\n---\n"
            "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: t%d-a}\n"
            "spec: {team: t%d, nominal: {gpus: 1}}\n---\n"
            "apiVersion: sluice/v1\nkind: User\nmetadata: {name: u%d}\n"
            "spec: {team: t%d, role: member}\n" % (i, i, i, i, i))
    r = d.request("POST", "/v1/apply", docs, ctype="application/yaml")
    if r.status == 200:
        applied += 1
    else:
        errors.append("apply %d: %r" % (i, r))
        break
time.sleep(0.5)
stop.set()
for t in threads:
    t.join(120)
tap.is_(applied, ROUNDS, "%d applies, each adding a team, a queue and a user" % ROUNDS)
tap.ok(not errors, "every concurrent read and submission was answered (%d scrapes, %d queue "
       "lists, %d jobs)" % (counts["metrics"], counts["queues"], counts["jobs"]), *errors[:5])
tap.ok(counts["metrics"] > 0 and counts["queues"] > 0, "the readers ran meanwhile")
st, body = d.json_req("GET", "/v1/queues")
tap.ok(st == 200 and len(body["queues"]) >= ROUNDS, "every queue is listed")
tap.ok(d.running(), "sluiced is still running", d.log_tail(40))
tap.done_testing(d)
