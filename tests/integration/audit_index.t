#!/usr/bin/env python3
"""audit_index.t - the audit log's search columns are covered by verify.

GET /v1/audit searches the store's index columns (actor, action, object,
outcome, time), which the hash chain does not cover. An edit of one of
them in SQLite hides a record from a search; verification (GET
/v1/audit/verify and `sluice audit verify`) must then fail, naming the
record and the column, and pass again once the column is put back."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, tap  # noqa: E402

d = Sluiced(fake_gpus="1xH100")
d.start()
st, _ = d.json_req("POST", "/v1/jobs", job_doc("one", ["true"]))
tap.is_(st, 201, "a job is submitted (job.submit is recorded)")
st, _ = d.json_req("POST", "/v1/jobs", job_doc("two", ["true"], team="nosuch"))
tap.is_(st, 400, "a bad one is refused (the refusal is recorded)")

recs = d.json_req("GET", "/v1/audit?action=job.submit&outcome=ok")[1]["records"]
tap.ok(len(recs) >= 1, "the search finds the submission")
seq = recs[0]["seq"]
st, v = d.json_req("GET", "/v1/audit/verify")
tap.ok(st == 200 and v["ok"], "the log verifies", v)


def edit(col, value):
    old = d.store_rows("SELECT %s FROM audit WHERE seq = ?" % col, (seq,))[0][0]
    d.store_exec("UPDATE audit SET %s = ? WHERE seq = ?" % col, (value, seq))
    return old


env = dict(os.environ, SLUICE_SERVER=d.server, SLUICE_TOKEN=d.token)
for col, value, query in (("actor", "mallory", "actor=admin"),
                          ("action", "job.other", "action=job.submit"),
                          ("object", "job:999", "object=" + recs[0]["object"]),
                          ("outcome", "refused", "outcome=ok"),
                          ("at", 0, "from=" + recs[0]["time"])):
    old = edit(col, value)
    found = d.json_req("GET", "/v1/audit?limit=10000&" + query)[1]["records"]
    tap.ok(all(r["seq"] != seq for r in found),
           "an edited %s column hides record %d from a search on it" % (col, seq))
    st, v = d.json_req("GET", "/v1/audit/verify")
    err = (v or {}).get("error") or {}
    tap.ok(st == 200 and v["ok"] is False and err.get("record") == seq,
           "verify fails at record %d" % seq, v)
    name = "time" if col == "at" else col
    tap.ok(name in err.get("message", ""), "naming the %s column" % name, err)
    p = subprocess.run([os.path.join(SLUICE_BIN, "sluice"), "audit", "verify"], env=env,
                       capture_output=True, text=True, timeout=60)
    tap.is_(p.returncode, 3, "sluice audit verify exits 3")
    edit(col, old)
    st, v = d.json_req("GET", "/v1/audit/verify")
    tap.ok(st == 200 and v["ok"], "put back, the log verifies again", v)
tap.done_testing(d)
