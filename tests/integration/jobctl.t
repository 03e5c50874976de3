#!/usr/bin/env python3
"""jobctl.t - job control after submission: hold, release, requeue, update.

One sluiced with 4 fake GPUs and users of team default: alice and bob
(members), tina (team-admin); nick, a member of team nlp. A job of every
GPU keeps the others Pending. A held job keeps its place in line: the job
behind it starts when the GPUs free, and once released it starts before a
job submitted after it. A hold outlives a restart. A running job cannot be
held, a job not held cannot be released, a finished one neither (409,
field "state"); another member cannot hold or release alice's job (403,
field "user"), another team's member does not see it (404); her
team-admin and an admin may. A requeued running job gets its checkpoint
signal, is Pending again and runs as its next attempt with no retry used;
with --hold it waits held. A pending job cannot be requeued, nor one
already stopping. An update lowers a job's maxRuntime while pending or
running (the running job's timer follows), an admin may raise it, bad
values are refused naming the field; it outlives a restart. A
team-admin's requeue --hold of alice's job is an admin hold she may not
release. Every hold, release and requeue is in the audit log and the
job's events; sluice hold/release/requeue/show/why say it."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Sluiced, job_doc, tap, team_yaml  # noqa: E402

d = Sluiced(fake_gpus="4xH100")
d.start()
cli = d.cli

r, TOK = d.users((("alice", "default", "member"), ("bob", "default", "member"),
                  ("tina", "default", "team-admin"), ("nick", "nlp", "member")),
                 team_yaml("nlp"))
tap.ok(r.status == 200, "users alice, bob (members), tina (team-admin), nick (nlp)", r)
tap.ok(all(TOK.values()), "a token for each")


def submit(name, gpus, user="alice"):
    st, body = d.json_req("POST", "/v1/jobs", job_doc(
        name, command=("sleep", "300"), resources={"gpus": gpus, "cpus": 0.1,
                                                    "memory": "64Mi"}), token=TOK[user])
    if st != 201:
        tap.diag("submit %s: %d %r" % (name, st, body))
    return body.get("id") if st == 201 else None


def job(jid):
    return d.json_req("GET", "/v1/jobs/%d" % jid)[1]


def wait_state(jid, state, secs=30):
    end = time.time() + secs
    while time.time() < end:
        if job(jid).get("state") == state:
            return True
        time.sleep(0.1)
    return False


def ctl(verb, jid, user=None):
    return d.request("POST", "/v1/jobs/%d/%s" % (jid, verb), None,
                     token=TOK[user] if user else d.token)


def events(jid):
    return d.json_req("GET", "/v1/jobs/%d/events" % jid)[1].get("events", [])


# --- the place in line ---------------------------------------------------------------
hog = submit("hog", 4)
tap.ok(hog and wait_state(hog, "Running"), "a job of every GPU runs")
a = submit("a", 4)
b = submit("b", 4)
tap.ok(a and b and wait_state(a, "Pending") and wait_state(b, "Pending"),
       "jobs a and b wait behind it")
rc, out, err = cli("hold", str(a), token=TOK["alice"])
tap.ok(rc == 0 and out.strip() == "held %d" % a, "sluice hold: alice holds her job a", out, err)
ja = job(a)
tap.ok(ja.get("state") == "Pending" and ja.get("held") is True,
       "a is Pending and held", ja)
tap.is_(ja.get("reason"), "held: not scheduled until released", "its reason says held")
tap.is_(ja.get("message"), "held by alice", "its message says by whom")
rc, out, err = cli("why", str(a))
tap.ok(rc == 0 and "held" in out, "sluice why says it is held", out, err)
rc, out, err = cli("show", str(a))
tap.ok(rc == 0 and "held: not scheduled until released" in out, "sluice show too", out)
rc, out, err = cli("jobs", "-o", "wide")
tap.ok(rc == 0 and any(line.startswith(str(a)) and "held" in line
                       for line in out.splitlines()), "sluice jobs -o wide too", out)
tap.is_(job(b).get("held"), False, "b is not held")
c = submit("c", 4)  # after a's hold, before its release
tap.ok(c and wait_state(c, "Pending"), "job c is submitted while a is held")
tap.is_(d.request("DELETE", "/v1/jobs/%d" % hog).status, 202, "the job of every GPU ends")
tap.ok(wait_state(b, "Running"), "b, behind the held a, starts when the GPUs free")
tap.ok(job(a).get("state") == "Pending" and job(c).get("state") == "Pending",
       "a stays held; c waits behind b")
r = ctl("release", a, "alice")
tap.ok(r.status == 200 and r.json.get("held") is False, "alice releases a", r)
tap.is_(job(a).get("message"), "released by alice", "its message says by whom")
tap.is_(d.request("DELETE", "/v1/jobs/%d" % b).status, 202, "b ends")
tap.ok(wait_state(a, "Running"), "a starts: it kept its place in line, before c")
tap.is_(job(c).get("state"), "Pending", "c still waits")
ev = [(e["type"], e.get("message")) for e in events(a)]
tap.ok(("hold", "held by alice") in ev and ("release", "released by alice") in ev,
       "a's events have the hold and the release", ev)

# --- refusals --------------------------------------------------------------------------
r = ctl("hold", a, "alice")
tap.ok(r.status == 409 and r.error_field() == "state" and "only a pending job" in r.body.decode(),
       "a running job cannot be held (409, state)", r)
r = ctl("release", c, "alice")
tap.ok(r.status == 409 and r.error_field() == "state" and "not held" in r.body.decode(),
       "a job not held cannot be released (409, state)", r)
r = ctl("hold", c, "bob")
tap.ok(r.status == 403 and r.error_field() == "user" and "only its user" in r.body.decode(),
       "bob, another member, cannot hold alice's job (403, user)", r)
r = ctl("hold", c, "nick")
tap.is_(r.status, 404, "a member of another team does not see it (404)")
tap.is_(job(c).get("held"), False, "nothing changed")
r = ctl("hold", c, "tina")
tap.ok(r.status == 200 and r.json.get("held") is True, "tina, her team-admin, may hold it", r)
r = ctl("hold", c, "tina")
tap.ok(r.status == 200 and r.json.get("held") is True, "holding a held job again: 200")
r = ctl("release", c, "bob")
tap.is_(r.status, 403, "bob cannot release it")
r = ctl("release", c)
tap.ok(r.status == 200 and r.json.get("held") is False, "an admin may release it", r)
r = ctl("hold", 999999, "alice")
tap.is_(r.status, 404, "an unknown job: 404")
rc, out, err = cli("hold", str(c), token=TOK["bob"])
tap.ok(rc == 2 and "only its user" in err, "sluice hold says why it was refused (exit 2)",
       rc, out, err)
tap.is_(d.request("DELETE", "/v1/jobs/%d" % a).status, 202, "a is cancelled")
tap.ok(wait_state(a, "Cancelled"), "a ends")
r = ctl("hold", a, "alice")
tap.ok(r.status == 409 and "already finished" in r.body.decode(),
       "a finished job cannot be held (409)", r)

# --- a hold outlives a restart -----------------------------------------------------------
tap.ok(wait_state(c, "Running"), "c runs on the free GPUs")
e = submit("e", 4)
tap.ok(e and wait_state(e, "Pending"), "e waits behind c")
tap.is_(ctl("hold", e, "alice").status, 200, "e is held")
d.restart()
je = job(e)
tap.ok(je.get("state") == "Pending" and je.get("held") is True and
       je.get("reason") == "held: not scheduled until released",
       "after a restart of sluiced e is still held", je)
tap.is_(d.request("DELETE", "/v1/jobs/%d" % c).status, 202, "c ends")
tap.ok(wait_state(c, "Cancelled"), "c is gone")
time.sleep(1.5)
tap.is_(job(e).get("state"), "Pending", "the GPUs free, e stays Pending: held")
tap.is_(ctl("release", e, "alice").status, 200, "released")
tap.ok(wait_state(e, "Running"), "e runs")
tap.is_(d.request("DELETE", "/v1/jobs/%d" % e).status, 202, "e is cancelled")

# --- requeue ------------------------------------------------------------------------------
def ckpt_job(name):
    st, body = d.json_req("POST", "/v1/jobs", job_doc(
        name, command=("sh", "-c", 'trap "echo ckpt-$SLUICE_ATTEMPT; sleep 2; exit 0" USR1; '
                       'echo run-$SLUICE_ATTEMPT; while :; do sleep 0.1; done'),
        resources={"gpus": 1, "cpus": 0.1, "memory": "64Mi"},
        checkpoint={"signal": "SIGUSR1", "grace": "20s"}), token=TOK["alice"])
    if st != 201:
        tap.diag("submit %s: %d %r" % (name, st, body))
    return body.get("id") if st == 201 else None


def logs(jid):
    return d.request("GET", "/v1/jobs/%d/logs" % jid).body.decode(errors="replace")


def wait_for(cond, secs=30):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


q = ckpt_job("rq")
tap.ok(q and wait_state(q, "Running") and wait_for(lambda: "run-0" in logs(q)),
       "a job with a checkpoint signal runs")
r = ctl("requeue", q, "bob")
tap.ok(r.status == 403 and r.error_field() == "user", "bob cannot requeue alice's job", r)
rc, out, err = cli("requeue", str(q), token=TOK["alice"])
tap.ok(rc == 0 and out.strip() == "requeueing %d" % q, "sluice requeue: alice requeues it",
       out, err)
r = ctl("requeue", q, "alice")
tap.ok(r.status == 409 and r.error_field() == "state" and "already being stopped" in
       r.body.decode(), "requeueing it again while it stops: 409", r)
tap.ok(wait_for(lambda: "ckpt-0" in logs(q)), "it received its checkpoint signal")
tap.ok(wait_for(lambda: job(q).get("attempt") == 1 and job(q).get("state") == "Running"),
       "it is back in line and runs again as attempt 1 (the second)", job(q))
jq = job(q)
tap.ok(jq.get("retries") == 0 and jq.get("exit_code") is None,
       "no retry was used (it had none) and it did not fail", jq)
tap.ok(wait_for(lambda: "run-1" in logs(q)), "the second attempt runs with SLUICE_ATTEMPT=1")
ev = [(e["type"], e.get("from"), e.get("to"), e.get("message") or "") for e in events(q)]
tap.ok(any(t == "requeue" and m.startswith("requeued by alice: SIGUSR1") for t, _, _, m in ev),
       "the job's events say who requeued it", ev)
tap.ok(any(t == "requeue" and f == "Preempted" and to == "Pending" for t, f, to, _ in ev),
       "and that it went back to Pending", ev)
tap.ok(not any(to == "Failed" for _, _, to, _ in ev), "never Failed")

rc, out, err = cli("requeue", "--hold", str(q), token=TOK["tina"])
tap.ok(rc == 0 and out.strip() == "requeueing %d (then held)" % q,
       "sluice requeue --hold: tina requeues it and holds it", out, err)
tap.ok(wait_for(lambda: job(q).get("held") is True), "it is back in line, held", job(q))
jq = job(q)
tap.ok(jq.get("state") == "Pending" and jq.get("attempt") == 2 and
       "held until released" in (jq.get("message") or ""),
       "Pending as attempt 2, its message says held", jq)
time.sleep(1)
tap.is_(job(q).get("state"), "Pending", "with GPUs free it does not start")
r = ctl("requeue", q, "alice")
tap.ok(r.status == 409 and r.error_field() == "state" and "only a running job" in
       r.body.decode(), "a pending job cannot be requeued (409, state)", r)
tap.is_(jq.get("hold"), {"kind": "admin", "by": "tina"},
        "tina's hold of alice's job is an admin hold")
r = ctl("release", q, "alice")
tap.ok(r.status == 403 and r.error_field() == "hold", "which alice may not release", r)
tap.is_(ctl("release", q, "tina").status, 200, "tina releases it")
tap.ok(wait_state(q, "Running"), "it runs again")
tap.is_(d.request("DELETE", "/v1/jobs/%d" % q).status, 202, "it is cancelled")
tap.ok(wait_state(q, "Cancelled"), "and ends")
r = ctl("requeue", q, "alice")
tap.ok(r.status == 409 and "already finished" in r.body.decode(),
       "a finished job cannot be requeued (409)", r)
# a requeue that a restart interrupts is finished after it
q2 = ckpt_job("rq2")
tap.ok(q2 and wait_state(q2, "Running") and wait_for(lambda: "run-0" in logs(q2)),
       "another job with a checkpoint signal runs")
tap.is_(ctl("requeue", q2, "alice").status, 202, "it is requeued")
tap.ok(wait_for(lambda: "ckpt-0" in logs(q2)), "it has its checkpoint signal")
d.restart()
tap.ok(wait_for(lambda: job(q2).get("attempt") == 1 and job(q2).get("state") == "Running"),
       "sluiced restarted while it stopped: it still comes back as attempt 1", job(q2))
ev = [(e["type"], e.get("from"), e.get("to")) for e in events(q2)]
tap.ok(("requeue", "Preempted", "Pending") in ev and not any(t == "Failed" for _, _, t in ev),
       "through the requeue, not a failure", ev)
tap.is_(d.request("DELETE", "/v1/jobs/%d" % q2).status, 202, "it is cancelled")

r = d.request("POST", "/v1/jobs/%d/requeue?hold=maybe" % q, None)
tap.ok(r.status == 400 and r.error_field() == "hold", "hold=maybe: 400 naming hold", r)

# --- update: maxRuntime -------------------------------------------------------------------
def patch(jid, body, user=None):
    return d.request("PATCH", "/v1/jobs/%d" % jid, json.dumps(body) if body is not None else
                     None, ctype="application/json", token=TOK[user] if user else d.token)


def max_runtime(jid):
    return job(jid).get("spec", {}).get("spec", {}).get("maxRuntime")


hog = submit("hog2", 4)
tap.ok(hog and wait_state(hog, "Running"), "a job of every GPU runs again")
st, body = d.json_req("POST", "/v1/jobs", job_doc(
    "up", command=("sleep", "300"), resources={"gpus": 1, "cpus": 0.1, "memory": "64Mi"},
    maxRuntime="2h"), token=TOK["alice"])
u = body.get("id") if st == 201 else None
tap.ok(u and wait_state(u, "Pending"), "a job with maxRuntime 2h waits behind it")
rc, out, err = cli("update", str(u), "--max-runtime", "90m", token=TOK["alice"])
tap.ok(rc == 0 and "updated %d (Pending): maxRuntime" % u in out,
       "sluice update --max-runtime 90m: alice lowers it while pending", out, err)
tap.is_(max_runtime(u), "1h30m", "the stored spec says 1h30m")
r = patch(u, {"maxRuntime": "3h"}, "alice")
tap.ok(r.status == 409 and r.error_field() == "maxRuntime" and "only an admin" in
       r.body.decode(), "alice may not raise it (409, maxRuntime)", r)
tap.is_(max_runtime(u), "1h30m", "nothing changed")
r = patch(u, {"maxRuntime": "3h"})
tap.ok(r.status == 200, "an admin may raise it", r)
tap.is_(max_runtime(u), "3h", "to 3h")
# (jobupdate.t has the updates of class, queue and GPUs)
for body_, field in (({"priorityClass": 5}, "priorityClass"),
                     ({"queue": "nlp"}, "queue"), ({"resources": {"cpus": 2}}, "resources.cpus"),
                     ({"color": "red"}, "color"), ({"maxRuntime": "soon"}, "maxRuntime"),
                     ({"maxRuntime": 0}, "maxRuntime"), ({}, None)):
    r = patch(u, body_, "alice")
    tap.ok(r.status == 400 and r.error_field() == field, "%s: 400 naming %s" % (
        json.dumps(body_), field), r)
r = patch(u, {"maxRuntime": "1h"}, "bob")
tap.ok(r.status == 403 and r.error_field() == "user", "bob may not update alice's job", r)
r = patch(u, {"maxRuntime": "1h"}, "nick")
tap.is_(r.status, 404, "nick of another team does not see it")
tap.is_(max_runtime(u), "3h", "none of that changed anything")
ev = [(e["type"], e.get("message") or "") for e in events(u)]
tap.ok(("update", "maxRuntime 2h -> 1h30m by alice") in ev and
       ("update", "maxRuntime 1h30m -> 3h by admin") in ev,
       "each change is an event with the old and new value", ev)
d.restart()
tap.is_(max_runtime(u), "3h", "the change outlives a restart")
tap.is_(d.request("DELETE", "/v1/jobs/%d" % hog).status, 202, "the GPUs free")
tap.ok(wait_state(u, "Running"), "the job runs")
rc, out, err = cli("update", str(u), "--max-runtime", "1s", token=TOK["alice"])
tap.ok(rc == 0 and "updated %d (Running)" % u in out,
       "alice lowers the running job's maxRuntime to 1s", out, err)
tap.ok(wait_state(u, "Timeout", 30), "the running job's timer follows: it ends Timeout")
tap.ok("maxRuntime of 1s" in (job(u).get("message") or ""), "at the new limit",
       job(u).get("message"))
r = patch(u, {"maxRuntime": "1h"}, "alice")
tap.ok(r.status == 409 and "already finished" in r.body.decode(),
       "a finished job cannot be updated", r)
st, au = d.json_req("GET", "/v1/audit?action=job.update")
recs = au.get("records", []) if st == 200 else []
tap.ok(any(x["actor"] == "alice" and x["outcome"] == "ok" and
           x.get("details", {}).get("maxRuntime") == {"old": "2h", "new": "1h30m"}
           for x in recs), "the audit log has alice's update with old and new", recs)
tap.ok(any(x["actor"] == "bob" and x["outcome"] != "ok" for x in recs),
       "and bob's refused one", recs)

# --- the audit log -------------------------------------------------------------------------
st, au = d.json_req("GET", "/v1/audit?action=job.hold")
recs = au.get("records", []) if st == 200 else []
tap.ok(any(x["actor"] == "alice" and x["object"] == "job:%d" % a and x["outcome"] == "ok"
           for x in recs), "alice's hold is in the audit log", recs)
tap.ok(any(x["actor"] == "bob" and x["object"] == "job:%d" % c and x["outcome"] != "ok"
           for x in recs), "bob's refused hold too", recs)
st, au = d.json_req("GET", "/v1/audit?action=job.release")
tap.ok(st == 200 and any(x["actor"] == "tina" or x["object"] == "job:%d" % c
                         for x in au.get("records", [])), "the releases too", au)

st, au = d.json_req("GET", "/v1/audit?action=job.requeue")
recs = au.get("records", []) if st == 200 else []
tap.ok(any(x["actor"] == "alice" and x["object"] == "job:%d" % q and x["outcome"] == "ok"
           for x in recs) and any(x["actor"] == "bob" and x["outcome"] != "ok" for x in recs),
       "the requeues are in the audit log, the refused one too", recs)

tap.done_testing(d)
